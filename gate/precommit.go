package gate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/internal/datadoc"
	"github.com/deterministic-exec/des/policy"
	"github.com/deterministic-exec/des/statemachine"
)

// Sources of a Gate 3 run, recorded in the audit trail as "source".
const (
	SourceGitHook    = "git-hook"    // `des-hook precommit` run by git as its pre-commit hook
	SourceCLI        = "cli"         // `des-hook precommit` run by a person or a script
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
	AgentID   string // the event's agent_id, when a subagent commits; recorded when not ""
}

// FileResult is Gate 3's decision on one step file.
type FileResult struct {
	Result
	StepFile string // relative to the project root, slash-separated
}

// CommitResult is Gate 3's decision on a commit: one FileResult per
// distinct file and content (the commits of a cherry-pick or rebase may
// hold several versions of one file), in the order given. The commit may land only when no file
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

// gate2Events are the audit events that hold a step's Gate 2 verdicts:
// a SUBAGENT_STOP_VALIDATION that failed, and what resolves it (a later one
// that passed, or a STALE_RESOLUTION). Gate 3 reads them once per run.
func gate2Events() []audit.EventType {
	return []audit.EventType{audit.SubagentStopValidation, audit.StaleResolution}
}

// PreCommit is Gate 3 (des.gates.pre_commit): it judges the step files a
// commit would hold. For each it hands the policy the phase log, read
// leniently from tdd_cycle.phase_execution_log or the legacy
// tdd_cycle.tdd_phase_tracking.phase_execution_log, and the step's Gate 2
// verdicts from the audit trail.
type PreCommit struct {
	Root  string     // absolute project root
	Audit *audit.Log // read for Gate 2 verdicts and written with the decision; nil does neither
	// VerdictsDir is where Gate 2 keeps its verdicts outside the project
	// (SubagentStop.EvidenceDir); "" reads none. A failure kept there counts
	// even when its line is gone from the trail, which sandboxed Bash may
	// rewrite, until a later resolution in the trail settles it.
	VerdictsDir string
	// Workers is how many files are parsed and evaluated at once: 0 is
	// GOMAXPROCS. With more than one, the Evaluator is called from several
	// goroutines and must be safe for that (des.Engine is).
	Workers int
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
// evaluation error; nothing is recorded then. When every file was judged
// but the decisions could not be recorded, Check returns the result with an
// error wrapping ErrNotRecorded.
func (g PreCommit) Check(ctx context.Context, ev Evaluator, c Commit) (CommitResult, error) {
	files, err := g.resolve(c.Files)
	if err != nil {
		return CommitResult{}, err
	}
	// The trail is read while the files are: both are I/O and parsing.
	type trail struct {
		verdicts map[string][]any
		err      error
	}
	read := make(chan trail, 1)
	go func() {
		v, err := g.gate2(ctx, files)
		read <- trail{v, err}
	}()
	errs := make([]error, len(files))
	g.each(len(files), func(i int) { errs[i] = files[i].load(g.Root) })
	t := <-read
	if err := firstError(append(errs, t.err)); err != nil {
		return CommitResult{}, err
	}

	res := CommitResult{Files: make([]FileResult, len(files))}
	g.each(len(files), func(i int) {
		f := files[i]
		g2 := t.verdicts[f.rel]
		if g2 == nil {
			g2 = []any{}
		}
		d, err := ev.Evaluate(ctx, policy.PreCommit, map[string]any{"step": f.facts, "gate2": g2})
		if err != nil {
			errs[i] = fmt.Errorf("gate 3: %s: %w", f.rel, err)
			return
		}
		res.Files[i] = FileResult{Result: Result{Gate: policy.PreCommit, Decision: d, Evaluated: true}, StepFile: f.rel}
	})
	if err := firstError(errs); err != nil {
		return CommitResult{}, err
	}
	if g.Audit != nil {
		source := cmpOr(c.Source, SourceLibrary)
		entries := make([]audit.Entry, len(res.Files))
		for i, f := range res.Files {
			entries[i] = commitEntry(f, source, c)
		}
		if err := g.Audit.Append(ctx, entries...); err != nil {
			return res, fmt.Errorf("gate 3: %w: %w", ErrNotRecorded, err)
		}
	}
	return res, nil
}

// each calls fn for 0..n-1 on up to Workers goroutines and waits.
func (g PreCommit) each(n int, fn func(i int)) {
	workers := g.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, n)
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				fn(i)
			}
		})
	}
	wg.Wait()
}

// firstError is the error of the first file that has one, so that the
// error does not depend on the order the workers ran in.
func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
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
	withAgent(fields, c.AgentID)
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

// commitStep is one step file to judge.
type commitStep struct {
	rel     string
	content []byte // nil: read the file
	facts   map[string]any
}

// resolve makes every path root-relative, refusing those outside the root,
// and keeps each file once per content: the commits of a cherry-pick or a
// rebase may hold several versions of one step file, each judged.
func (g PreCommit) resolve(in []CommitFile) ([]*commitStep, error) {
	type key struct {
		rel, content string
		disk         bool
	}
	seen := make(map[key]bool, len(in))
	out := make([]*commitStep, 0, len(in))
	for _, f := range in {
		rel, ok := g.rel(f.Path)
		if !ok {
			return nil, fmt.Errorf("gate 3: step file %s: %w %s", f.Path, ErrOutsideRoot, g.Root)
		}
		k := key{rel, string(f.Content), f.Content == nil}
		if !seen[k] {
			seen[k] = true
			out = append(out, &commitStep{rel: rel, content: f.Content})
		}
	}
	return out, nil
}

// load reads the file when no content was given and builds its facts.
func (f *commitStep) load(root string) error {
	content := f.content
	if content == nil {
		var err error
		content, err = readBounded(filepath.Join(root, filepath.FromSlash(f.rel)))
		if err == nil && content == nil {
			err = fs.ErrNotExist
		}
		if err != nil {
			return fmt.Errorf("gate 3: read step file %s: %w", f.rel, err)
		}
	}
	if len(content) > statemachine.MaxStepFileSize {
		return fmt.Errorf("gate 3: step file %s: %w: over %d MiB", f.rel, statemachine.ErrTooLarge, statemachine.MaxStepFileSize>>20)
	}
	f.facts = commitFacts(f.rel, content)
	return nil
}

// commitFacts is input.step of des.gates.pre_commit (docs/policies.md).
// The file is parsed once, straight into the policy's value (jsonValue),
// and the phase log is read from that value the way statemachine.ParseStep
// reads it; TestCommitFactsReadAsStatemachine holds the two together.
func commitFacts(rel string, content []byte) map[string]any {
	facts := map[string]any{"path": rel}
	doc, err := jsonValue(content)
	if err != nil {
		facts["problem"], facts["error"] = "invalid_json", jsonError(content, err)
		return facts
	}
	obj, ok := doc.(ast.Object)
	if !ok {
		facts["problem"], facts["error"] = "not_object", fmt.Sprintf("parse step file: %v", statemachine.ErrNotObject)
		return facts
	}
	workflow := statemachine.WorkflowTDDCycle
	if s, ok := astString(obj.Get(ast.InternedTerm("workflow_type"))); ok {
		workflow = s
	}
	path, entries := phaseLog(obj)
	logPointer := ""
	if path != nil {
		logPointer = "/" + strings.Join(path, "/") // fixed keys: nothing to escape
	}
	phases := make([]any, 0, len(entries))
	for pos, e := range entries {
		entry, ok := e.Value.(ast.Object)
		if !ok {
			continue // statemachine leaves out entries that are not objects
		}
		field := func(key string) string {
			s, _ := astString(entry.Get(ast.InternedTerm(key)))
			return s
		}
		phases = append(phases, map[string]any{
			"name": field("phase_name"), "pos": pos, "at": logPointer + "/" + strconv.Itoa(pos),
			"status": field("status"), "outcome": field("outcome"), "blocked_by": field("blocked_by"),
		})
	}
	facts["document"] = doc
	facts["workflow_type"] = workflow
	facts["phase_log"] = logPointer
	facts["phases"] = phases
	return facts
}

// Where statemachine reads the phase log: this location, else the legacy one.
var (
	phaseLogAt       = []string{"tdd_cycle", "phase_execution_log"}
	legacyPhaseLogAt = []string{"tdd_cycle", "tdd_phase_tracking", "phase_execution_log"}
)

// phaseLog is the phase log array and where it is, or nil when neither
// location holds an array (a step without a TDD cycle, or a broken one).
func phaseLog(doc ast.Object) ([]string, []*ast.Term) {
	for _, at := range [][]string{phaseLogAt, legacyPhaseLogAt} {
		var v ast.Value = doc
		for _, key := range at {
			o, ok := v.(ast.Object)
			if !ok {
				v = nil
				break
			}
			t := o.Get(ast.InternedTerm(key))
			if t == nil {
				v = nil
				break
			}
			v = t.Value
		}
		if arr, ok := v.(*ast.Array); ok {
			terms := make([]*ast.Term, arr.Len())
			for i := range terms {
				terms[i] = arr.Elem(i)
			}
			return slices.Clone(at), terms
		}
	}
	return nil, nil
}

func astString(t *ast.Term) (string, bool) {
	if t == nil {
		return "", false
	}
	s, ok := t.Value.(ast.String)
	return string(s), ok
}

// jsonError words a parse failure as the other gates do (encoding/json's
// words, after the line and column), and keeps jsonValue's own for valid
// JSON that the policy cannot hold, such as the number 1e99999.
func jsonError(content []byte, err error) string {
	if _, derr := datadoc.Decode(content); derr != nil {
		return "parse step file: " + derr.Error()
	}
	return "parse step file: " + err.Error()
}

// gate2 reads the Gate 2 verdicts of the given steps from the audit trail,
// in trail order, as input.gate2 facts.
func (g PreCommit) gate2(ctx context.Context, files []*commitStep) (map[string][]any, error) {
	if g.Audit == nil || len(files) == 0 {
		return nil, nil
	}
	want := make(map[string]bool, len(files))
	for _, f := range files {
		want[f.rel] = true
	}
	entries, err := gate2Verdicts(ctx, g.Audit, g.VerdictsDir, audit.Query{Events: gate2Events()}, want)
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
			"attested": e.Attested,
		})
	}
	return out, nil
}

// gate2Verdicts are the trail's entries that match q (Gate 2's verdicts and
// resolutions) with the failures Gate 2 kept in evidenceDir for the steps
// of want, oldest first: what Gate 3 and Gate2Resets judge a step's latest
// verdict from.
func gate2Verdicts(ctx context.Context, log *audit.Log, evidenceDir string, q audit.Query, want map[string]bool) ([]audit.Entry, error) {
	var entries []audit.Entry
	if log != nil {
		var err error
		if entries, err = log.Read(ctx, q); err != nil {
			return nil, err
		}
	}
	entries = append(entries, KeptFailures(evidenceDir, want)...)
	slices.SortStableFunc(entries, func(a, b audit.Entry) int { return a.Time.Compare(b.Time) })
	return entries, nil
}

// anyList is strs as a JSON array as the trail holds one ([]any).
func anyList(strs []string) []any {
	out := make([]any, len(strs))
	for i, s := range strs {
		out[i] = s
	}
	return out
}

// KeptFailures are the failures Gate 2 kept in dir (its evidence
// directory) for the steps of want, as the trail entries they were recorded
// with (attested: des wrote them where the agent cannot), reset_phases
// included. A record that cannot be read is left out: the trail still holds
// its line unless it was removed.
func KeptFailures(dir string, want map[string]bool) []audit.Entry {
	if dir == "" {
		return nil
	}
	names, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []audit.Entry
	for _, de := range names {
		if !strings.HasSuffix(de.Name(), ".stop.json") || !de.Type().IsRegular() {
			continue
		}
		var rec StopRecord
		if ok, err := readRecord(dir, de.Name(), &rec); !ok || err != nil || !rec.Failed || !want[rec.StepFile] {
			continue
		}
		fields := map[string]any{"step_file": rec.StepFile, "outcome": "FAIL", "codes": anyList(rec.Codes)}
		if len(rec.ResetPhases) > 0 {
			fields["reset_phases"] = anyList(rec.ResetPhases)
		}
		out = append(out, audit.Entry{Time: rec.At, Event: audit.SubagentStopValidation, Attested: true, Fields: fields})
	}
	return out
}
