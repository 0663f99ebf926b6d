package gate

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
	"github.com/deterministic-exec/des/policy"
	"github.com/deterministic-exec/des/statemachine"
)

// Sources of a Gate 3 run, recorded in the audit trail as "source".
const (
	SourceGitHook    = "git-hook"    // `hook precommit` run by git as its pre-commit hook
	SourceCLI        = "cli"         // `hook precommit` run by a person or a script
	SourceClaudeCode = "claude-code" // a `git commit` an agent runs through Bash
	SourceLibrary    = "library"     // a Go caller
)

// CommitFile is a step file about to be committed.
type CommitFile struct {
	Path    string // absolute, or relative to the project root
	Content []byte // what the commit would hold; nil reads the file on disk
}

// Commit is the set of step files one commit would hold, and who asks.
type Commit struct {
	Files     []CommitFile
	Source    string // one of the Source constants; "" is SourceLibrary
	ToolUseID string // recorded when not ""
	SessionID string // recorded when not ""
}

// FileResult is Gate 3's decision on one step file.
type FileResult struct {
	Result
	StepFile string // relative to the project root, slash-separated
}

// CommitResult is Gate 3's decision on a commit: one FileResult per
// distinct file, in the order given. The commit may land only when no file
// is denied.
type CommitResult struct {
	Files []FileResult
}

// Denied reports whether any file blocks the commit.
func (r CommitResult) Denied() bool {
	return slices.ContainsFunc(r.Files, func(f FileResult) bool { return f.Denied() })
}

// Failed returns the files that block the commit.
func (r CommitResult) Failed() []FileResult {
	var out []FileResult
	for _, f := range r.Files {
		if f.Denied() {
			out = append(out, f)
		}
	}
	return out
}

// Reason renders the violations of every file as Result.Reason does: each
// on its own line as "[CODE] message" (messages name the file), then the
// recovery steps of them all, deduplicated, under "Recovery:".
func (r CommitResult) Reason() string {
	var vs []policy.Violation
	for _, f := range r.Files {
		vs = append(append(vs, f.Decision.Deny...), f.Decision.Warn...)
	}
	return Text(vs...)
}

// ErrOutsideRoot is wrapped when Gate 3 is asked about a file outside the
// project root: the audit trail that judges a step is the project's.
var ErrOutsideRoot = errors.New("outside the project root")

// Gate2Events are the audit events that hold a step's Gate 2 verdicts:
// a SUBAGENT_STOP_VALIDATION that failed, and what resolves it (a later one
// that passed, or a STALE_RESOLUTION). Gate 3 reads them once per run.
var Gate2Events = []audit.EventType{audit.SubagentStopValidation, audit.StaleResolution}

// PreCommit is Gate 3 (des.gates.pre_commit): it judges the step files a
// commit would hold. For each it hands the policy the phase log, read
// leniently from tdd_cycle.phase_execution_log or the legacy
// tdd_cycle.tdd_phase_tracking.phase_execution_log, and the step's Gate 2
// verdicts from the audit trail.
type PreCommit struct {
	Root  string     // absolute project root
	Audit *audit.Log // read for Gate 2 verdicts and written with the decision; nil does neither
}

// Check runs Gate 3 on every file of c, reading the audit trail once, and
// records one COMMIT_VALIDATION_PASSED or COMMIT_VALIDATION_FAILED entry per
// file (step_file, codes, source, and tool_use_id and session_id when
// known), all in one append.
//
// A file that does not parse is judged (DES-STEPFILE-SCHEMA), not an error.
// Errors mean Gate 3 could not decide, and a caller must refuse the commit
// (see Internal): a file outside the root (ErrOutsideRoot), a file that
// cannot be read, an audit trail that cannot be read (a malformed line
// included: the verdicts must not be judged on part of the trail), or an
// evaluation error. When every file was judged but the decisions could not
// be recorded, Check returns the result with an error wrapping
// ErrNotRecorded.
func (g PreCommit) Check(ctx context.Context, ev Evaluator, c Commit) (CommitResult, error) {
	var res CommitResult
	files, err := g.read(c.Files)
	if err != nil {
		return res, err
	}
	verdicts, err := g.gate2(ctx, files)
	if err != nil {
		return res, err
	}
	source := cmpOr(c.Source, SourceLibrary)
	entries := make([]audit.Entry, 0, len(files))
	for _, f := range files {
		g2 := verdicts[f.rel]
		if g2 == nil {
			g2 = []any{}
		}
		in := map[string]any{"step": f.facts, "gate2": g2}
		d, err := ev.Evaluate(ctx, policy.PreCommit, in)
		if err != nil {
			return CommitResult{}, fmt.Errorf("gate 3: %s: %w", f.rel, err)
		}
		fr := FileResult{Result: Result{Gate: policy.PreCommit, Decision: d, Evaluated: true}, StepFile: f.rel}
		res.Files = append(res.Files, fr)
		entries = append(entries, commitEntry(fr, source, c))
	}
	if g.Audit != nil {
		if err := g.Audit.Append(ctx, entries...); err != nil {
			return res, fmt.Errorf("gate 3: %w: %w", ErrNotRecorded, err)
		}
	}
	return res, nil
}

func commitEntry(f FileResult, source string, c Commit) audit.Entry {
	event := audit.CommitValidationPassed
	if f.Denied() {
		event = audit.CommitValidationFailed
	}
	codes := []any{}
	for _, code := range f.Decision.Codes() {
		codes = append(codes, code)
	}
	fields := map[string]any{"step_file": f.StepFile, "codes": codes, "source": source}
	if c.ToolUseID != "" {
		fields["tool_use_id"] = c.ToolUseID
	}
	if c.SessionID != "" {
		fields["session_id"] = c.SessionID
	}
	return audit.Entry{Event: event, Fields: fields}
}

// InProject splits files into those inside the project root, which Gate 3
// judges, and the paths of the others: a repository may hold more than the
// project, and the step files of another project are not this one's to
// judge.
func (g PreCommit) InProject(files []CommitFile) (inside []CommitFile, outside []string) {
	for _, f := range files {
		if _, ok := g.rel(f.Path); ok {
			inside = append(inside, f)
		} else {
			outside = append(outside, f.Path)
		}
	}
	return inside, outside
}

// rel is path relative to the root, and whether it is inside it.
func (g PreCommit) rel(path string) (string, bool) {
	rel := ProjectPath(g.Root, path)
	outside := rel == "." || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(filepath.FromSlash(rel))
	return rel, !outside
}

// commitStep is one step file read and turned into policy facts.
type commitStep struct {
	rel   string
	facts map[string]any
}

// read resolves and reads every file, each once.
func (g PreCommit) read(in []CommitFile) ([]commitStep, error) {
	seen := make(map[string]bool, len(in))
	out := make([]commitStep, 0, len(in))
	for _, f := range in {
		rel, ok := g.rel(f.Path)
		if !ok {
			return nil, fmt.Errorf("gate 3: step file %s: %w %s", f.Path, ErrOutsideRoot, g.Root)
		}
		if seen[rel] {
			continue
		}
		seen[rel] = true
		content := f.Content
		if content == nil {
			var err error
			content, err = readBounded(filepath.Join(g.Root, filepath.FromSlash(rel)))
			if err == nil && content == nil {
				err = fs.ErrNotExist
			}
			if err != nil {
				return nil, fmt.Errorf("gate 3: read step file %s: %w", rel, err)
			}
		}
		if len(content) > statemachine.MaxStepFileSize {
			return nil, fmt.Errorf("gate 3: step file %s: %w: over %d MiB", rel, statemachine.ErrTooLarge, statemachine.MaxStepFileSize>>20)
		}
		out = append(out, commitStep{rel: rel, facts: commitFacts(rel, content)})
	}
	return out, nil
}

// commitFacts is input.step of des.gates.pre_commit (docs/policies.md).
func commitFacts(rel string, content []byte) map[string]any {
	facts := map[string]any{"path": rel}
	step, err := statemachine.ParseStep(content)
	switch {
	case errors.Is(err, statemachine.ErrNotObject):
		facts["problem"], facts["error"] = "not_object", err.Error()
		return facts
	case err != nil:
		facts["problem"], facts["error"] = "invalid_json", err.Error()
		return facts
	}
	phases := make([]any, len(step.Phases))
	for i, p := range step.Phases {
		phases[i] = map[string]any{"name": p.Name, "pos": p.Pos, "status": p.Status, "outcome": p.Outcome, "blocked_by": p.BlockedBy}
	}
	logPointer := ""
	if len(step.PhaseLogPath) > 0 {
		logPointer = "/" + strings.Join(step.PhaseLogPath, "/") // fixed keys: nothing to escape
	}
	facts["document"] = step.Document()
	facts["workflow_type"] = step.WorkflowType
	facts["phase_log"] = logPointer
	facts["phases"] = phases
	return facts
}

// gate2 reads the Gate 2 verdicts of the given steps from the audit trail,
// in trail order, as input.gate2 facts.
func (g PreCommit) gate2(ctx context.Context, files []commitStep) (map[string][]any, error) {
	if g.Audit == nil || len(files) == 0 {
		return nil, nil
	}
	want := make(map[string]bool, len(files))
	for _, f := range files {
		want[f.rel] = true
	}
	entries, err := g.Audit.Read(ctx, audit.Query{Events: Gate2Events})
	if err != nil {
		return nil, fmt.Errorf("gate 3: read the Gate 2 verdicts in the audit trail: %w", err)
	}
	out := map[string][]any{}
	for _, e := range entries {
		step, _ := e.Fields["step_file"].(string)
		if !want[step] {
			continue
		}
		outcome, _ := e.Fields["outcome"].(string)
		codes := []any{}
		if raw, ok := e.Fields["codes"].([]any); ok {
			for _, c := range raw {
				if s, ok := c.(string); ok {
					codes = append(codes, s)
				}
			}
		}
		out[step] = append(out[step], map[string]any{
			"event": string(e.Event), "outcome": outcome, "codes": codes, "timestamp": e.Time.UTC().Format(time.RFC3339Nano),
		})
	}
	return out, nil
}
