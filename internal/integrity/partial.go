package integrity

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/deterministic-exec/des/internal/gitexec"
)

// The part of a Claude Code settings file des compares is all of it but
// what Claude Code itself rewrites while a tool call runs: the allow rules
// (a user's "Yes, and don't ask again" lands in permissions.allow during
// the call) and the model. Everything else can switch des or the sandbox
// off, or run code outside the sandbox: hooks (des's and any other),
// disableAllHooks, the sandbox block, the deny and ask rules and the
// permission mode, statusLine, env (PATH, XDG_STATE_HOME, DES_*: Claude
// Code applies it to the session, hooks included), apiKeyHelper and the
// other helper commands, MCP server approvals.
var claudeOwnKeys = map[string]bool{"model": true}

// claudeOwnPermissions are the keys of "permissions" Claude Code rewrites.
var claudeOwnPermissions = map[string]bool{"allow": true}

// claudeParts splits a settings file into what Claude Code may rewrite
// (own) and what des guards (guarded); ok is false when data is not a JSON
// object (absent counts as an empty object).
func claudeParts(data []byte) (own, guarded map[string]json.RawMessage, ok bool) {
	doc := map[string]json.RawMessage{}
	if data != nil {
		if err := json.Unmarshal(data, &doc); err != nil || doc == nil {
			return nil, nil, false
		}
	}
	own, guarded = map[string]json.RawMessage{}, map[string]json.RawMessage{}
	for k, v := range doc {
		if claudeOwnKeys[k] {
			own[k] = v
			continue
		}
		if k == "permissions" {
			var perms map[string]json.RawMessage
			if json.Unmarshal(v, &perms) == nil && perms != nil {
				ownPerms, rest := map[string]json.RawMessage{}, map[string]json.RawMessage{}
				for pk, pv := range perms {
					if claudeOwnPermissions[pk] {
						ownPerms[pk] = pv
					} else {
						rest[pk] = pv
					}
				}
				if len(ownPerms) > 0 {
					own[k], _ = json.Marshal(ownPerms)
				}
				if len(rest) > 0 {
					guarded[k], _ = json.Marshal(rest)
				}
				continue
			}
		}
		guarded[k] = v
	}
	return own, guarded, true
}

// canonical is v with object keys sorted and no insignificant space, so
// that a reformatted file compares equal.
func canonical(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(compact(raw))
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func compact(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// claudeView is the compared part as canonical JSON; a file that is not a
// JSON object has none (Claude Code would not run hooks from it either).
func claudeView(data []byte) string {
	_, guarded, ok := claudeParts(data)
	if !ok || len(guarded) == 0 {
		return ""
	}
	out, _ := json.Marshal(guarded)
	return canonical(out)
}

// mergeClaude returns good's guarded part with current's own part: what
// the call changed in the guarded keys is put back, and Claude Code's own
// rewrites (allow rules, the model) are kept. ok is false when current is
// not a JSON object.
func mergeClaude(current, good []byte) ([]byte, bool) {
	own, _, ok := claudeParts(current)
	if !ok {
		return nil, false
	}
	_, doc, gok := claudeParts(good)
	if !gok {
		doc = map[string]json.RawMessage{}
	}
	for k, v := range own {
		if k != "permissions" {
			doc[k] = v
			continue
		}
		perms := map[string]json.RawMessage{}
		_ = json.Unmarshal(doc[k], &perms)
		var mine map[string]json.RawMessage
		_ = json.Unmarshal(v, &mine)
		for pk, pv := range mine {
			perms[pk] = pv
		}
		doc[k], _ = json.Marshal(perms)
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, false
	}
	return append(out, '\n'), true
}

// ClaudeSettingsChanged reports whether after changes the part of a Claude
// Code settings file des guards (all but the allow rules and the model)
// from before; nil is an absent file.
func ClaudeSettingsChanged(before, after []byte) bool {
	return claudeView(before) != claudeView(after)
}

// HooksPathChanged reports whether after changes core.hooksPath or the
// include directives of a git config file from before.
func HooksPathChanged(before, after []byte) bool { return gitView(before) != gitView(after) }

// gitConf is the compared part of git's config file: core.hooksPath and
// the include directives (an included file could set it).
type gitConf struct {
	HooksPath  []string `json:"hooks_path,omitempty"`
	Includes   []string `json:"includes,omitempty"`
	Unreadable bool     `json:"unreadable,omitempty"` // git refuses the file
}

// gitReadBudget bounds the git command that reads one config file.
const gitReadBudget = 5 * time.Second

// parseGit reads the compared part of a git config file as git reads it
// (gitexec.FileConfig): a byte order mark, quoting, continuation lines
// and name case are git's rules, so no spelling git honours is missed.
// Content git refuses is marked so: git then runs no command in the
// repository, and becoming readable again is a change.
func parseGit(data []byte) gitConf {
	var g gitConf
	if len(data) == 0 {
		return g
	}
	ctx, cancel := context.WithTimeout(context.Background(), gitReadBudget)
	defer cancel()
	entries, err := gitexec.FileConfig(ctx, data)
	if err != nil {
		return gitConf{Unreadable: true}
	}
	for _, e := range entries {
		name := e[0]
		switch {
		case name == "core.hookspath":
			g.HooksPath = append(g.HooksPath, e[1])
		case name == "include.path",
			strings.HasPrefix(name, "includeif.") && strings.HasSuffix(name, ".path"):
			g.Includes = append(g.Includes, name+" "+e[1])
		}
	}
	return g
}

func gitView(data []byte) string { return parseGit(data).view() }

// view is the compared form of g: "" when nothing in it matters.
func (g gitConf) view() string {
	if len(g.HooksPath) == 0 && len(g.Includes) == 0 && !g.Unreadable {
		return ""
	}
	out, _ := json.Marshal(g)
	return string(out)
}

// hooksPathOf is the core.hooksPath a view records (git takes the last).
func hooksPathOf(view string) string {
	var g gitConf
	if json.Unmarshal([]byte(view), &g) != nil || len(g.HooksPath) == 0 {
		return ""
	}
	return g.HooksPath[len(g.HooksPath)-1]
}

// includesOf are the include directives a view records, as
// "include.path VALUE" or "includeif.COND.path VALUE".
func includesOf(view string) []string {
	var g gitConf
	if json.Unmarshal([]byte(view), &g) != nil {
		return nil
	}
	return g.Includes
}

// mergeGit returns current with core.hooksPath as good has it, written by
// git itself. When the include directives differ, or git refuses either
// file, ok is false and the whole good copy is restored: an include can
// hide any setting.
func mergeGit(current, good []byte) ([]byte, bool) {
	cur, want := parseGit(current), parseGit(good)
	if cur.Unreadable || want.Unreadable || !slices.Equal(cur.Includes, want.Includes) {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), gitReadBudget)
	defer cancel()
	out, err := gitexec.FileReplaceAll(ctx, current, "core.hooksPath", want.HooksPath)
	if err != nil {
		return nil, false
	}
	return out, true
}

// CommandRunsExecutable reports whether a hook command from Claude Code's
// settings runs the program exe: its first shell word, unquoted, with
// $CLAUDE_PROJECT_DIR (root) and a leading ~ (home, the hook's; "" this
// process's) expanded, names the same file. It is the usual IsDESCommand.
func CommandRunsExecutable(command, exe, root, home string) bool {
	word := firstWord(command)
	if word == "" {
		return false
	}
	for _, v := range []string{"${CLAUDE_PROJECT_DIR}", "$CLAUDE_PROJECT_DIR"} {
		word = strings.ReplaceAll(word, v, root)
	}
	if strings.HasPrefix(word, "~/") {
		if home == "" {
			home, _ = os.UserHomeDir()
		}
		if home != "" {
			word = filepath.Join(home, word[2:])
		}
	}
	if word == exe {
		return true
	}
	a, err1 := os.Stat(word)
	b, err2 := os.Stat(exe)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// firstWord is the first word of a POSIX shell command, quotes removed;
// "" when it cannot be read simply.
func firstWord(s string) string {
	s = strings.TrimLeft(s, " \t")
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; ch {
		case ' ', '\t', '\n', ';', '&', '|':
			return b.String()
		case '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return ""
			}
			b.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case '"':
			j := strings.IndexByte(s[i+1:], '"')
			if j < 0 {
				return ""
			}
			b.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case '\\':
			if i+1 < len(s) {
				b.WriteByte(s[i+1])
				i++
			}
		default:
			b.WriteByte(ch)
		}
	}
	return b.String()
}
