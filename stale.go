package des

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/internal/statedir"
	"github.com/deterministic-exec/des/statemachine"
)

// stepsDirName is the directory name DES looks for step files in
// (docs/feature/<project>/steps by convention).
const stepsDirName = "steps"

// maxWalkDepth bounds the search for steps directories in a large tree.
const maxWalkDepth = 8

// StaleWork lists the phases left IN_PROGRESS for longer than the stale
// threshold in every steps directory of the project. File paths are
// relative to the project root.
func (e *Engine) StaleWork(ctx context.Context) ([]statemachine.StaleWork, error) {
	dirs, err := e.stepsDirs(ctx)
	if err != nil {
		return nil, err
	}
	threshold := time.Duration(e.cfg.StaleThresholdMinutes) * time.Minute
	var all []statemachine.StaleWork
	for _, dir := range dirs {
		work, err := statemachine.ScanStale(dir, e.now(), threshold)
		if err != nil {
			return nil, fmt.Errorf("des: scan %s: %w", dir, err)
		}
		for _, w := range work {
			w.File = e.rel(w.File)
			all = append(all, w)
		}
	}
	return all, nil
}

// stepsDirs finds the directories named "steps" under the root, skipping
// hidden directories, vendor and node_modules.
func (e *Engine) stepsDirs(ctx context.Context) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(e.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == e.root {
				return err
			}
			return nil // an unreadable corner of the tree holds no steps DES can use
		}
		if !d.IsDir() {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		name := d.Name()
		if path != e.root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "vendor") {
			return filepath.SkipDir
		}
		if rel, _ := filepath.Rel(e.root, path); strings.Count(rel, string(filepath.Separator)) >= maxWalkDepth {
			return filepath.SkipDir
		}
		if name == stepsDirName {
			dirs = append(dirs, path)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("des: find steps directories under %s: %w", e.root, err)
	}
	return dirs, nil
}

func (e *Engine) rel(path string) string {
	if r, err := filepath.Rel(e.root, path); err == nil && !strings.HasPrefix(r, "..") {
		return filepath.ToSlash(r)
	}
	return path
}

// Resolution is what ResolveStale did to a step file.
type Resolution struct {
	StepFile string   // relative to the project root
	Phases   []string // phases reset to NOT_EXECUTED
	From     string   // task status before
	To       string   // task status after (PARTIAL), "" when nothing was resolved
}

// ErrNothingToResolve is returned by ResolveStale when the step has no stale
// phase and its task is not FAILED.
var ErrNothingToResolve = errors.New("nothing to resolve")

// ResolveStale resets the abandoned work of one step file so that it can be
// started again: the phases IN_PROGRESS for longer than the stale threshold,
// or, when the task is FAILED, every unfinished phase (IN_PROGRESS or
// FAILED) and every phase Gate 2 named when it failed the step (reset_phases
// in the audit trail: phases finished around the write guard, or without an
// outcome or reason), go back to NOT_EXECUTED with the reset recorded in each phase's
// history, and the task becomes PARTIAL without the failure_reason and
// recovery_suggestions Gate 2 wrote (the audit trail keeps them). Completed
// phases are kept. These
// moves are outside the transition tables and DES makes them only here; the
// file is rewritten atomically and the resolution audited (STALE_RESOLUTION,
// TASK_STATE_CHANGED).
func (e *Engine) ResolveStale(ctx context.Context, file string) (Resolution, error) {
	abs := resolve(e.root, file)
	res := Resolution{StepFile: e.rel(abs)}
	if _, ok := strings.CutPrefix(res.StepFile, ".."); ok || filepath.IsAbs(res.StepFile) {
		return res, fmt.Errorf("des: resolve %s: outside the project root %s", file, e.root)
	}
	// The file as the gates name it, symbolic links resolved: a link must
	// not carry the rewrite outside the project or into DES's own files,
	// and the resolution is recorded under the name Gates 2 and 3 read.
	real := gate.ProjectPath(e.root, abs)
	if real == "." || real == ".." || strings.HasPrefix(real, "../") || filepath.IsAbs(filepath.FromSlash(real)) {
		return res, fmt.Errorf("des: resolve %s: it leads to %s, outside the project root %s", file, real, e.root)
	}
	if e.ToolUseGate().Concerns(gate.ToolCall{Paths: []string{real}}) {
		return res, fmt.Errorf("des: resolve %s: it leads to %s, one of DES's own protected files, never a step file", file, real)
	}
	res.StepFile = real
	step, _, err := statemachine.ReadStep(abs)
	if err != nil {
		return res, fmt.Errorf("des: resolve %s: %w", res.StepFile, err)
	}
	now := e.now()
	threshold := time.Duration(e.cfg.StaleThresholdMinutes) * time.Minute
	res.From = step.Status
	failed := step.Status == statemachine.TaskFailed
	for _, p := range step.Phases {
		switch {
		case failed && (p.Status == statemachine.PhaseInProgress || p.Status == statemachine.PhaseFailed):
			res.Phases = append(res.Phases, p.Name)
		case p.Status == statemachine.PhaseInProgress:
			if started, ok := statemachine.ParseTimestamp(p.StartedAt); ok && now.Sub(started) > threshold {
				res.Phases = append(res.Phases, p.Name)
			}
		}
	}
	// A Gate 2 failure no attested pass or resolution settles refuses the
	// commit (Gate 3) even when the task is not FAILED: Gate 2 sent the
	// subagent back, or the settling lines were written before the
	// attestations started (a project upgraded, moved or copied). The person
	// resolves it here.
	more, unsettled, err := e.gate2Resets(ctx, res.StepFile)
	if err != nil {
		return res, fmt.Errorf("des: resolve %s: %w", res.StepFile, err)
	}
	if failed || unsettled {
		for _, p := range step.Phases {
			if slices.Contains(more, p.Name) && p.Status != statemachine.PhaseNotExecuted && !slices.Contains(res.Phases, p.Name) {
				res.Phases = append(res.Phases, p.Name)
			}
		}
	}
	if len(res.Phases) == 0 && !failed {
		if !unsettled {
			return res, fmt.Errorf("des: resolve %s: %w: no phase has been IN_PROGRESS for more than %v and the task is %s", res.StepFile, ErrNothingToResolve, threshold, orNone(step.Status))
		}
		// Nothing to reset: the resolution alone, the step file untouched.
		res.Phases, res.To = []string{}, step.Status
		if err := e.audit.Append(ctx, audit.Entry{Event: audit.StaleResolution, Fields: map[string]any{"step_file": res.StepFile, "phases": []string{}, "from": res.From, "to": res.To}}); err != nil {
			return res, fmt.Errorf("des: resolve %s: %w", res.StepFile, err)
		}
		return res, nil
	}
	note := "reset by des-hook stale --resolve: abandoned IN_PROGRESS past the stale threshold"
	if failed {
		note = "reset by des-hook stale --resolve: unfinished when Gate 2 failed the task"
	} else if unsettled {
		note = "reset by des-hook stale --resolve: named by Gate 2 when it failed the task"
	}
	step.ResetPhases(res.Phases, now, note)
	step.SetTaskStatus(statemachine.TaskPartial, now)
	step.ClearFailure() // the task starts again: the old reason no longer holds
	res.To = statemachine.TaskPartial
	data, err := step.Marshal()
	if err != nil {
		return res, fmt.Errorf("des: resolve %s: %w", res.StepFile, err)
	}
	if err := gate.Announced(ctx, e.writes, abs, data, func() error {
		// Written where the checks above looked (real), following no link:
		// one swapped in since would carry the write out of the project.
		return fileio.WriteAtomicIn(e.root, real, data, false)
	}); err != nil {
		return res, fmt.Errorf("des: resolve %s: %w", res.StepFile, err)
	}
	err = e.audit.Append(ctx,
		audit.Entry{Event: audit.StaleResolution, Fields: map[string]any{"step_file": res.StepFile, "phases": append([]string{}, res.Phases...), "from": res.From, "to": res.To}},
		audit.Entry{Event: audit.TaskStateChanged, Fields: map[string]any{"step_file": res.StepFile, "from": res.From, "to": res.To, "by": "stale-resolution"}},
	)
	if err != nil {
		return res, fmt.Errorf("des: resolve %s: the step was reset but not recorded: %w", res.StepFile, err)
	}
	return res, nil
}

// gate2Resets are the phases Gate 2 said must be done again when it failed
// the step (gate.Gate2Resets).
func (e *Engine) gate2Resets(ctx context.Context, stepFile string) ([]string, bool, error) {
	return gate.Gate2Resets(ctx, e.audit, statedir.Evidence(e.stateDir), stepFile)
}

func orNone(s string) string {
	if s == "" {
		return "without a status"
	}
	return s
}
