package main

// des-hook settings --write merges des's entries into the project's Claude
// Code settings instead of printing them for a hand merge (a jq '.[0] * .[1]'
// merge replaces arrays, and so dropped users' deny rules and hooks).
//
// How Claude Code layers the two project files, which decides the split
// (its settings and hooks documentation, code.claude.com/docs/en/settings
// and /hooks, as summarised by the pages the search found): the local file
// .claude/settings.local.json overrides the shared .claude/settings.json
// key by key for scalar values (statusLine, sandbox.enabled), while array
// settings such as permissions.deny and the sandbox's path lists
// concatenate across the layers, and the hooks of every layer run. So the
// shared file can hold what every clone agrees on and the local file only
// adds what is this machine's, and des's hook entries must be in exactly
// one of them: Claude Code only drops a hook registered twice when the two
// commands are identical, and des's differ between the files by design.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/claudecode"
	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/internal/program"
	"github.com/deterministic-exec/des/internal/statedir"
)

// The project's Claude Code settings files --write merges into.
const (
	sharedSettingsFile = ".claude/settings.json"       // committed: what every machine shares
	localSettingsFile  = ".claude/settings.local.json" // this machine's: never committed
)

// Where --write keeps its own state, in des's per-user state directory for
// the project (outside it, where an agent working in the project cannot
// write: the directory is in the sandbox's denyWrite and permissions.deny).
const (
	settingsRecordName = "settings-written.json" // what des added, per file
	settingsBackupDir  = "settings-backups"      // each rewritten file as it was
	settingsMaxSize    = 8 << 20
)

// settingsRecord is what earlier --write runs put into the settings files:
// the hook and status line commands, and per file the deny entries des
// added (an entry the user had first is the user's, never recorded).
type settingsRecord struct {
	Commands []string              `json:"commands,omitempty"`
	Files    map[string]fileRecord `json:"files,omitempty"`
}

// settingsWriter is one --write run.
type settingsWriter struct {
	e    env
	root string // absolute
	cfg  des.Config
	// checks runs after a write and returns lines to print: the seam for
	// des-hook doctor's checks (settingsWriteChecks by default).
	checks func(ctx context.Context, root string, e env) []string
}

// settingsWriteChecks is what --write checks after writing: des-hook
// doctor's checks, so that --write reports an installation that still
// would not work (a managed policy, a binary not on PATH, no sandbox).
func settingsWriteChecks(ctx context.Context, root string, e env) []string {
	rep := diagnose(ctx, root, e.lookupEnv)
	out := []string{rep.Verdict}
	for _, f := range rep.Findings {
		if f.Severity == sevOK || f.Check == "sessions" {
			continue // a session is not expected before Claude Code starts
		}
		line := f.Severity + ": " + f.Message
		if f.Fix != "" {
			line += " (fix: " + f.Fix + ")"
		}
		out = append(out, line)
	}
	return out
}

// hookCommandFor decides the hook command --write installs and whether it
// is portable (the shared file) or this machine's (the local file). binaries
// are the absolute paths to protect.
//
//   - --command NAME without a slash, or $CLAUDE_PROJECT_DIR/...: portable,
//     as given.
//   - --command /abs/path: this machine's.
//   - default: "des-hook" when the des-hook found on PATH is this very
//     binary (every machine that installs des puts it on PATH); else
//     "$CLAUDE_PROJECT_DIR"/rel for a binary inside the project; else this
//     binary's absolute path, this machine's.
func hookCommandFor(root, flagCmd, exe string, lookupEnv func(string) (string, bool)) (command string, shared bool, binaries []string) {
	const projectVar = "$CLAUDE_PROJECT_DIR/"
	switch {
	case flagCmd != "" && filepath.IsAbs(flagCmd):
		return shellQuote(flagCmd), false, []string{flagCmd}
	case strings.HasPrefix(flagCmd, projectVar):
		return `"$CLAUDE_PROJECT_DIR"/` + shellQuote(strings.TrimPrefix(flagCmd, projectVar)), true, nil
	case flagCmd != "":
		if p := program.LookPath(flagCmd, lookupEnv); p != "" {
			binaries = []string{p}
		}
		return shellQuote(flagCmd), true, binaries
	}
	if p := program.LookPath("des-hook", lookupEnv); p != "" && program.SameFile(p, exe) {
		binaries = []string{p}
		if p != exe {
			binaries = append(binaries, exe) // a link on PATH: both names
		}
		return "des-hook", true, binaries
	}
	if rel, ok := within(root, exe); ok {
		return `"$CLAUDE_PROJECT_DIR"/` + shellQuote(filepath.ToSlash(rel)), true, []string{exe}
	}
	return shellQuote(exe), false, []string{exe}
}

// within is path relative to root when it lies inside it, links resolved.
func within(root, path string) (string, bool) {
	resolve := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return p
	}
	rel, err := filepath.Rel(resolve(root), resolve(path))
	if err != nil || !filepath.IsLocal(rel) {
		return "", false
	}
	return rel, true
}

// splitDESParts divides des's settings between the files: hooks and the
// status line go with the command (shared when portable); the rules and
// denyWrite entries for absolute paths (the state directory, named by a
// hash of this checkout's path, the audit witnesses, the binaries: all
// this machine's) go to the local file, the project-relative ones and the
// sandbox switches to the shared one.
func splitDESParts(full claudecode.Settings, commandShared bool) (shared, local desPart, err error) {
	hooks, err := parseJSONObject(encodeJSON(full.Hooks))
	if err != nil {
		return shared, local, err
	}
	status := encodeJSON(full.StatusLine)
	if commandShared {
		shared.hooks, shared.statusLine = hooks, status
	} else {
		local.hooks, local.statusLine = hooks, status
	}
	for _, d := range full.Permissions.Deny {
		if strings.Contains(d, "(//") {
			local.deny = append(local.deny, d)
		} else {
			shared.deny = append(shared.deny, d)
		}
	}
	for _, d := range full.Sandbox.Filesystem.DenyWrite {
		if strings.HasPrefix(d, "//") {
			local.denyWrite = append(local.denyWrite, d)
		} else {
			shared.denyWrite = append(shared.denyWrite, d)
		}
	}
	shared.sandbox = true
	return shared, local, nil
}

// errSettingsLink is returned for a link at .claude or at a settings file.
var errSettingsLink = errors.New("is a symbolic link")

// readProjectSettings reads the two settings files without following a
// link at .claude or at either file (a link would make des write a file
// outside the project, or one shared with other projects); a missing file
// is nil.
func readProjectSettings(root string) (map[string][]byte, error) {
	out := map[string][]byte{}
	dir := filepath.Join(root, ".claude")
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return out, nil
	case err != nil:
		return nil, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, fmt.Errorf(".claude %w", errSettingsLink)
	case !fi.IsDir():
		return nil, fmt.Errorf(".claude is not a directory")
	}
	d, err := fileio.OpenDirIn(root, ".claude", false)
	if err != nil {
		return nil, fmt.Errorf(".claude: %w", err)
	}
	defer d.Close()
	for _, rel := range []string{sharedSettingsFile, localSettingsFile} {
		name := filepath.Base(rel)
		fi, err := d.Lstat(name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return nil, fmt.Errorf("%s: %w", rel, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			return nil, fmt.Errorf("%s %w", rel, errSettingsLink)
		case !fi.Mode().IsRegular():
			return nil, fmt.Errorf("%s is not a regular file (%s)", rel, fi.Mode().Type())
		}
		data, err := fileio.ReadBoundedIn(d, name, settingsMaxSize)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", rel, err)
		}
		out[rel] = data
	}
	return out, nil
}

// block is everything des installs, as the printing mode prints it.
func (w *settingsWriter) block(command string, binaries []string) claudecode.Settings {
	return claudecode.SettingsFor(command, w.root, w.cfg, w.e.lookupEnv, binaries...)
}

func (w *settingsWriter) recordPath() string {
	return filepath.Join(statedir.For(w.root, w.e.lookupEnv), settingsRecordName)
}

// loadRecord reads what earlier runs wrote; an unreadable record is
// reported and taken as empty (des then removes nothing it wrote before).
func (w *settingsWriter) loadRecord() settingsRecord {
	var rec settingsRecord
	data, err := fileio.ReadBounded(w.recordPath(), settingsMaxSize)
	if errors.Is(err, fs.ErrNotExist) {
		return rec
	}
	if err == nil {
		err = json.Unmarshal(data, &rec)
	}
	if err != nil {
		fmt.Fprintf(w.e.stderr, "des-hook settings: cannot read what des wrote before (%v); entries it no longer emits stay\n", err)
		return settingsRecord{}
	}
	return rec
}

func (w *settingsWriter) saveRecord(rec settingsRecord) error {
	if _, err := statedir.Ensure(w.root, w.e.lookupEnv); err != nil {
		return err
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return fileio.WriteAtomic(w.recordPath(), append(data, '\n'))
}

// backup keeps a copy of a file about to be rewritten in the state
// directory, and returns its path.
func (w *settingsWriter) backup(rel string, data []byte, now time.Time) (string, error) {
	dir, err := statedir.Ensure(w.root, w.e.lookupEnv)
	if err != nil {
		return "", err
	}
	dir = filepath.Join(dir, settingsBackupDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	p := filepath.Join(dir, filepath.Base(rel)+"."+now.UTC().Format("20060102T150405.000000000Z"))
	if err := fileio.WriteAtomic(p, data); err != nil {
		return "", err
	}
	return p, nil
}

// run merges des's entries into both files and reports what it changed.
func (w *settingsWriter) run(ctx context.Context, flagCmd string) int {
	e := w.e
	fail := func(format string, args ...any) int {
		fmt.Fprintf(e.stderr, "des-hook settings --write: "+format+"\n", args...)
		return exitUsage
	}
	exe, err := program.CommandPath(e.lookupEnv)
	if err != nil && flagCmd == "" {
		return fail("cannot find this executable (%v); pass --command", err)
	}
	if flagCmd == "" {
		warnIfTransient(e.stderr, e.lookupEnv, "settings", exe)
	}
	command, shared, binaries := hookCommandFor(w.root, flagCmd, exe, e.lookupEnv)
	full := w.block(command, binaries)
	sharedPart, localPart, err := splitDESParts(full, shared)
	if err != nil {
		return fail("%v", err)
	}
	files, err := readProjectSettings(w.root)
	if errors.Is(err, errSettingsLink) {
		return fail("%v; des does not write through a link (it would change a file outside the project, or one other projects share). "+
			"Nothing was written. Replace the link with the file itself, or run des-hook settings without --write and merge its output by hand", err)
	}
	if err != nil {
		return fail("%v; nothing was written", err)
	}
	rec := w.loadRecord()
	own := &desOwner{command: command, recorded: rec.Commands, matchers: map[string]string{}}
	own.runsThis = func(word string) bool {
		return exe != "" && program.CommandWordRunsExe(word, exe, w.root, e.lookupEnv)
	}
	for _, m := range sharedPart.hooksOr(localPart).members {
		var gs []claudecode.HookMatcher
		if json.Unmarshal(m.val, &gs) == nil && len(gs) > 0 {
			own.matchers[m.key] = gs[0].Matcher
		}
	}
	var notes []string
	if !shared {
		if cmd := portableDESHook(files[sharedSettingsFile], own); cmd != "" {
			// The team's shared file runs des through a portable command
			// that this binary is not: replacing it would change every
			// colleague's hooks, and adding this machine's own would run
			// des twice. Both files' hooks stay; the user fixes the PATH.
			sharedPart.keepHooks, localPart.hooks, localPart.statusLine = true, nil, nil
			notes = append(notes, fmt.Sprintf("warning: %s runs des as %q, which is not this binary here: des's hooks were left as they are. "+
				"Make %q find this binary on this machine (for des-hook: a link to %s in a directory on PATH) and run des-hook settings --write again",
				sharedSettingsFile, cmd, cmd, exe))
		}
	}
	for _, rel := range []string{sharedSettingsFile, localSettingsFile} {
		doc, err := parseJSONObject(files[rel])
		if err != nil {
			return fail("%s is not a JSON object des can merge into (%v); nothing was written", rel, err)
		}
		if raw, ok, _ := getPath(doc, "statusLine"); ok && !own.isStatus(statusCommand(raw)) {
			own.keepStatus = true
			notes = append(notes, fmt.Sprintf("kept your statusLine in %s (%s); des's status line (%s statusline) is not installed", rel, statusCommand(raw), command))
		}
	}
	parts := map[string]desPart{sharedSettingsFile: sharedPart, localSettingsFile: localPart}
	results := map[string]mergeResult{}
	for _, rel := range []string{sharedSettingsFile, localSettingsFile} {
		r, err := mergeSettings(files[rel], parts[rel], rec.Files[rel], own)
		if err != nil {
			return fail("%s: %v; nothing was written", rel, err)
		}
		results[rel] = r
		notes = append(notes, r.notes...)
	}

	newRec := settingsRecord{Commands: []string{command, command + " statusline"}, Files: map[string]fileRecord{}}
	now := time.Now()
	changed, failed := false, false
	for _, rel := range []string{sharedSettingsFile, localSettingsFile} {
		r := results[rel]
		role := "shared: commit it"
		if rel == localSettingsFile {
			role = "this machine's: never commit it"
		}
		if r.out == nil {
			fmt.Fprintf(e.stdout, "%s (%s): unchanged\n", rel, role)
			newRec.Files[rel] = r.record
			continue
		}
		changed = true
		fmt.Fprintf(e.stdout, "%s (%s):\n", rel, role)
		for _, c := range r.changes {
			fmt.Fprintf(e.stdout, "  %s\n", c)
		}
		old, existed := files[rel]
		if existed {
			p, err := w.backup(rel, old, now)
			if err != nil {
				fmt.Fprintf(e.stderr, "des-hook settings --write: %s: cannot keep a backup (%v); left unchanged\n", rel, err)
				newRec.Files[rel], failed = rec.Files[rel], true
				continue
			}
			fmt.Fprintf(e.stdout, "  backup of the previous file: %s\n", p)
		}
		if err := fileio.WriteAtomicIn(w.root, rel, r.out, true); err != nil {
			fmt.Fprintf(e.stderr, "des-hook settings --write: %s: %v; left unchanged\n", rel, err)
			newRec.Files[rel], failed = rec.Files[rel], true
			continue
		}
		newRec.Files[rel] = r.record
		if !existed && rel == localSettingsFile {
			fmt.Fprintf(e.stdout, "  created: keep it out of git (Claude Code adds it to .gitignore only when it creates the file itself)\n")
		}
	}
	if failed {
		// A file left as it was may still hold the commands des wrote before.
		for _, c := range rec.Commands {
			if !slices.Contains(newRec.Commands, c) {
				newRec.Commands = append(newRec.Commands, c)
			}
		}
	}
	for _, n := range notes {
		if !strings.HasPrefix(n, "warning: ") {
			n = "note: " + n
		}
		fmt.Fprintln(e.stdout, n)
	}
	if !changed {
		fmt.Fprintf(e.stdout, "nothing changed: %s and %s already install des\n", sharedSettingsFile, localSettingsFile)
	}
	if !recordsEqual(rec, newRec) {
		if err := w.saveRecord(newRec); err != nil {
			fmt.Fprintf(e.stderr, "des-hook settings --write: cannot record what des wrote (%v); a later run will not remove entries des stops emitting\n", err)
		}
	}
	if w.checks != nil {
		for _, line := range w.checks(ctx, w.root, e) {
			fmt.Fprintf(e.stdout, "check: %s\n", line)
		}
	}
	if failed {
		return exitUsage
	}
	return exitOK
}

// portableDESHook is the first of des's hook commands in a settings file
// that names des portably (a bare name found on PATH, or a path from
// $CLAUDE_PROJECT_DIR), "" when there is none.
func portableDESHook(data []byte, own *desOwner) string {
	if len(data) == 0 {
		return ""
	}
	var s struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if json.Unmarshal(data, &s) != nil {
		return ""
	}
	for ev, groups := range s.Hooks {
		for _, g := range groups {
			for _, h := range g.Hooks {
				words, ok := program.ShellWords(h.Command)
				if !ok || len(words) != 1 || !own.isHook(ev, g.Matcher, h.Command) {
					continue
				}
				if !strings.ContainsAny(words[0], `/\`) || strings.HasPrefix(words[0], "$CLAUDE_PROJECT_DIR/") || strings.HasPrefix(words[0], "${CLAUDE_PROJECT_DIR}/") {
					return h.Command
				}
			}
		}
	}
	return ""
}

// hooksOr is p's hooks, else o's (des's hooks are in one of the parts).
func (p desPart) hooksOr(o desPart) *jsonObject {
	if p.hooks != nil {
		return p.hooks
	}
	if o.hooks != nil {
		return o.hooks
	}
	return &jsonObject{}
}

func recordsEqual(a, b settingsRecord) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
