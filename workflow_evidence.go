package des

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"

	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/internal/jsonsplice"

	"github.com/deterministic-exec/des/internal/isdlc"
	"github.com/deterministic-exec/des/internal/testrun"
)

// workflowEvidence is input.workflow.evidence: what des itself saw of the
// active workflow of w, for the gates to decide on instead of what the
// state says (setting phase_evidence). Today that is each phase's
// test_iteration, derived from the attested test runs des recorded in
// that phase of that workflow (isdlc.DeriveTestIteration, as iSDLC's
// test-watcher computes it): {"workflow": id, "test_runs_seen": n,
// "test_iteration": {phase: {...}}}. A phase without runs has no entry.
// nil when the state holds no active workflow.
//
// state is the state des reads (a write guard passes the content a write
// would leave: its workflow's evidence), stateFile its path.
func (e *Engine) workflowEvidence(ctx context.Context, stateFile string, state, tables map[string]any) map[string]any {
	id := isdlc.WorkflowID(state)
	if id == "" {
		return nil
	}
	ev := map[string]any{"workflow": id, "test_iteration": map[string]any{}}
	seen, rep, err := testrun.Store{Dir: testrun.DirIn(EvidenceDir(e.stateDir))}.Read()
	if err != nil {
		// Unreadable evidence is no evidence: the gates then see no test
		// run, and say so, rather than none of the workflow.
		e.logger.Warn("des: test runs unreadable", "err", err)
	}
	ev["test_runs_seen"] = rep.Attested
	byPhase := map[string][]isdlc.TestRun{}
	var order []string
	for _, s := range seen {
		b := s.Belongs
		if !s.Attested || b.StateFile != stateFile || b.Workflow != id || b.ISDLCPhase == "" {
			continue
		}
		if _, ok := byPhase[b.ISDLCPhase]; !ok {
			order = append(order, b.ISDLCPhase)
		}
		byPhase[b.ISDLCPhase] = append(byPhase[b.ISDLCPhase], isdlc.TestRun{
			Time: s.Time, Command: s.Command, Result: s.Result, Failures: s.Failed,
			Coverage: s.Coverage, Error: s.Error, Signature: s.Signature,
		})
	}
	if len(order) == 0 {
		return ev
	}
	aliases := e.phaseAliases(ctx)
	ti := ev["test_iteration"].(map[string]any)
	for _, phase := range order {
		lim := isdlc.TestIterationLimits(tables, state, phase, aliases)
		ti[phase] = isdlc.DeriveTestIteration(byPhase[phase], lim)
	}
	return ev
}

// phaseAliases is data.des.phases.phase_aliases: legacy phase keys and
// the keys they stand for.
func (e *Engine) phaseAliases(ctx context.Context) map[string]string {
	pe, err := e.Policy(ctx)
	if err != nil {
		return nil
	}
	raw, _ := pe.Data("des.phases.phase_aliases")
	m, _ := raw.(map[string]any)
	out := make(map[string]string, len(m))
	for k, v := range m {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// TestIterationUpdate is what WriteTestIteration wrote.
type TestIterationUpdate struct {
	// StateFile is the workflow state written (relative to the root), ""
	// when nothing was: no state, no active workflow, no test run des saw
	// in its current phase, phase_evidence "state", or the state says so
	// already.
	StateFile string
	Phase     string
	// TestIteration is the phase's test_iteration as des derived it.
	TestIteration map[string]any
}

// WriteTestIteration writes the test iterations of the workflow's current
// phase, as des derived them from the test runs it saw, into the workflow
// state in effect for a call made in cwd ("" = the root):
// phases[<phase>].iteration_requirements.test_iteration, the keys des
// derives (isdlc.TestIterationKeys) replaced and every other byte of the
// file kept. The orchestrator reads them there as it reads iSDLC's
// test-watcher's. It is des's own write: announced to the effect check and
// audited (TEST_ITERATION_UPDATED). Nothing is written under
// phase_evidence "state", or when the state already says the same.
func (e *Engine) WriteTestIteration(ctx context.Context, cwd string) (TestIterationUpdate, error) {
	var upd TestIterationUpdate
	if e.cfg.PhaseEvidence == PhaseEvidenceState {
		return upd, nil
	}
	facts, err := e.WorkflowFacts(ctx, cwd)
	if err != nil || facts == nil {
		return upd, err
	}
	rel, _ := facts["state_file"].(string)
	state, _ := facts["state"].(map[string]any)
	ev, _ := facts["evidence"].(map[string]any)
	tis, _ := ev["test_iteration"].(map[string]any)
	if rel == "" || state == nil || len(tis) == 0 {
		return upd, nil
	}
	aliases := e.phaseAliases(ctx)
	raw := isdlc.CurrentPhase(state)
	phase := raw
	if to, ok := aliases[raw]; ok {
		phase = to
	}
	derived, _ := tis[phase].(map[string]any)
	if derived == nil {
		return upd, nil
	}
	key := isdlc.PhaseKey(state, phase, raw, aliases)
	phases, _ := state["phases"].(map[string]any)
	doc, _ := phases[key].(map[string]any)
	reqs, _ := doc["iteration_requirements"].(map[string]any)
	old, _ := reqs["test_iteration"].(map[string]any)
	merged := make(map[string]any, len(derived)+len(old))
	for k, v := range old {
		merged[k] = v
	}
	for _, k := range isdlc.TestIterationKeys {
		delete(merged, k)
	}
	for k, v := range derived {
		merged[k] = v
	}
	if sameJSON(merged, old) {
		return upd, nil
	}
	text, err := json.MarshalIndent(merged, "", "  ")
	if err != nil {
		return upd, err
	}
	abs := filepath.Join(e.root, filepath.FromSlash(rel))
	data, err := readStateIn(e.root, rel)
	if err != nil {
		return upd, fmt.Errorf("des: write test iterations into %s: %w", rel, err)
	}
	out, err := jsonsplice.SetPath(data, []string{"phases", key, "iteration_requirements", "test_iteration"}, string(text))
	if err != nil {
		return upd, fmt.Errorf("des: write test iterations into %s: %w", rel, err)
	}
	if err := gate.Announced(ctx, e.writes, abs, out, func() error {
		return writeIfUnchanged(e.root, rel, data, out)
	}); err != nil {
		return upd, fmt.Errorf("des: write test iterations into %s: %w", rel, err)
	}
	upd = TestIterationUpdate{StateFile: rel, Phase: phase, TestIteration: derived}
	fields := map[string]any{"state_file": rel, "phase": phase}
	for _, k := range []string{"current_iteration", "max_iterations", "last_test_result", "completed", "status", "escalation_reason"} {
		if v, ok := derived[k]; ok {
			fields[k] = v
		}
	}
	if err := e.audit.Append(ctx, audit.Entry{Event: audit.TestIterationUpdated, Fields: fields}); err != nil {
		return upd, fmt.Errorf("des: wrote test iterations into %s, but could not audit it: %w", rel, err)
	}
	return upd, nil
}

// errStateMoved: the workflow state changed between des's read and its
// write; des leaves the newer content alone.
var errStateMoved = errors.New("the workflow state changed while des wrote it; des left the newer content, and writes its test iterations again at the next test run")

// readStateIn reads the workflow state rel below root, following no link
// out of it.
func readStateIn(root, rel string) ([]byte, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return fileio.ReadBoundedIn(r, rel, isdlc.MaxStateBytes)
}

// writeIfUnchanged replaces rel with out when it still holds was: a
// write the orchestrator made meanwhile is newer than des's and is kept.
func writeIfUnchanged(root, rel string, was, out []byte) error {
	now, err := readStateIn(root, rel)
	if err != nil {
		return err
	}
	if !bytes.Equal(now, was) {
		return errStateMoved
	}
	return fileio.WriteAtomicIn(root, rel, out, false)
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b map[string]any) bool {
	if b == nil {
		return false
	}
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return false
	}
	var va, vb any
	_ = json.Unmarshal(ja, &va)
	_ = json.Unmarshal(jb, &vb)
	return reflect.DeepEqual(va, vb)
}
