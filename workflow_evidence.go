package des

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"time"

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
// "records_seen": n, "first_seen": time,
// "test_iteration": {phase: {...}}, "user_replies": {phase: n},
// "phase_agent": {phase: {agent_type, time, constitutional}}}: besides the
// runs, the user's replies des saw during each phase and the last
// subagent that stopped in it, with the constitutional verdict its last
// message states (observations the gates quote; they decide on the
// state's claims for those). A phase without runs has no test_iteration.
// nil when the state holds no active workflow.
//
// state is the state des reads (a write guard passes the content a write
// would leave: its workflow's evidence), stateFile its path.
//
// The policies read no run history (a long one would cost every
// evaluation): with history false each test_iteration has the last run's
// failures (last_test_failures) instead; WriteTestIteration asks for the
// history the state keeps.
func (e *Engine) workflowEvidence(ctx context.Context, stateFile string, state, tables map[string]any, history bool) map[string]any {
	id := isdlc.WorkflowID(state)
	if id == "" {
		return nil
	}
	ev := map[string]any{"workflow": id, "test_iteration": map[string]any{}}
	seen, storeKey, err := e.attestedRuns()
	if err != nil {
		// Unreadable evidence is no evidence: the gates then see no test
		// run, and say so, rather than none of the workflow.
		e.logger.Warn("des: test runs unreadable", "err", err)
	}
	runs := 0
	for _, s := range seen {
		if s.Attested && testrun.IsRun(s.Record) {
			runs++
		}
	}
	ev["test_runs_seen"] = runs
	byPhase := map[string][]isdlc.TestRun{}
	approved := map[string]time.Time{} // phase → a person's last approval
	replies := map[string]any{}        // phase → the user's replies des saw
	stops := map[string]any{}          // phase → the last subagent that stopped in it
	ev["user_replies"], ev["phase_agent"] = replies, stops
	var order []string
	// What des saw of this workflow at all: a write that starts a workflow
	// under an identity des already saw (an old started_at) would inherit
	// its runs, which the policies refuse (DES-WORKFLOW-REUSED).
	records, first := 0, time.Time{}
	for _, s := range seen {
		b := s.Belongs
		if !s.Attested || b.StateFile != stateFile || b.Workflow != id {
			continue
		}
		records++
		if first.IsZero() || s.Time.Before(first) {
			first = s.Time
		}
		if b.ISDLCPhase == "" {
			continue
		}
		switch s.Event {
		case testrun.EventApproval:
			approved[b.ISDLCPhase] = s.Time
			continue
		case testrun.EventUserReply:
			n, _ := replies[b.ISDLCPhase].(int)
			replies[b.ISDLCPhase] = n + 1
			continue
		case testrun.EventAgentStop:
			stops[b.ISDLCPhase] = map[string]any{"agent_type": s.AgentType, "time": s.Time.UTC().Format(time.RFC3339), "constitutional": s.Result}
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
	ev["records_seen"] = records
	if records > 0 {
		ev["first_seen"] = first.UTC().Format(time.RFC3339)
	}
	if len(order) == 0 {
		return ev
	}
	aliases := e.phaseAliases(ctx)
	ti := ev["test_iteration"].(map[string]any)
	for _, phase := range order {
		lim := isdlc.TestIterationLimits(tables, state, phase, aliases)
		derived := e.testRuns.derive(storeKey, limitsKey(stateFile, id, phase, lim), byPhase[phase], lim)
		if h, _ := derived["history"].([]any); !history && len(h) > 0 {
			last, _ := h[len(h)-1].(map[string]any)
			derived["last_test_failures"] = last["failures"]
			delete(derived, "history")
		}
		// An approval counts for the escalation it followed: tests that
		// escalate again after it need another.
		runs := byPhase[phase]
		if at, ok := approved[phase]; ok && derived["status"] == "escalated" && !at.Before(runs[len(runs)-1].Time) {
			derived["escalation_approved"] = true
		}
		ti[phase] = derived
	}
	return ev
}

// ErrNothingToApprove: ApproveTestEscalation found no escalation of the
// phase's test iterations to approve.
var ErrNothingToApprove = errors.New("no escalated test iterations to approve")

// ApproveTestEscalation records that a person approves going on past
// phase although its test iterations were escalated (the circuit breaker,
// or the maximum reached, by des's evidence): the gate then lets the
// workflow advance, as iSDLC's escalation_approved does. The approval is
// kept in des's attested evidence, not in the state an agent writes; it
// covers the escalation it follows, not a later one. reason is kept with
// it. The caller makes sure a person runs it (des-hook refuses it inside
// an agent's tool call). phase "" is the current phase.
func (e *Engine) ApproveTestEscalation(ctx context.Context, cwd, phase, reason string) (TestIterationUpdate, error) {
	facts, err := e.WorkflowFacts(ctx, cwd)
	if err != nil {
		return TestIterationUpdate{}, err
	}
	rel, _ := facts["state_file"].(string)
	state, _ := facts["state"].(map[string]any)
	if rel == "" || state == nil {
		return TestIterationUpdate{}, fmt.Errorf("des: approve: %w: no workflow state with an active workflow here", ErrNothingToApprove)
	}
	if phase == "" {
		_, phase = e.currentPhase(ctx, state)
	}
	ev, _ := facts["evidence"].(map[string]any)
	tis, _ := ev["test_iteration"].(map[string]any)
	ti, _ := tis[phase].(map[string]any)
	if ti["status"] != "escalated" {
		return TestIterationUpdate{}, fmt.Errorf("des: approve %s: %w: by the test runs des saw, its tests are %s", phase, ErrNothingToApprove, iterationText(ti))
	}
	if ti["escalation_approved"] == true {
		return TestIterationUpdate{}, fmt.Errorf("des: approve %s: %w: its escalation is approved already", phase, ErrNothingToApprove)
	}
	r := testrun.Record{
		Time: e.now().UTC(), Event: testrun.EventApproval, Command: reason, Runner: "person",
		Belongs: testrun.Belongs{StateFile: rel, ISDLCPhase: phase, Workflow: isdlc.WorkflowID(state)},
	}
	if err := e.testRunStore().Append(ctx, r); err != nil {
		return TestIterationUpdate{}, fmt.Errorf("des: approve %s: %w", phase, err)
	}
	return e.WriteTestIteration(ctx, cwd)
}

// iterationText says how a phase's derived test iterations stand.
func iterationText(ti map[string]any) string {
	if ti == nil {
		return "not run yet"
	}
	status, _ := ti["status"].(string)
	if status == "" {
		status = "open"
	}
	return fmt.Sprintf("%v/%v test iterations, last result %v, status %s", ti["current_iteration"], ti["max_iterations"], ti["last_test_result"], status)
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

// currentPhase is the workflow's current phase as the state spells it
// (isdlc.CurrentPhase) and as the guards read it, a legacy key mapped
// through data.des.phases.phase_aliases.
func (e *Engine) currentPhase(ctx context.Context, state map[string]any) (raw, phase string) {
	raw = isdlc.CurrentPhase(state)
	if to, ok := e.phaseAliases(ctx)[raw]; ok {
		return raw, to
	}
	return raw, raw
}

// testRunStore is the project's attested test runs (and the observations
// kept with them), in des's evidence directory.
func (e *Engine) testRunStore() testrun.Store {
	return testrun.StoreOf(e.stateDir)
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
	if rel != "" && state != nil {
		// The workflow a run of it belongs to, as des saw it then: brought
		// back so later (a branch switched back to), it is no reuse.
		gate.RememberWorkflow(ctx, e.stateDir, rel, state)
	}
	tables, err := e.effectiveTables(ctx)
	if err != nil {
		return upd, err
	}
	ev := e.workflowEvidence(ctx, rel, state, tables, true)
	tis, _ := ev["test_iteration"].(map[string]any)
	if rel == "" || state == nil || len(tis) == 0 {
		return upd, nil
	}
	raw, phase := e.currentPhase(ctx, state)
	derived, _ := tis[phase].(map[string]any)
	if derived == nil {
		return upd, nil
	}
	key := isdlc.PhaseKey(state, phase, raw, e.phaseAliases(ctx))
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
	for _, k := range []string{"current_iteration", "max_iterations", "last_test_result", "completed", "status", "escalation_reason", "escalation_approved"} {
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

// WorkflowObservation is something des saw happen during an iSDLC
// workflow's current phase, kept with its test runs (ObserveWorkflow).
type WorkflowObservation struct {
	// UserReply: the user answered (a prompt they submitted, or their
	// answer to AskUserQuestion: Via says which). Nothing of the text is
	// kept.
	UserReply bool
	Via       string
	// AgentType names a subagent that stopped during the phase, and
	// Constitutional the verdict its last message states ("compliant",
	// "escalated", "iterating", "non_compliant"; "" none).
	AgentType, Constitutional string
	SessionID, AgentID        string
}

// ObserveWorkflow records o for the current phase of the workflow in
// effect for a call made in cwd; nothing when there is no active
// workflow. The observations are des's evidence of what happened, shown by
// des-hook evidence and quoted by the gates.
func (e *Engine) ObserveWorkflow(ctx context.Context, cwd string, o WorkflowObservation) error {
	facts, err := e.WorkflowFacts(ctx, cwd)
	if err != nil || facts == nil {
		return err
	}
	rel, _ := facts["state_file"].(string)
	state, _ := facts["state"].(map[string]any)
	id := isdlc.WorkflowID(state)
	_, phase := e.currentPhase(ctx, state)
	if id == "" || phase == "" {
		return nil
	}
	r := testrun.Record{
		Time: e.now().UTC(), SessionID: o.SessionID, AgentID: o.AgentID,
		Belongs: testrun.Belongs{StateFile: rel, ISDLCPhase: phase, Workflow: id},
	}
	if o.UserReply {
		r.Event, r.Runner = testrun.EventUserReply, o.Via
	} else {
		r.Event, r.AgentType, r.Result = testrun.EventAgentStop, o.AgentType, o.Constitutional
	}
	return e.testRunStore().Append(ctx, r)
}

// effectiveTables are the requirement tables in force: the team's files
// (phase_requirements_files) over the policies' data.des.phases.requirements.
func (e *Engine) effectiveTables(ctx context.Context) (map[string]any, error) {
	tables, err := e.requirementTables(ctx)
	if err != nil || len(e.cfg.PhaseRequirementsFiles) == 0 {
		return tables, err
	}
	return isdlc.RequirementTables(e.root, e.cfg.PhaseRequirementsFiles, tables)
}

// runsMemo keeps the test runs of the last read with the stat of the
// store's directory: the gates read them at every call in a workflow, a
// warm server serves many calls, and reading and verifying a long store
// costs far more than a stat (18 ms against 2 for 1000 runs).
type runsMemo struct {
	mu      sync.Mutex
	key     [sha256.Size]byte
	seen    []testrun.Seen
	ok      bool
	derived map[string]map[string]any // by phase and limits, for key's runs
}

// derive is isdlc.DeriveTestIteration of runs, from the memo when the same
// runs (store key, what) were derived with the same limits. It returns a
// copy the caller may change (the history shared).
func (m *runsMemo) derive(storeKey [sha256.Size]byte, what string, runs []isdlc.TestRun, lim isdlc.IterationLimits) map[string]any {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.derived[what]
	if !ok || m.key != storeKey || !m.ok {
		d = isdlc.DeriveTestIteration(runs, lim)
		if m.ok && m.key == storeKey {
			if m.derived == nil {
				m.derived = map[string]map[string]any{}
			}
			m.derived[what] = d
		}
	}
	out := make(map[string]any, len(d)+1)
	for k, v := range d {
		out[k] = v
	}
	return out
}

// attestedRuns are the store's lines (testrun.Store.Read), from the memo
// while the store's files are as they were (statTree: size, times, inode,
// and the content of a file changed in the last moments).
func (e *Engine) attestedRuns() ([]testrun.Seen, [sha256.Size]byte, error) {
	var key [sha256.Size]byte
	store := e.testRunStore()
	h := sha256.New()
	for _, p := range store.Files() {
		if err := statTree(h, p); err != nil {
			seen, _, err := store.Read()
			return seen, key, err // key zero: nothing memoised
		}
	}
	h.Sum(key[:0])
	m := &e.testRuns
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ok && m.key == key {
		return m.seen, key, nil
	}
	seen, _, err := store.Read()
	if err != nil {
		return seen, key, err
	}
	m.key, m.seen, m.ok, m.derived = key, seen, true, nil
	return seen, key, nil
}

// limitsKey names what a derivation depends on besides the runs.
func limitsKey(stateFile, id, phase string, lim isdlc.IterationLimits) string {
	cov := "none"
	if lim.MinCoverage != nil {
		cov = fmt.Sprint(*lim.MinCoverage)
	}
	return fmt.Sprintf("%q %q %q %d %d %s", stateFile, id, phase, lim.MaxIterations, lim.CircuitBreaker, cov)
}
