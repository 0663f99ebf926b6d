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

// claudeDES is the part of a Claude Code settings file DES compares: its
// own hook entries, kept with their event and matcher, disableAllHooks,
// which switches every hook off, and the entries of env that DES reads
// (Claude Code applies env to the session, hooks included: DES_DELEGATION_MODE
// there would switch delegation off).
type claudeDES struct {
	Hooks           map[string][]claudeGroup   `json:"hooks,omitempty"`
	DisableAllHooks json.RawMessage            `json:"disableAllHooks,omitempty"`
	Env             map[string]json.RawMessage `json:"env,omitempty"`
}

// desEnv reports whether DES reads the environment variable name: its
// settings (DES_*), the project root and the temporary directory.
func desEnv(name string) bool {
	return strings.HasPrefix(strings.ToUpper(name), "DES_") || name == "CLAUDE_PROJECT_DIR" || name == "TMPDIR"
}

// envOf is a settings document's env object; nil when absent or not an
// object (Claude Code applies none then).
func envOf(doc map[string]json.RawMessage) map[string]json.RawMessage {
	var env map[string]json.RawMessage
	if raw, found := doc["env"]; found && json.Unmarshal(raw, &env) != nil {
		return nil
	}
	return env
}

type claudeGroup struct {
	Matcher json.RawMessage   `json:"matcher,omitempty"`
	Hooks   []json.RawMessage `json:"hooks"`
}

// claudeParts reads a settings file's DES part; ok is false when data is
// not a JSON object (absent counts as an empty object).
func claudeParts(data []byte, isDES func(string) bool) (doc map[string]json.RawMessage, part claudeDES, ok bool) {
	doc = map[string]json.RawMessage{}
	if data != nil {
		if err := json.Unmarshal(data, &doc); err != nil || doc == nil {
			return nil, part, false
		}
	}
	part.DisableAllHooks = doc["disableAllHooks"]
	for k, v := range envOf(doc) {
		if desEnv(k) {
			if part.Env == nil {
				part.Env = map[string]json.RawMessage{}
			}
			part.Env[k] = compact(v)
		}
	}
	var hooks map[string][]struct {
		Matcher json.RawMessage   `json:"matcher"`
		Hooks   []json.RawMessage `json:"hooks"`
	}
	if raw, found := doc["hooks"]; found && json.Unmarshal(raw, &hooks) != nil {
		hooks = nil // a hooks value Claude Code cannot read holds no DES hook
	}
	for event, groups := range hooks {
		for _, g := range groups {
			var mine []json.RawMessage
			for _, h := range g.Hooks {
				var cmd struct {
					Command string `json:"command"`
				}
				if json.Unmarshal(h, &cmd) == nil && cmd.Command != "" && isDES(cmd.Command) {
					mine = append(mine, compact(h))
				}
			}
			if len(mine) > 0 {
				if part.Hooks == nil {
					part.Hooks = map[string][]claudeGroup{}
				}
				part.Hooks[event] = append(part.Hooks[event], claudeGroup{Matcher: compact(g.Matcher), Hooks: mine})
			}
		}
	}
	return doc, part, true
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
func claudeView(data []byte, isDES func(string) bool) string {
	_, part, ok := claudeParts(data, isDES)
	if !ok {
		return ""
	}
	out, _ := json.Marshal(part)
	if string(out) == "{}" {
		return ""
	}
	return string(out)
}

// mergeClaude returns current with its DES part replaced by good's: DES's
// hook entries removed wherever they are and good's added back, and
// disableAllHooks as good has it. Every other key, Claude Code's own, is
// kept. ok is false when current is not a JSON object.
func mergeClaude(current, good []byte, isDES func(string) bool) ([]byte, bool) {
	doc, _, ok := claudeParts(current, isDES)
	if !ok {
		return nil, false
	}
	_, want, gok := claudeParts(good, isDES)
	if !gok {
		want = claudeDES{}
	}
	var hooks map[string][]map[string]json.RawMessage
	if raw, found := doc["hooks"]; found {
		if json.Unmarshal(raw, &hooks) != nil {
			hooks = nil // replaced: it could not hold hooks Claude Code runs
		}
	}
	if hooks == nil {
		hooks = map[string][]map[string]json.RawMessage{}
	}
	for event, groups := range hooks {
		var kept []map[string]json.RawMessage
		for _, g := range groups {
			var hs []json.RawMessage
			if json.Unmarshal(g["hooks"], &hs) != nil {
				kept = append(kept, g)
				continue
			}
			var rest []json.RawMessage
			for _, h := range hs {
				var cmd struct {
					Command string `json:"command"`
				}
				if json.Unmarshal(h, &cmd) == nil && cmd.Command != "" && isDES(cmd.Command) {
					continue
				}
				rest = append(rest, h)
			}
			if len(rest) == 0 && len(hs) > 0 {
				continue // the group held only DES's hooks
			}
			if len(rest) != len(hs) {
				g["hooks"], _ = json.Marshal(rest)
			}
			kept = append(kept, g)
		}
		hooks[event] = kept
	}
	for event, groups := range want.Hooks {
		for _, g := range groups {
			m := map[string]json.RawMessage{}
			if len(g.Matcher) > 0 {
				m["matcher"] = g.Matcher
			}
			m["hooks"], _ = json.Marshal(g.Hooks)
			hooks[event] = append(hooks[event], m)
		}
	}
	for event, groups := range hooks {
		if len(groups) == 0 {
			delete(hooks, event)
		}
	}
	if len(hooks) > 0 {
		doc["hooks"], _ = json.Marshal(hooks)
	} else {
		delete(doc, "hooks")
	}
	if len(want.DisableAllHooks) > 0 {
		doc["disableAllHooks"] = want.DisableAllHooks
	} else {
		delete(doc, "disableAllHooks")
	}
	if _, found := doc["env"]; found || len(want.Env) > 0 {
		env := envOf(doc)
		if env == nil {
			env = map[string]json.RawMessage{}
		}
		for k := range env {
			if desEnv(k) {
				delete(env, k)
			}
		}
		for k, v := range want.Env {
			env[k] = v
		}
		if len(env) > 0 {
			doc["env"], _ = json.Marshal(env)
		} else if _, found := doc["env"]; found && envOf(doc) != nil {
			delete(doc, "env")
		}
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, false
	}
	return append(out, '\n'), true
}

// DESHooksChanged reports whether after changes the part of a Claude Code
// settings file DES guards (its hook entries, disableAllHooks, the env
// entries DES reads) from before;
// nil is an absent file.
func DESHooksChanged(before, after []byte, isDES func(string) bool) bool {
	return claudeView(before, isDES) != claudeView(after, isDES)
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

func gitView(data []byte) string {
	g := parseGit(data)
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
// $CLAUDE_PROJECT_DIR (root) and a leading ~ expanded, names the same file.
// It is the usual IsDESCommand.
func CommandRunsExecutable(command, exe, root string) bool {
	word := firstWord(command)
	if word == "" {
		return false
	}
	for _, v := range []string{"${CLAUDE_PROJECT_DIR}", "$CLAUDE_PROJECT_DIR"} {
		word = strings.ReplaceAll(word, v, root)
	}
	if strings.HasPrefix(word, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
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
