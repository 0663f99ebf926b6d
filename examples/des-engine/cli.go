package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/deterministic-exec/des/claudecode"
	"github.com/deterministic-exec/des/internal/buildinfo"
	"github.com/deterministic-exec/des/internal/hooklog"
	"github.com/deterministic-exec/des/internal/program"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/internal/gitexec"
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
		{"report", "[--from T] [--to T] [--format html|json] [--out FILE]  one HTML page of the recorded history: timeline, gates, codes", runReport},
		{"replay", "[--policies DIR] [--bundle FILE] [--json]  decide the recorded decisions again; list those that change", runReplay},
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
		exe, err := program.CommandPath(e.lookupEnv)
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
	return writeJSON(e, "settings", claudecode.SettingsFor(shellQuote(path), root, cfg, e.lookupEnv, path))
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
	eng, err := des.New(ctx, des.WithRoot(root), des.WithEnv(e.lookupEnv), des.WithLogger(hooklog.New(e.stderr, e.lookupEnv)))
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
