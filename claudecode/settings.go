package claudecode

import (
	"io/fs"
	"os"
	pathpkg "path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/internal/glob"
	"github.com/deterministic-exec/des/internal/program"
	"github.com/deterministic-exec/des/internal/statedir"
)

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

// HookCommand is one command hook of a Settings block.
type HookCommand struct {
	Type    string `json:"type"`
	Command string `json:"command"`
	Timeout int    `json:"timeout,omitempty"`
	// OnFailure "block" makes Claude Code block the call when the hook
	// cannot start, times out or exits with an unexpected status, instead
	// of letting it through (Claude Code 2.1.295).
	OnFailure string `json:"onFailure,omitempty"`
}

// HookMatcher is a matcher of a Settings block and the hooks it runs.
type HookMatcher struct {
	Matcher string        `json:"matcher,omitempty"`
	Hooks   []HookCommand `json:"hooks"`
}

// Settings is the part of .claude/settings.json that installs des: the
// hooks of every event the Handler decides, the status line, and what
// Claude Code's own protections keep the agent from writing (permissions
// and the sandbox). A struct keeps the keys in the order a reader expects.
type Settings struct {
	Hooks struct {
		PreToolUse         []HookMatcher `json:"PreToolUse"`
		PostToolUse        []HookMatcher `json:"PostToolUse"`
		PostToolUseFailure []HookMatcher `json:"PostToolUseFailure"`
		SubagentStop       []HookMatcher `json:"SubagentStop"`
		SubagentStart      []HookMatcher `json:"SubagentStart"`
		UserPromptSubmit   []HookMatcher `json:"UserPromptSubmit"`
		SessionStart       []HookMatcher `json:"SessionStart"`
		PostToolBatch      []HookMatcher `json:"PostToolBatch"`
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
	for _, b := range program.WithCompanions(binaries) {
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

// SettingsFor returns the Settings that install des for the project at
// root with its settings cfg: every hook runs command (a shell command
// line: quote it), and the Edit rules and sandbox entries protect des's
// files as the project's settings name them, the state directory and
// audit witnesses as lookupEnv places them, and the programs given (with
// the des-engine beside each).
func SettingsFor(command, root string, cfg des.Config, lookupEnv func(string) (string, bool), programs ...string) Settings {
	return hooksSettings(command, protectedPaths(cfg, root, statedir.For(root, lookupEnv), statedir.AuditWitness(lookupEnv), programs...))
}

func hooksSettings(command string, prot protections) Settings {
	var s Settings
	hook := func(timeout int, onFailure string) []HookCommand {
		return []HookCommand{{Type: "command", Command: command, Timeout: timeout, OnFailure: onFailure}}
	}
	// Only PreToolUse blocks on a failed hook: it is where DES decides
	// before a call. A failed check after a call is caught up by the next
	// call's check, which compares with the same baseline.
	s.Hooks.PreToolUse = []HookMatcher{{Matcher: preToolUseMatcher, Hooks: hook(toolHookTimeout, "block")}}
	s.Hooks.PostToolUse = []HookMatcher{{Matcher: postToolUseMatcher, Hooks: hook(toolHookTimeout, "")}}
	s.Hooks.PostToolUseFailure = []HookMatcher{{Matcher: postToolUseFailureMatcher, Hooks: hook(toolHookTimeout, "")}}
	s.Hooks.SubagentStop = []HookMatcher{{Hooks: hook(stopHookTimeout, "")}}
	// The subagent registry: a start, and each user prompt (a new turn).
	s.Hooks.SubagentStart = []HookMatcher{{Hooks: hook(toolHookTimeout, "")}}
	s.Hooks.UserPromptSubmit = []HookMatcher{{Hooks: hook(toolHookTimeout, "")}}
	// The sessions des sees start, for des-hook doctor.
	s.Hooks.SessionStart = []HookMatcher{{Hooks: hook(toolHookTimeout, "")}}
	// The end of each batch of tool calls: a call the user declined has
	// no PostToolUse, only this.
	s.Hooks.PostToolBatch = []HookMatcher{{Hooks: hook(toolHookTimeout, "")}}
	s.StatusLine.Type, s.StatusLine.Command = "command", command+" statusline"
	for _, p := range prot.denyEdit {
		s.Permissions.Deny = append(s.Permissions.Deny, "Edit("+p+")")
	}
	s.Sandbox.Enabled, s.Sandbox.AllowUnsandboxedCommands = true, false
	s.Sandbox.Filesystem.DenyWrite = prot.denyWrite
	return s
}
