package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/deterministic-exec/des/claudecode"
	"github.com/deterministic-exec/des/internal/ccsettings"
	"github.com/deterministic-exec/des/internal/program"
)

// `des-hook doctor`: whether Claude Code will run des for this project, from
// every settings layer Claude Code reads (internal/ccsettings), the binaries
// des's entries name, the sandbox and the client's version, and whether des
// has seen a session start. A team under a managed policy that switches
// hooks off learns it is unprotected instead of believing it is protected.

// managedDirEnv replaces the platform's managed settings directory, for
// tests and installs that keep it elsewhere. doctor only reads.
const managedDirEnv = "DES_CLAUDE_MANAGED_DIR"

// onFailureVersion is the first Claude Code that honours onFailure.
var onFailureVersion = [3]int{2, 1, 295}

// Finding severities.
const (
	sevError   = "error"   // Claude Code will not run des, or not where it must
	sevWarning = "warning" // des runs, with a protection missing
	sevOK      = "ok"
)

// finding is one thing doctor checked.
type finding struct {
	Severity string `json:"severity"`
	Check    string `json:"check"`
	Message  string `json:"message"`
	File     string `json:"file,omitempty"`
	Fix      string `json:"fix,omitempty"`
}

// doctorReport is what doctor found.
type doctorReport struct {
	Root     string    `json:"root"`
	Running  bool      `json:"running"`
	Verdict  string    `json:"verdict"`
	Findings []finding `json:"findings"`
	Layers   []struct {
		Scope  string `json:"scope"`
		Path   string `json:"path"`
		Exists bool   `json:"exists"`
		Error  string `json:"error,omitempty"`
	} `json:"layers"`
	ClaudeVersion string                  `json:"claude_version,omitempty"`
	LastSession   *claudecode.SessionSeen `json:"last_session,omitempty"`
}

// The events des installs, and the tools PreToolUse and PostToolUse must
// match for des to be in charge of them.
var (
	doctorEvents = []string{"PreToolUse", "PostToolUse", "PostToolUseFailure", "SubagentStop", "SubagentStart", "UserPromptSubmit", "SessionStart", "PostToolBatch"}
	doctorTools  = map[string][]string{
		"PreToolUse":         {"Agent", "Task", "Write", "Edit", "MultiEdit", "Bash", "NotebookEdit", "mcp__server__tool"},
		"PostToolUse":        {"Agent", "Task", "Write", "Edit", "MultiEdit", "Bash", "NotebookEdit", "AskUserQuestion", "mcp__server__tool"},
		"PostToolUseFailure": {"Bash", "NotebookEdit", "mcp__server__tool"},
	}
)

func runDoctor(ctx context.Context, e env, args []string) int {
	fs := newFlagSet(e, "doctor", "[--json]",
		"Says whether Claude Code will run DES for this project: every settings layer Claude Code\n"+
			"reads (managed, user, project, local), DES's hook entries and the binaries they name,\n"+
			"the sandbox, the Claude Code version, and the last session DES saw start.\n"+
			"Exit 0 when Claude Code runs DES, 1 when it will not, 2 when doctor could not run.")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if code, done := parseFlags(fs, args, 0); done {
		return code
	}
	rep := diagnose(ctx, commandRoot(ctx, e.lookupEnv), e.lookupEnv)
	if *asJSON {
		if code := writeJSON(e, "doctor", rep); code != exitOK {
			return code
		}
	} else {
		printDoctor(e, rep)
	}
	if !rep.Running {
		return 1
	}
	return exitOK
}

func printDoctor(e env, rep doctorReport) {
	fmt.Fprintln(e.stdout, rep.Verdict)
	for _, f := range rep.Findings {
		fmt.Fprintf(e.stdout, "%-7s %s: %s\n", f.Severity, f.Check, f.Message)
		if f.File != "" {
			fmt.Fprintf(e.stdout, "        file: %s\n", f.File)
		}
		if f.Fix != "" {
			fmt.Fprintf(e.stdout, "        fix: %s\n", f.Fix)
		}
	}
	fmt.Fprintln(e.stdout, "settings read:")
	for _, l := range rep.Layers {
		state := "absent"
		switch {
		case l.Error != "":
			state = "unusable: " + l.Error
		case l.Exists:
			state = "read"
		}
		fmt.Fprintf(e.stdout, "  %-8s %s (%s)\n", l.Scope, l.Path, state)
	}
}

// diagnose runs every check for the project at root.
func diagnose(ctx context.Context, root string, lookupEnv func(string) (string, bool)) doctorReport {
	managed, _ := lookupEnv(managedDirEnv)
	layers := ccsettings.Load(ccsettings.Options{Root: root, LookupEnv: lookupEnv, ManagedDir: managed})
	rep := doctorReport{Root: root}
	for _, l := range layers {
		li := struct {
			Scope  string `json:"scope"`
			Path   string `json:"path"`
			Exists bool   `json:"exists"`
			Error  string `json:"error,omitempty"`
		}{Scope: l.Scope, Path: l.Path, Exists: l.Exists}
		if l.Err != nil {
			li.Error = l.Err.Error()
			rep.Findings = append(rep.Findings, finding{Severity: sevWarning, Check: "settings file", File: l.Path,
				Message: fmt.Sprintf("Claude Code skips this %s settings file: %v", l.Scope, l.Err),
				Fix:     "Fix the file's JSON; `des-hook settings --write` rewrites des's part of the project files."})
		}
		rep.Layers = append(rep.Layers, li)
	}
	add := func(f finding) { rep.Findings = append(rep.Findings, f) }

	// Switches that stop every hook, or every hook but the managed ones.
	if l := ccsettings.True(layers, "disableAllHooks"); l != nil {
		f := finding{Severity: sevError, Check: "hooks disabled", File: l.Path,
			Message: fmt.Sprintf("disableAllHooks is true in the %s settings: Claude Code runs no command hook, so des is not running", l.Scope)}
		if l.Scope == ccsettings.ScopeManaged {
			f.Message = "Policy disableAllHooks (managed settings): Claude Code runs no configured command hook on this machine, so des is not running"
			f.Fix = "An administrator must remove disableAllHooks from the managed settings, or install des's hooks as managed hooks (see the README, \"Under a managed policy\"); until then run des through the Agent SDK's callback hooks."
		} else {
			f.Fix = "Remove disableAllHooks from " + l.Path + "."
		}
		add(f)
	}
	hooks := ccsettings.Hooks(layers)
	var mine []ccsettings.Hook
	for _, h := range hooks {
		if isDESHookCommand(h.Command, root, lookupEnv) {
			mine = append(mine, h)
		}
	}
	if l := ccsettings.True(layers, "allowManagedHooksOnly"); l != nil && l.Scope == ccsettings.ScopeManaged {
		managedDES := false
		for _, h := range mine {
			managedDES = managedDES || h.Layer.Scope == ccsettings.ScopeManaged
		}
		if !managedDES {
			add(finding{Severity: sevError, Check: "managed hooks only", File: l.Path,
				Message: "allowManagedHooksOnly is true in the managed settings: Claude Code runs only the managed settings' hooks, and des's are not among them",
				Fix:     "An administrator adds des's hook entries (`des-hook settings` prints them) to the managed settings."})
		} else {
			mine = onlyManaged(mine)
		}
	}

	// des's entries, per event.
	byEvent := map[string][]ccsettings.Hook{}
	for _, h := range mine {
		byEvent[h.Event] = append(byEvent[h.Event], h)
	}
	if len(mine) == 0 {
		add(finding{Severity: sevError, Check: "hook entries", Message: "no settings file has a hook that runs des-hook: Claude Code does not run des",
			Fix: "Run `des-hook settings --write` in the project."})
	}
	for _, ev := range doctorEvents {
		hs := byEvent[ev]
		if len(hs) == 0 {
			if len(mine) > 0 {
				sev := sevWarning
				if ev == "PreToolUse" {
					sev = sevError
				}
				add(finding{Severity: sev, Check: "hook entries", Message: "no des hook for " + ev + eventRole(ev),
					Fix: "Run `des-hook settings --write` to install des's entries again."})
			}
			continue
		}
		for _, tool := range doctorTools[ev] {
			if !slicesAnyMatch(hs, tool) {
				sev := sevWarning
				if ev == "PreToolUse" && tool != "mcp__server__tool" {
					sev = sevError
				}
				add(finding{Severity: sev, Check: "hook entries", File: hs[0].Layer.Path,
					Message: fmt.Sprintf("des's %s hook does not match the %s tool: des is not asked about it", ev, strings.TrimSuffix(tool, "__server__tool")),
					Fix:     "Run `des-hook settings --write` to install des's matchers again."})
			}
		}
		if ev == "PreToolUse" && !anyOnFailureBlock(hs) {
			add(finding{Severity: sevWarning, Check: "onFailure", File: hs[0].Layer.Path,
				Message: "des's PreToolUse hook has no \"onFailure\": \"block\": a hook that cannot start or times out lets the call through",
				Fix:     "Run `des-hook settings --write`."})
		}
		for _, h := range hs {
			if f, ok := binaryFinding(h, root, lookupEnv); ok {
				add(f)
			}
		}
	}

	// The client's version, where it can be asked.
	rep.ClaudeVersion = claudeVersion(ctx, lookupEnv)
	if rep.ClaudeVersion != "" && len(mine) > 0 && anyOnFailureBlock(mine) && versionBelow(rep.ClaudeVersion, onFailureVersion) {
		add(finding{Severity: sevWarning, Check: "Claude Code version",
			Message: fmt.Sprintf("Claude Code %s ignores onFailure (2.1.295 and later honour it): a des hook that fails lets the call through", rep.ClaudeVersion),
			Fix:     "Update Claude Code."})
	}

	// The sandbox.
	if v, l := ccsettings.Lookup(layers, "sandbox", "enabled"); v != true {
		f := finding{Severity: sevWarning, Check: "sandbox", Message: "sandboxed Bash is not enabled: des's denyWrite entries do nothing, and only des's hooks stand between Bash and des's files",
			Fix: "Run `des-hook settings --write` (it sets sandbox.enabled)."}
		if l != nil {
			f.File = l.Path
		}
		add(f)
	} else if runtime.GOOS == "linux" {
		var missing []string
		for _, tool := range []string{"bwrap", "socat"} {
			if program.LookPath(tool, lookupEnv) == "" {
				missing = append(missing, tool)
			}
		}
		if len(missing) > 0 {
			add(finding{Severity: sevWarning, Check: "sandbox", File: l.Path,
				Message: "the sandbox is enabled but cannot run here: " + strings.Join(missing, " and ") + " not found on PATH",
				Fix:     "Install them (Debian, Ubuntu: apt-get install bubblewrap socat)."})
		}
	}
	if v, l := ccsettings.Lookup(layers, "sandbox", "allowUnsandboxedCommands"); v != false {
		f := finding{Severity: sevWarning, Check: "sandbox", Message: "sandbox.allowUnsandboxedCommands is not false: the model may retry a Bash call outside the sandbox",
			Fix: "Run `des-hook settings --write`."}
		if l != nil {
			f.File = l.Path
		}
		add(f)
	}

	// What des has seen.
	if s, ok := claudecode.LastSession(root, lookupEnv); ok {
		rep.LastSession = &s
		source := s.Source
		if strings.TrimSpace(source) == "" {
			source = "startup"
		}
		add(finding{Severity: sevOK, Check: "sessions", Message: fmt.Sprintf("des last saw a Claude Code session start at %s (%s)", s.At.Local().Format(time.DateTime), source)})
	} else if len(mine) > 0 {
		since := ""
		for _, h := range mine {
			if fi, err := os.Stat(h.Layer.Path); err == nil {
				since = " (settings written " + fi.ModTime().Local().Format(time.DateTime) + ")"
			}
		}
		add(finding{Severity: sevWarning, Check: "sessions", Message: "settings present, but des has seen no Claude Code session start for this project" + since,
			Fix: "Start Claude Code in the project; if this stays, Claude Code is not running des's hooks (a policy, or another settings file)."})
	}

	rep.Running = true
	for _, f := range rep.Findings {
		if f.Severity == sevError {
			if rep.Running {
				rep.Verdict = "des is NOT running for this project: " + f.Message
			}
			rep.Running = false
		}
	}
	if rep.Running {
		rep.Verdict = "des is running for this project: Claude Code runs its hooks"
	}
	return rep
}

func eventRole(ev string) string {
	switch ev {
	case "PreToolUse":
		return ": Gate 1, the write guard and Gate 3 for an agent's git commit never run"
	case "PostToolUse", "PostToolUseFailure":
		return ": the effect check and Gate 2's report to the orchestrator do not run"
	case "SubagentStop":
		return ": Gate 2 does not run"
	case "SessionStart":
		return ": des does not record the sessions it sees (des-hook doctor cannot tell whether it runs)"
	case "PostToolBatch":
		return ": a call you decline counts as running for its timeout and a minute, and your edits of des's files meanwhile are undone"
	}
	return ""
}

func onlyManaged(hs []ccsettings.Hook) []ccsettings.Hook {
	var out []ccsettings.Hook
	for _, h := range hs {
		if h.Layer.Scope == ccsettings.ScopeManaged {
			out = append(out, h)
		}
	}
	return out
}

func anyOnFailureBlock(hs []ccsettings.Hook) bool {
	for _, h := range hs {
		if h.Event == "PreToolUse" && h.OnFailure == "block" {
			return true
		}
	}
	return false
}

// slicesAnyMatch reports whether one of the hooks' matchers matches tool,
// as Claude Code reads a matcher: empty or "*" matches every tool, a plain
// name only itself, anything else is a regular expression.
func slicesAnyMatch(hs []ccsettings.Hook, tool string) bool {
	for _, h := range hs {
		if matcherMatches(h.Matcher, tool) {
			return true
		}
	}
	return false
}

func matcherMatches(matcher, tool string) bool {
	if matcher == "" || matcher == "*" || matcher == tool {
		return true
	}
	re, err := regexp.Compile("^(?:" + matcher + ")$")
	return err == nil && re.MatchString(tool)
}

// isDESHookCommand reports whether a hook command runs des: its program
// is des-hook (or the client built as "hook", or des-engine), wherever it
// is, as Claude Code would find it.
func isDESHookCommand(command, root string, lookupEnv func(string) (string, bool)) bool {
	words, ok := program.ShellWords(command)
	if !ok || len(words) == 0 {
		return false
	}
	switch desProgramName(words[0]) {
	case "des-hook", "des-engine":
		return true
	case "hook":
		return len(words) == 1
	}
	if self, err := program.CommandPath(lookupEnv); err == nil {
		return program.CommandWordRunsExe(words[0], self, root, lookupEnv)
	}
	return false
}

// binaryFinding checks that a des hook's program is there and runs, with
// des-engine beside it; ok is false when all is well.
func binaryFinding(h ccsettings.Hook, root string, lookupEnv func(string) (string, bool)) (finding, bool) {
	words, _ := program.ShellWords(h.Command)
	word := program.ExpandProgramWord(words[0], root, lookupEnv)
	if word == "" {
		word = words[0] // ~/ without a HOME: reported as missing below
	}
	path := word
	if !strings.ContainsAny(word, `/\`) {
		if path = program.LookPath(word, lookupEnv); path == "" {
			return finding{Severity: sevError, Check: "binary", File: h.Layer.Path,
				Message: fmt.Sprintf("des's %s hook runs %q, which is not on PATH here: Claude Code cannot start des", h.Event, word),
				Fix:     "Put des-hook and des-engine in a directory on PATH, or run `des-hook settings --write` from the installed binary."}, true
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
		return finding{Severity: sevError, Check: "binary", File: h.Layer.Path,
			Message: fmt.Sprintf("des's %s hook runs %s, which is missing or not executable: Claude Code cannot start des", h.Event, path),
			Fix:     "Build both binaries there (" + installHint + "), or run `des-hook settings --write` from where they are."}, true
	}
	if desProgramName(path) == "des-engine" {
		return finding{}, false
	}
	real := path
	if r, err := filepath.EvalSymlinks(path); err == nil {
		real = r
	}
	engine := filepath.Join(filepath.Dir(real), program.CompanionName+filepath.Ext(real))
	if _, err := os.Stat(engine); err != nil {
		return finding{Severity: sevError, Check: "binary", File: h.Layer.Path,
			Message: fmt.Sprintf("%s has no des-engine beside it (%s): every PreToolUse call is denied with DES-INTERNAL", path, engine),
			Fix:     "Build des-engine into the same directory: " + installHint}, true
	}
	return finding{}, false
}

// claudeVersion asks the claude on PATH for its version ("" when there is
// none, or it does not answer in a few seconds).
func claudeVersion(ctx context.Context, lookupEnv func(string) (string, bool)) string {
	path := program.LookPath("claude", lookupEnv)
	if path == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	if err != nil {
		return ""
	}
	v, _, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	return v
}

// versionBelow reports whether a dotted version is below min.
func versionBelow(v string, min [3]int) bool {
	parts := strings.SplitN(v, ".", 3)
	for i := 0; i < 3; i++ {
		n := 0
		if i < len(parts) {
			digits := strings.TrimRightFunc(parts[i], func(r rune) bool { return r < '0' || r > '9' })
			n, _ = strconv.Atoi(digits)
		}
		if n != min[i] {
			return n < min[i]
		}
	}
	return false
}

func countSeverity(rep doctorReport, sev string) int {
	n := 0
	for _, f := range rep.Findings {
		if f.Severity == sev {
			n++
		}
	}
	return n
}
