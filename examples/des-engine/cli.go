package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	pathpkg "path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/deterministic-exec/des/internal/buildinfo"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/internal/gitexec"
	"github.com/deterministic-exec/des/internal/glob"
	"github.com/deterministic-exec/des/internal/statedir"
	builtin "github.com/deterministic-exec/des/rego"
	"github.com/open-policy-agent/opa/v1/version"
)

// Exit statuses of the subcommands. Hook mode always exits 0.
const (
	exitOK    = 0
	exitUsage = 2 // bad flags or arguments, or the command could not run
)

// gitTimeout bounds `git rev-parse`: finding the root must not hang a CLI.
const gitTimeout = 5 * time.Second

// env is what a subcommand gets from the process.
type env struct {
	stdout, stderr io.Writer
	lookupEnv      func(string) (string, bool)
}

type command struct {
	name     string
	synopsis string
	run      func(ctx context.Context, e env, args []string) int
}

// commands lists the subcommands, in the order usage shows them.
func commands() []command {
	return []command{
		{"settings", "[--write] [--command PATH]  install DES in .claude/settings.json (--write), or print the part to merge", runSettings},
		{"doctor", "[--json]           whether Claude Code will run DES for this project, and why not", runDoctor},
		{"policies", "[--json]           list the codes the loaded policies can yield", runPolicies},
		{"test", "[DIR...]           run the team's Rego tests with the built-in policies loaded", runTest},
		{"stale", "[--resolve FILE]    list stale work, or reset it in FILE", runStale},
		{"audit", "verify [--dir DIR] [--adopt]  check the audit trail's hash chain", runAudit},
		{"precommit", "[FILE...|--install]  Gate 3: judge step files, or the staged ones", runPrecommit},
		{"integrity", "accept|check  take DES's files as they are now, or restore them", runIntegrity},
		{"escalations", "[--all] [--json]  list the open escalations of the phase workflow guards; approve [PHASE] to go on past escalated tests", runEscalations},
		{"evidence", "[--json]           the test runs des saw, per phase, step and task graph phase", runEvidence},
		{"status", "[--json]           subagents running, the task graph's waves, the orchestration settings", runStatus},
		{"statusline", "                  one line for Claude Code's status line (JSON on stdin)", runStatusLine},
		{"logs", "push               send the decision logs not yet sent to decision_log_url", runLogs},
		{"serve", "[--idle DURATION]    run the warm decision server in the foreground", runServe},
		{"bundle", "pull [--json]      fetch and verify the organisation's policy bundles", runBundle},
		{"version", "[--json]            the versions of des, Go and OPA, where decisions are made, the bundles", runVersion},
	}
}

// usage lists the subcommands in two columns: a synopsis is the arguments,
// two spaces or more, then what the command does.
func usage(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "usage: des-hook\t\tClaude Code command hook: one JSON event on stdin")
	for _, c := range commands() {
		args, what, _ := strings.Cut(c.synopsis, "  ")
		fmt.Fprintf(tw, "       des-hook %s\t%s\t%s\n", c.name, strings.TrimSpace(args), strings.TrimSpace(what))
	}
	tw.Flush()
}

// runCommand dispatches a subcommand.
func runCommand(ctx context.Context, args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	e := env{stdout: stdout, stderr: stderr, lookupEnv: lookupEnv}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return exitOK
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, e, args[1:])
		}
	}
	fmt.Fprintf(stderr, "des-hook: unknown subcommand %q\n", args[0])
	usage(stderr)
	return exitUsage
}

// newFlagSet returns a flag set whose errors print its usage to stderr.
func newFlagSet(e env, name, synopsis, doc string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: des-hook %s %s\n\n%s\n", name, synopsis, doc)
		hasFlags := false
		fs.VisitAll(func(*flag.Flag) { hasFlags = true })
		if hasFlags {
			fmt.Fprintln(e.stderr, "\nflags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parseFlags parses args, allowing at most maxArgs arguments (any number
// when negative); done means the command must return code now.
// -h is a request, not an error, so it exits 0.
func parseFlags(fs *flag.FlagSet, args []string, maxArgs int) (code int, done bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, true
		}
		return exitUsage, true // the flag package printed the error and usage
	}
	if maxArgs >= 0 && fs.NArg() > maxArgs { // maxArgs < 0: any number
		fmt.Fprintf(fs.Output(), "des-hook %s: unexpected arguments: %s\n", fs.Name(), strings.Join(fs.Args(), " "))
		fs.Usage()
		return exitUsage, true
	}
	return 0, false
}

// Matchers and timeouts (seconds) of the hooks block. The matchers are the
// tools defaultRoutes handles, so Claude Code does not start the hook for
// tools DES ignores. Matchers are regular expressions: "mcp__.*" is every
// MCP tool.
const (
	preToolUseMatcher         = "Agent|Task|Skill|Write|Edit|MultiEdit|Bash|NotebookEdit|mcp__.*"
	postToolUseMatcher        = "Agent|Task|Write|Edit|MultiEdit|Bash|NotebookEdit|AskUserQuestion|mcp__.*"
	postToolUseFailureMatcher = "Bash|NotebookEdit|mcp__.*"
	toolHookTimeout           = 30
	stopHookTimeout           = 60 // Gate 2 reads the step file, the audit trail and git
)

type hookCommand struct {
	Type    string `json:"type"`
	Command string `json:"command"`
	Timeout int    `json:"timeout,omitempty"`
	// OnFailure "block" makes Claude Code block the call when the hook
	// cannot start, times out or exits with an unexpected status, instead
	// of letting it through (Claude Code 2.1.295).
	OnFailure string `json:"onFailure,omitempty"`
}

type hookMatcher struct {
	Matcher string        `json:"matcher,omitempty"`
	Hooks   []hookCommand `json:"hooks"`
}

// settingsBlock is the part of .claude/settings.json that installs DES; a
// struct keeps the keys in the order a reader expects.
type settingsBlock struct {
	Hooks struct {
		PreToolUse         []hookMatcher `json:"PreToolUse"`
		PostToolUse        []hookMatcher `json:"PostToolUse"`
		PostToolUseFailure []hookMatcher `json:"PostToolUseFailure"`
		SubagentStop       []hookMatcher `json:"SubagentStop"`
		SubagentStart      []hookMatcher `json:"SubagentStart"`
		UserPromptSubmit   []hookMatcher `json:"UserPromptSubmit"`
		SessionStart       []hookMatcher `json:"SessionStart"`
	} `json:"hooks"`
	// StatusLine runs `des-hook statusline` for Claude Code's status line: the
	// subagents running and the task graph's wave.
	StatusLine struct {
		Type    string `json:"type"`
		Command string `json:"command"`
	} `json:"statusLine"`
	Permissions struct {
		Deny []string `json:"deny"`
	} `json:"permissions"`
	Sandbox struct {
		Enabled bool `json:"enabled"`
		// AllowUnsandboxedCommands false: Claude Code ignores a Bash
		// call's dangerouslyDisableSandbox. Its default lets the agent run
		// a command outside the sandbox, past denyWrite, where it could
		// write the state directory (the audit attestations, the run
		// records) or run des-hook stale --resolve as des.
		AllowUnsandboxedCommands bool `json:"allowUnsandboxedCommands"`
		Filesystem               struct {
			DenyWrite []string `json:"denyWrite"`
		} `json:"filesystem"`
	} `json:"sandbox"`
}

// protections are the paths Claude Code's own protections cover, written
// as .claude/settings.json reads them: "/x" from the project root, "//x"
// from the file system root.
type protections struct {
	denyEdit  []string // permissions.deny: an Edit(...) rule covers every built-in file-editing tool
	denyWrite []string // sandbox.filesystem.denyWrite: what sandboxed Bash may not write
}

// settingsPath writes a path, relative to the project root or absolute,
// the way Claude Code's settings read it.
func settingsPath(p string) string {
	p = filepath.ToSlash(filepath.Clean(p))
	if strings.HasPrefix(p, "/") {
		return "/" + p
	}
	return "/" + strings.TrimPrefix(p, "./")
}

// protectedPaths lists what Claude Code is told to protect: for the file
// tools, DES's protected files (the workflow documents are written with
// those tools, through the write guard); for sandboxed Bash, those and the
// workflow-state documents, but not the audit directory and the run
// records, which a `git commit` from sandboxed Bash appends to through the
// pre-commit hook (they are tamper-evident, and checked after each call),
// nor the audit witnesses, which that append moves forward.
//
// The binaries are protected too (the hook and what it runs beside it):
// replacing the hook switches DES off as surely as deleting its entries.
func protectedPaths(cfg des.Config, root, stateDir, witnessDir string, binaries ...string) protections {
	var p protections
	tree := func(d string) string { return settingsPath(d) + "/**" }
	p.denyEdit = append(p.denyEdit, settingsPath(des.ConfigFile))
	for _, d := range cfg.PolicyDirs {
		p.denyEdit = append(p.denyEdit, tree(d))
	}
	p.denyEdit = append(p.denyEdit, tree(des.RunsDir), tree(des.SessionsDir), tree(cfg.AuditDir), tree(".git/hooks"), tree(stateDir), tree(witnessDir),
		tree(des.BundleDir), tree(des.DecisionsDir))
	// The kept bundles are written by des-hook bundle pull and the warm
	// server, neither sandboxed; the decision logs, like the audit trail,
	// by the pre-commit hook a sandboxed git commit runs.
	p.denyWrite = append(p.denyWrite, sandboxPath(des.BundleDir))
	// The keys of bundle_public_key and bundle_jwks decide which
	// organisation bundles verify; opa_ca_file which server answers for
	// opa_url.
	for _, k := range []string{cfg.BundlePublicKey, cfg.BundleJWKS, cfg.OPACAFile} {
		if k != "" && !strings.HasPrefix(k, "https://") && !strings.HasPrefix(k, "http://") {
			p.denyEdit = append(p.denyEdit, settingsPath(k))
			p.denyWrite = append(p.denyWrite, sandboxPath(k))
		}
	}
	// The phase requirement files decide what the phase gates require.
	for _, f := range cfg.PhaseRequirementsFiles {
		p.denyEdit = append(p.denyEdit, settingsPath(f))
		p.denyWrite = append(p.denyWrite, sandboxPath(f))
	}

	p.denyWrite = append(p.denyWrite, sandboxPath(des.ConfigFile))
	for _, d := range cfg.PolicyDirs {
		p.denyWrite = append(p.denyWrite, sandboxPath(d))
	}
	// The subagent registry is written only by the hook, which the sandbox
	// does not confine; nothing a sandboxed command runs needs to write it.
	p.denyWrite = append(p.denyWrite, sandboxPath(des.SessionsDir), sandboxPath(".git/hooks"), sandboxPath(".claude/settings.json"),
		sandboxPath(".claude/settings.local.json"), sandboxPath(stateDir))
	// The workflow states, the step files and the task graph: Gate 3
	// commits what a step file says once no Gate 2 failure stands, and a
	// background job sandboxed Bash started may rewrite one while no call
	// runs, which the effect check takes as the user's. They are written
	// with the file tools, through the write guard, and by des, neither
	// sandboxed; Bash may not write them anyway. The sandbox takes no glob
	// (Claude Code 2.1.328 on Linux skips `**/steps/*.json` and
	// `.isdlc/projects/*/state.json`), so a glob is written as what it
	// matches now: each file, and for step files the directory that holds
	// them, which covers a step file added there later (a steps directory
	// made later is covered once settings --write runs again, and by the
	// effect check meanwhile).
	guarded := append(append(slices.Clone(cfg.GuardedStateFiles), cfg.GuardedStepFiles...), cfg.TaskGraphFile, gate.StateSelectorFile)
	var globs []string
	for _, g := range guarded {
		if strings.ContainsAny(g, "*?[") {
			globs = append(globs, g)
			continue
		}
		p.denyWrite = append(p.denyWrite, sandboxPath(g))
	}
	docs := gate.DocumentWrite{Root: root, StepGlobs: cfg.GuardedStepFiles, StateGlobs: cfg.GuardedStateFiles}
	isDoc := func(rel string) bool {
		kind, _ := docs.Kind(filepath.Join(root, filepath.FromSlash(rel)))
		return kind != ""
	}
	files, dirs := globMatches(root, globs, cfg.GuardedStepFiles, isDoc)
	// A directory of step files goes in whole only when it holds nothing
	// but step files: denying it must keep honest work from nothing else.
	var whole []string
	for _, d := range dirs {
		if onlyDocuments(root, d, isDoc) {
			whole = append(whole, d)
		}
	}
	// Absolute: what the globs match is this checkout's now, so
	// settings --write keeps it in the local file, not the team's.
	for _, f := range append(whole, files...) {
		p.denyWrite = append(p.denyWrite, sandboxPath(filepath.Join(root, filepath.FromSlash(f))))
	}
	// A path that does not exist when a command starts is kept from being
	// created; with its parent missing too, the sandbox keeps that whole
	// directory from being created (tested on Linux), which honest work may
	// need (.isdlc in a project before iSDLC's setup, .git/hooks where .git
	// is a worktree's file). Such a path is left out, except below des's
	// and Claude Code's own directories.
	p.denyWrite = slices.DeleteFunc(p.denyWrite, func(e string) bool { return !sandboxCreatable(root, e) })
	for _, b := range withCompanions(binaries) {
		p.denyEdit = append(p.denyEdit, settingsPath(b))
		p.denyWrite = append(p.denyWrite, sandboxPath(b))
	}
	return p
}

// sandboxPath writes a path as Claude Code's sandbox reads denyWrite on
// Linux (tested with the real client, 2.1.328): "./x" from the project
// root, whatever directory a command cds to; "//x" from the file system
// root. A bare "/x" is taken as absolute there (not project-relative, as
// in permission rules), so des's "/.des/config.json" protected nothing.
func sandboxPath(p string) string {
	p = filepath.ToSlash(filepath.Clean(p))
	if strings.HasPrefix(p, "/") {
		return "/" + p
	}
	return "./" + strings.TrimPrefix(p, "./")
}

// sandboxCreatable reports whether a denyWrite entry may stand: it
// exists, its parent directory does, it is below .des or .claude, or it is
// outside the project (or root is unknown).
func sandboxCreatable(root, entry string) bool {
	if root == "" {
		return true
	}
	var abs string
	switch {
	case strings.HasPrefix(entry, "//"):
		abs = filepath.FromSlash(entry[1:])
	case strings.HasPrefix(entry, "./"):
		rel := strings.TrimPrefix(entry, "./")
		if top, _, _ := strings.Cut(rel, "/"); top == ".des" || top == ".claude" {
			return true
		}
		abs = filepath.Join(root, filepath.FromSlash(rel))
	default:
		return true
	}
	if r, err := filepath.Rel(root, abs); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return true
	}
	if _, err := os.Lstat(abs); err == nil {
		return true
	}
	fi, err := os.Stat(filepath.Dir(abs))
	return err == nil && fi.IsDir()
}

// onlyDocuments reports whether the directory dir (relative to root)
// holds guarded documents and nothing else: no other file, directory or
// link.
func onlyDocuments(root, dir string, isDoc func(rel string) bool) bool {
	entries, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(dir)))
	if err != nil || len(entries) == 0 {
		return false
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !isDoc(pathpkg.Join(dir, e.Name())) {
			return false
		}
	}
	return true
}

// maxSandboxWalk bounds the walk for the files the guarded globs match.
const maxSandboxWalk = 50000

// globMatches walks root (boundedly, without .git, node_modules or
// vendor) for the files the globs match that are guarded documents (a step
// glob also matches files that are not step files: the write guard's rule
// decides), root-relative and sorted, and the directories holding a match
// of a step glob.
func globMatches(root string, globs, stepGlobs []string, guarded func(rel string) bool) (files, dirs []string) {
	if root == "" || len(globs) == 0 {
		return nil, nil
	}
	seenDir := map[string]bool{}
	n := 0
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if n++; n > maxSandboxWalk {
			return filepath.SkipAll
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", "vendor":
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return nil
		}
		rel = filepath.ToSlash(rel)
		for _, g := range globs {
			if !glob.Match(g, rel) || !guarded(rel) {
				continue
			}
			files = append(files, rel)
			if slices.Contains(stepGlobs, g) && !seenDir[pathpkg.Dir(rel)] {
				seenDir[pathpkg.Dir(rel)] = true
				dirs = append(dirs, pathpkg.Dir(rel))
			}
			break
		}
		return nil
	})
	sort.Strings(files)
	sort.Strings(dirs)
	return files, dirs
}

// companionName is des-engine's file name (plus the client's extension,
// ".exe" on Windows), as the client looks for it beside itself.
const companionName = "des-engine"

// withCompanions is the absolute binaries with, for each, the des-engine
// its client runs: the file beside it, links resolved, as the client finds
// it. Replacing des-engine switches des off as surely as replacing
// des-hook. Each path once, in order.
func withCompanions(binaries []string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if filepath.IsAbs(p) && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, b := range binaries {
		if !filepath.IsAbs(b) {
			continue
		}
		add(b)
		real := b
		if r, err := filepath.EvalSymlinks(b); err == nil {
			real = r
			add(r)
		}
		add(filepath.Join(filepath.Dir(real), companionName+filepath.Ext(real)))
	}
	return out
}

func hooksSettings(command string, prot protections) settingsBlock {
	var s settingsBlock
	hook := func(timeout int, onFailure string) []hookCommand {
		return []hookCommand{{Type: "command", Command: command, Timeout: timeout, OnFailure: onFailure}}
	}
	// Only PreToolUse blocks on a failed hook: it is where DES decides
	// before a call. A failed check after a call is caught up by the next
	// call's check, which compares with the same baseline.
	s.Hooks.PreToolUse = []hookMatcher{{Matcher: preToolUseMatcher, Hooks: hook(toolHookTimeout, "block")}}
	s.Hooks.PostToolUse = []hookMatcher{{Matcher: postToolUseMatcher, Hooks: hook(toolHookTimeout, "")}}
	s.Hooks.PostToolUseFailure = []hookMatcher{{Matcher: postToolUseFailureMatcher, Hooks: hook(toolHookTimeout, "")}}
	s.Hooks.SubagentStop = []hookMatcher{{Hooks: hook(stopHookTimeout, "")}}
	// The subagent registry: a start, and each user prompt (a new turn).
	s.Hooks.SubagentStart = []hookMatcher{{Hooks: hook(toolHookTimeout, "")}}
	s.Hooks.UserPromptSubmit = []hookMatcher{{Hooks: hook(toolHookTimeout, "")}}
	// The sessions des sees start, for des-hook doctor.
	s.Hooks.SessionStart = []hookMatcher{{Hooks: hook(toolHookTimeout, "")}}
	s.StatusLine.Type, s.StatusLine.Command = "command", command+" statusline"
	for _, p := range prot.denyEdit {
		s.Permissions.Deny = append(s.Permissions.Deny, "Edit("+p+")")
	}
	s.Sandbox.Enabled, s.Sandbox.AllowUnsandboxedCommands = true, false
	s.Sandbox.Filesystem.DenyWrite = prot.denyWrite
	return s
}

// settingsNeeds go to stderr: which Claude Code version each part needs.
const settingsNeeds = `  hooks PreToolUse, PostToolUse, SubagentStop   any Claude Code with command hooks
  hooks PostToolUseFailure                      a Claude Code that sends the event (2.1 and later)
  hooks SessionStart                            any Claude Code with hooks; des-hook doctor reads when
                                                des last saw a session start
  hooks SubagentStart, UserPromptSubmit         a Claude Code that sends the events; without them the
                                                subagent registry and the count of direct calls per
                                                turn are not kept
  statusLine                                    any Claude Code with a command status line
  matcher "mcp__.*"                             every MCP tool (matchers are regular expressions)
  onFailure "block" on PreToolUse               Claude Code 2.1.295 or later; older versions ignore it,
                                                and a hook that fails then lets the call through
  permissions.deny Edit(...)                    any Claude Code with permission rules; an Edit rule
                                                covers Write, Edit, MultiEdit and NotebookEdit
  sandbox.enabled, sandbox.filesystem.denyWrite a Claude Code with the sandboxed Bash tool, on macOS,
                                                Linux or WSL2 (Linux: bubblewrap and socat installed)
`

func runSettings(ctx context.Context, e env, args []string) int {
	fs := newFlagSet(e, "settings", "[--write] [--command PATH]",
		"Prints the part of .claude/settings.json that installs this binary as DES's Claude Code\n"+
			"hook and turns on Claude Code's own protections of DES's files: permission deny rules\n"+
			"for the file tools and the sandbox's denyWrite list. With --write, merges it into the\n"+
			"project's settings instead: what every machine shares into .claude/settings.json, this\n"+
			"machine's paths into .claude/settings.local.json, the user's entries kept; a second run\n"+
			"changes nothing. Which Claude Code version each part needs is printed on stderr.")
	command := fs.String("command", "", "path of the hook binary, quoted for the shell (default: this executable; with --write, des-hook when PATH finds this executable under that name)")
	write := fs.Bool("write", false, "merge into .claude/settings.json and .claude/settings.local.json instead of printing")
	if code, done := parseFlags(fs, args, 0); done {
		return code
	}
	if *write {
		root, err := filepath.Abs(commandRoot(ctx, e.lookupEnv))
		if err != nil {
			fmt.Fprintf(e.stderr, "des-hook settings --write: %v\n", err)
			return exitUsage
		}
		cfg, err := des.LoadConfig(root, e.lookupEnv)
		if err != nil {
			fmt.Fprintf(e.stderr, "des-hook settings --write: %v; fix the settings first: the protected paths come from them\n", err)
			return exitUsage
		}
		fmt.Fprint(e.stderr, "des-hook settings: what each part needs:\n"+settingsNeeds)
		w := &settingsWriter{e: e, root: root, cfg: cfg, checks: settingsWriteChecks}
		return w.run(ctx, *command)
	}
	path := *command
	if path == "" {
		exe, err := commandPath(e.lookupEnv)
		if err != nil {
			fmt.Fprintf(e.stderr, "des-hook settings: cannot find this executable (%v); pass --command\n", err)
			return exitUsage
		}
		// Not symlink-resolved on purpose: a link such as ~/bin/hook keeps
		// working across upgrades.
		path = exe
		warnIfTransient(e.stderr, e.lookupEnv, "settings", exe)
	}
	root := commandRoot(ctx, e.lookupEnv)
	cfg, err := des.LoadConfig(root, e.lookupEnv)
	if err != nil {
		fmt.Fprintf(e.stderr, "des-hook settings: %v; the protected paths are those of the default settings\n", err)
		cfg = des.DefaultConfig()
	}
	fmt.Fprint(e.stderr, "des-hook settings: merge this object into .claude/settings.json, or run des-hook settings --write. What each part needs:\n"+settingsNeeds)
	return writeJSON(e, "settings", hooksSettings(shellQuote(path), protectedPaths(cfg, root, statedir.For(root, e.lookupEnv), des.AuditWitnessDir(e.lookupEnv), path)))
}

// shellSafe matches words a POSIX shell reads literally.
var shellSafe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`) })

// shellQuote quotes s as one word for a POSIX shell, which is how Claude
// Code runs hook commands (Git Bash on Windows). Paths with spaces, such as
// "C:\Users\me\CLAUDE CODE\hook.exe", are common.
func shellQuote(s string) string {
	if shellSafe().MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func runPolicies(ctx context.Context, e env, args []string) int {
	fs := newFlagSet(e, "policies", "[--json]",
		"Lists every code the loaded policies (built-in and the team's) can yield, with its\n"+
			"severity, Rego package and title. The project root is CLAUDE_PROJECT_DIR, else the\n"+
			"git top level, else the current directory. With opa_url set, says first (on stderr\n"+
			"with --json) that the OPA server decides and which local policy directories do not.")
	asJSON := fs.Bool("json", false, "print the catalogue as a JSON array")
	if code, done := parseFlags(fs, args, 0); done {
		return code
	}
	root := commandRoot(ctx, e.lookupEnv)
	eng, err := des.New(ctx, des.WithRoot(root), des.WithEnv(e.lookupEnv), des.WithLogger(newLogger(e.stderr, e.lookupEnv)))
	if err != nil {
		fmt.Fprintf(e.stderr, "des-hook policies: %v\n", err)
		return exitUsage
	}
	cat, err := eng.Catalogue(ctx)
	if err != nil {
		fmt.Fprintf(e.stderr, "des-hook policies: %v\n", err)
		return exitUsage
	}
	// With opa_url the catalogue is of the local policies, not the
	// server's: say so, on stderr for JSON, whose reader wants the array.
	if cfg := eng.Config(); cfg.OPAURL != "" {
		note := fmt.Sprintf("decisions: %s (the OPA server of opa_url decides every gate, with the policies loaded into it, not necessarily those listed here)", cfg.OPAURL)
		if dirs := notDeciding(cfg.OPAURL, des.PolicyDirsNotDeciding(root, cfg)); dirs != "" {
			note += "\n" + dirs
		}
		w := e.stdout
		if *asJSON {
			w = e.stderr
		}
		fmt.Fprintln(w, note)
	}
	if *asJSON {
		if cat == nil {
			return writeJSON(e, "policies", []struct{}{})
		}
		return writeJSON(e, "policies", cat)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CODE\tSEVERITY\tPACKAGE\tTITLE")
	for _, r := range cat {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Code, r.Severity, r.Package, r.Title)
	}
	if err := tw.Flush(); err != nil {
		fmt.Fprintf(e.stderr, "des-hook policies: %v\n", err)
		return exitUsage
	}
	return exitOK
}

// commandRoot is the project root of a subcommand, absolute:
// CLAUDE_PROJECT_DIR, else the git top level, else the current directory.
func commandRoot(ctx context.Context, lookupEnv func(string) (string, bool)) string {
	if root, ok := lookupEnv("CLAUDE_PROJECT_DIR"); ok && root != "" {
		if abs, err := filepath.Abs(root); err == nil {
			return abs
		}
		return root
	}
	if root, ok := gitTopLevel(ctx); ok {
		return root
	}
	if wd, err := os.Getwd(); err == nil {
		return wd
	}
	return "."
}

// gitTopLevel asks git for the work tree's top level. No shell is involved,
// and a missing git or a directory outside a repository is simply "no".
func gitTopLevel(ctx context.Context) (string, bool) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	out, err := new(gitexec.Runner).Run(ctx, ".", nil, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", false
	}
	root := strings.TrimSpace(string(out))
	if root == "" {
		return "", false
	}
	return filepath.FromSlash(root), true
}

func runVersion(ctx context.Context, e env, args []string) int {
	fs := newFlagSet(e, "version", "[--json]", "Prints the versions of des, Go and OPA this binary was built with, the revision\n"+
		"of its built-in policies (an OPA server deciding for it must run the same), where the\n"+
		"project's decisions are made (\"embedded\", or the opa_url) and the organisation's\n"+
		"bundles in use (URL, revision, when fetched, the key that verified it).")
	asJSON := fs.Bool("json", false, "print JSON")
	if code, done := parseFlags(fs, args, 0); done {
		return code
	}
	desVersion, goVersion := buildinfo.Version(), buildinfo.GoVersion()
	root := commandRoot(ctx, e.lookupEnv)
	cfg, cfgErr := des.LoadConfig(root, e.lookupEnv)
	var ps *policyStatus
	if cfgErr == nil {
		p := policyStatusOf(ctx, root, cfg, e.lookupEnv)
		ps = &p
	}
	if *asJSON {
		v := struct {
			Des string `json:"des"`
			Go  string `json:"go"`
			OPA string `json:"opa"`
			// Policies is the revision of the built-in policies: an OPA
			// server deciding for this des must run the same (opa_url).
			Policies string `json:"policies"`
			*policyStatus
			SettingsError string `json:"settings_error,omitempty"`
		}{Des: desVersion, Go: goVersion, OPA: version.Version, Policies: builtin.Revision(), policyStatus: ps}
		if cfgErr != nil {
			v.SettingsError = cfgErr.Error()
		}
		return writeJSON(e, "version", v)
	}
	fmt.Fprintf(e.stdout, "des %s\ngo %s\nopa %s\npolicies %s\n", desVersion, goVersion, version.Version, builtin.Revision())
	if cfgErr != nil {
		// The versions stand; where decisions are made depends on settings
		// that do not load.
		fmt.Fprintf(e.stdout, "decisions: unknown (%v)\n", cfgErr)
		return exitOK
	}
	if err := printPolicyStatus(e.stdout, *ps); err != nil {
		fmt.Fprintf(e.stderr, "des-hook version: %v\n", err)
		return exitUsage
	}
	return exitOK
}

func writeJSON(e env, cmd string, v any) int {
	enc := json.NewEncoder(e.stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(e.stderr, "des-hook %s: %v\n", cmd, err)
		return exitUsage
	}
	return exitOK
}
