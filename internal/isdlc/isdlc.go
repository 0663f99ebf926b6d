// Package isdlc gathers the facts DES's phase workflow guards (README, "Phase workflows")
// judge: which workflow state file applies, what it holds, the task plan, the
// phase requirement tables, which required artifacts exist, and the branch a
// commit would land on. It decides nothing: every allow or deny is Rego's
// (package des.phases), so that a team can read and override it.
//
// Every project file is read through an [os.Root] of the project, bounded,
// and opened only after a stat shows a regular file (opening a FIFO would
// block the hook): a state file, plan or artifact path that leads out of the
// project (.., an absolute path, a symbolic link) is treated as absent or
// unusable, never followed. Nothing here waits on anything but the local file
// system, so no function takes a context.
package isdlc

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/deterministic-exec/des/internal/datadoc"
	"github.com/deterministic-exec/des/internal/fileio"
)

// Bounds of what is read. A state document or a team's requirement file is
// small; 8 MiB is far beyond any real one and still cheap to parse once per
// hook call. A plan lists every task of a feature: 4 MiB is thousands of tasks.
const (
	MaxStateBytes = 8 << 20
	MaxPlanBytes  = 4 << 20
)

// Problems of a state file that exists but cannot be used (the seam's
// "problem" values). Rego denies a call it would judge with DES-INTERNAL.
const (
	ProblemInvalidJSON = "invalid_json"
	ProblemNotObject   = "not_object"
	ProblemUnreadable  = "unreadable"
)

// Options says where to look. Root is the project root; Cwd is the event's
// working directory (absolute, or relative to Root; Windows-style accepted);
// Getenv reads ISDLC_PROJECT (nil: os.LookupEnv). RequirementFiles is the
// setting phase_requirements_files (paths relative to Root); DefaultTables is
// data.des.phases.requirements, the tables used when that setting is empty.
type Options struct {
	Root, Cwd        string
	Getenv           func(string) (string, bool)
	RequirementFiles []string
	DefaultTables    map[string]any
}

// Workflow is what Discover found. Problem is set, and State nil, when the
// state file exists but cannot be used.
type Workflow struct {
	StateFile    string // slash path relative to the root
	Project      string // monorepo project id; "" outside a monorepo
	Problem      string // "", or one of the Problem constants
	Err          error  // why, with Problem
	State        map[string]any
	Plan         Plan
	Requirements map[string]any  // the team's tables; nil unless RequirementFiles is set
	Artifacts    map[string]bool // artifact path of the effective tables → exists
}

// Discover finds the workflow state ("Which state" in the README's phase workflow section) under
// opts.Root and gathers the facts around it. The state file is the first
// that exists of .des/state.json, .isdlc/projects/<id>/state.json (with
// .isdlc/monorepo.json: id from ISDLC_PROJECT, else the project whose path
// is the longest prefix of Cwd, else default_project) and .isdlc/state.json;
// in a monorepo, Project is that id whichever file was used, since the plan
// and artifact locations depend on it.
//
// It returns nil, nil when there is no state file. An unusable state file is
// no error but a Workflow with Problem set, since the guards deny only the
// calls they would judge; so is an unusable monorepo.json (StateFile then
// names it), as is an id that is not one path segment. An error is a root
// that cannot be opened or a broken setting (a requirement file that cannot
// be read or parsed, wrapping [ErrRequirementFile]): the caller reports it.
func Discover(opts Options) (*Workflow, error) {
	root, opts, err := openRoot(opts)
	if err != nil {
		return nil, err
	}
	defer root.Close()

	sel := selectState(root, opts)
	if sel.stateFile == "" {
		return nil, nil
	}
	w := &Workflow{StateFile: sel.stateFile, Project: sel.project}
	if sel.problem != "" {
		w.Problem, w.Err = sel.problem, sel.err
	} else {
		w.State, w.Problem, w.Err = readState(root, sel.stateFile)
	}
	w.Plan = findPlan(root, sel.project)

	tables := opts.DefaultTables
	if len(opts.RequirementFiles) > 0 {
		if w.Requirements, err = loadRequirements(root, opts.RequirementFiles, opts.DefaultTables); err != nil {
			return nil, err
		}
		tables = w.Requirements
	}
	w.Artifacts = artifacts(root, tables, artifactFolder(w.State), sel.project, sel.projectPath)
	return w, nil
}

// Locate is Discover's first step alone: the state file that applies
// (slash path relative to the root), or "" when there is none. It reads
// .isdlc/monorepo.json when present but parses no state, plan or table: the
// cheap check before paying for the policies. A state file Discover would
// report with a Problem counts as found.
func Locate(opts Options) (string, error) {
	root, opts, err := openRoot(opts)
	if err != nil {
		return "", err
	}
	defer root.Close()
	return selectState(root, opts).stateFile, nil
}

// HasState reports whether a workflow state file applies to a call made in
// cwd (as the event gives it; "" = root) under root: the cheap check a
// caller makes before building an Engine for a call only the phase guards
// could judge. It reads no policy and no setting. A state file that exists
// but cannot be used counts: the guards judge it (DES-INTERNAL on the calls
// they would judge).
func HasState(root, cwd string, getenv func(string) (string, bool)) bool {
	if cwd == "" {
		cwd = root
	}
	file, err := Locate(Options{Root: root, Cwd: cwd, Getenv: getenv})
	return err == nil && file != ""
}

// openRoot opens opts.Root (made absolute) and fills the defaults of opts.
func openRoot(opts Options) (*os.Root, Options, error) {
	if opts.Getenv == nil {
		opts.Getenv = os.LookupEnv
	}
	if abs, err := filepath.Abs(opts.Root); err == nil {
		opts.Root = abs
	}
	root, err := os.OpenRoot(opts.Root)
	if err != nil {
		return nil, opts, fmt.Errorf("isdlc: project root: %w", err)
	}
	return root, opts, nil
}

// BranchName is active_workflow.git_branch.name, the workflow branch whose
// existence the branch guard needs ("" when unset).
func (w *Workflow) BranchName() string {
	aw, _ := w.State["active_workflow"].(map[string]any)
	gb, _ := aw["git_branch"].(map[string]any)
	name, _ := gb["name"].(string)
	return name
}

// Facts is the seam's `workflow` input object.
func (w *Workflow) Facts() map[string]any {
	f := map[string]any{
		"state_file": w.StateFile,
		"project":    w.Project,
		"plan":       w.Plan.facts(),
	}
	if w.Problem != "" {
		f["problem"] = w.Problem
		msg := w.Problem
		if w.Err != nil {
			msg = w.Err.Error()
		}
		f["error"] = msg
	} else {
		f["state"] = w.State
	}
	if w.Requirements != nil {
		f["requirements"] = w.Requirements
	}
	arts := make(map[string]any, len(w.Artifacts))
	for p, ok := range w.Artifacts {
		arts[p] = ok
	}
	f["artifacts"] = arts
	return f
}

// readState reads and parses a state file; a problem names the file and the
// fix, since the deny message shows it to the user.
func readState(root *os.Root, name string) (map[string]any, string, error) {
	data, err := fileio.ReadBoundedIn(root, name, MaxStateBytes)
	if err != nil {
		return nil, ProblemUnreadable, fmt.Errorf("workflow state %s cannot be read: %w", name, err)
	}
	v, err := datadoc.Decode(data)
	if err != nil {
		return nil, ProblemInvalidJSON, fmt.Errorf("workflow state %s is not valid JSON: %w; fix the file or restore it from git", name, err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, ProblemNotObject, fmt.Errorf("workflow state %s is not a JSON object (it is %s); it must be {…}", name, datadoc.Kind(v))
	}
	return obj, "", nil
}

// exists reports whether name (slash path relative to the root) is present,
// links not followed: a link that leads out of the project still "exists" so
// that a state file pointing elsewhere is reported as unreadable rather than
// silently skipped in favour of the next candidate.
func exists(root *os.Root, name string) bool {
	_, err := root.Lstat(filepath.FromSlash(name))
	return err == nil || !(errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR))
}
