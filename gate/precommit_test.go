package gate_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/policy"
)

// doneStep is a step whose 14 phases are all EXECUTED with PASS.
func doneStep() map[string]any {
	return map[string]any{
		"task_id": "01-01", "state": map[string]any{"status": "DONE"},
		"tdd_cycle": map[string]any{"phase_execution_log": fourteenPhases()},
	}
}

// withPhase changes fields of phase i of a step made by doneStep.
func withPhase(step map[string]any, i int, fields map[string]any) map[string]any {
	p := step["tdd_cycle"].(map[string]any)["phase_execution_log"].([]any)[i].(map[string]any)
	for k, v := range fields {
		if v == nil {
			delete(p, k)
		} else {
			p[k] = v
		}
	}
	return step
}

func (p *project) preCommit(files ...string) gate.CommitResult {
	p.t.Helper()
	res, err := p.eng.PreCommit(p.t.Context(), files...)
	if err != nil {
		p.t.Fatalf("PreCommit: %v", err)
	}
	return res
}

func commitCodes(res gate.CommitResult) []string {
	var out []string
	for _, f := range res.Files {
		out = append(out, f.Decision.Codes()...)
	}
	return out
}

func (p *project) appendAudit(entries ...audit.Entry) {
	p.t.Helper()
	if err := p.eng.Audit().Append(p.t.Context(), entries...); err != nil {
		p.t.Fatal(err)
	}
}

func stopVerdict(step, outcome string, at time.Time, codes ...string) audit.Entry {
	cs := []any{}
	for _, c := range codes {
		cs = append(cs, c)
	}
	action := gate.StopActionNone
	if outcome == "FAIL" {
		action = gate.StopActionRecord
	}
	return audit.Entry{Time: at, Event: audit.SubagentStopValidation, Fields: map[string]any{"step_file": step, "outcome": outcome, "codes": cs, "action": action}}
}

func TestPreCommitCompleteStepPassesAndIsRecorded(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	p.writeStep(stepRel, doneStep())
	res := p.preCommit(stepRel)
	if res.Denied() || len(res.Files) != 1 || !res.Files[0].Evaluated || res.Files[0].StepFile != stepRel {
		t.Fatalf("result %+v\n%s", res, res.Reason())
	}
	events := p.auditEvents()
	want := []audit.Entry{{Time: gate1Now, Event: audit.CommitValidationPassed, Fields: map[string]any{"step_file": stepRel, "codes": []any{}, "source": "library"}, Seq: 1}}
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("audit (-want +got):\n%s", diff)
	}
}

// Each code of Gate 3, from a step file that shows it; the passing
// direction of each is the complete step above and the cases that pass.
func TestPreCommitCodes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		step any
		want []string
	}{
		{"complete", doneStep(), nil},
		{"no phase log", map[string]any{"task_id": "01-01", "tdd_cycle": map[string]any{}}, []string{"DES-COMMIT-INCOMPLETE"}},
		{"no tdd_cycle", map[string]any{"task_id": "01-01"}, []string{"DES-COMMIT-INCOMPLETE"}},
		{"short log", func() any {
			s := doneStep()
			log := s["tdd_cycle"].(map[string]any)
			log["phase_execution_log"] = log["phase_execution_log"].([]any)[:13]
			return s
		}(), []string{"DES-COMMIT-INCOMPLETE"}},
		{"canonical phase renamed", withPhase(doneStep(), 6, map[string]any{"phase_name": "CODE_REVIEW"}), []string{"DES-COMMIT-INCOMPLETE"}},
		{"open: last phase not executed", withPhase(doneStep(), 13, map[string]any{"status": "NOT_EXECUTED", "outcome": nil}), []string{"DES-COMMIT-PHASE-OPEN"}},
		{"open: in progress", withPhase(doneStep(), 13, map[string]any{"status": "IN_PROGRESS", "outcome": nil}), []string{"DES-COMMIT-PHASE-OPEN"}},
		{"executed without outcome", withPhase(doneStep(), 3, map[string]any{"outcome": nil}), []string{"DES-COMMIT-OUTCOME"}},
		{"executed with outcome SUCCESS", withPhase(doneStep(), 3, map[string]any{"outcome": "SUCCESS"}), []string{"DES-COMMIT-OUTCOME"}},
		{"executed with outcome FAIL", withPhase(doneStep(), 3, map[string]any{"outcome": "FAIL"}), nil},
		{"skipped with accepted prefix", withPhase(doneStep(), 13, map[string]any{"status": "SKIPPED", "outcome": nil, "blocked_by": "CHECKPOINT_PENDING: review tomorrow"}), nil},
		{"skipped without reason", withPhase(doneStep(), 13, map[string]any{"status": "SKIPPED", "outcome": nil}), []string{"DES-COMMIT-SKIP-REASON"}},
		{"skipped with free text", withPhase(doneStep(), 13, map[string]any{"status": "SKIPPED", "blocked_by": "No L4 issues"}), []string{"DES-COMMIT-SKIP-REASON"}},
		{"deferred", withPhase(doneStep(), 13, map[string]any{"status": "SKIPPED", "blocked_by": "DEFERRED: next sprint"}), []string{"DES-COMMIT-DEFERRED"}},
		{"status COMPLETED", withPhase(doneStep(), 13, map[string]any{"status": "COMPLETED"}), []string{"DES-COMMIT-STATUS"}},
		{"status absent", withPhase(doneStep(), 13, map[string]any{"status": nil}), []string{"DES-COMMIT-STATUS"}},
		{"status of the wrong type", withPhase(doneStep(), 13, map[string]any{"status": 3}), []string{"DES-COMMIT-STATUS"}},
		{"gap", withPhase(doneStep(), 0, map[string]any{"status": "SKIPPED", "blocked_by": "not needed"}), []string{"DES-COMMIT-GAP", "DES-COMMIT-SKIP-REASON"}},
		{"invalid JSON", `{"task_id": "01-01",`, []string{"DES-STEPFILE-SCHEMA"}},
		{"not an object", `[1, 2]`, []string{"DES-STEPFILE-SCHEMA"}},
		{"a number the policy cannot hold", `{"task_id": "01-01", "estimate": 1e99999}`, []string{"DES-STEPFILE-SCHEMA"}},
		{"obsolete layout", func() any { s := doneStep(); s["step_id"] = "01-01"; return s }(), []string{"DES-STEPFILE-OBSOLETE"}},
		// Gate 3 does not apply the step schema: a status Gate 2 would refuse is not its business.
		{"task status not canonical", func() any { s := doneStep(); s["state"] = map[string]any{"status": "COMPLETE"}; return s }(), nil},
		{"configuration setup without a phase log", map[string]any{"task_id": "c", "workflow_type": "configuration_setup"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newProject(t, nil)
			p.writeStep(stepRel, c.step)
			res := p.preCommit(stepRel)
			if diff := cmp.Diff(c.want, commitCodes(res)); diff != "" {
				t.Errorf("codes (-want +got):\n%s\n%s", diff, res.Reason())
			}
			event := audit.CommitValidationPassed
			if len(c.want) > 0 {
				event = audit.CommitValidationFailed
			}
			if ev := p.auditEvents(); len(ev) != 1 || ev[0].Event != event {
				t.Errorf("audit %+v, want one %s", ev, event)
			}
		})
	}
}

func TestPreCommitMessagesNameFileFieldAndValues(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	p.writeStep(stepRel, `{"task_id": "01-01"`)
	res := p.preCommit(stepRel)
	if r := res.Reason(); !strings.Contains(r, "[DES-STEPFILE-SCHEMA] step file "+stepRel) || !strings.Contains(r, "unexpected end of JSON input") {
		t.Errorf("invalid JSON reason lacks the file or the parse error:\n%s", r)
	}

	p.writeStep(stepRel, withPhase(doneStep(), 5, map[string]any{"status": "PASS"}))
	res = p.preCommit(stepRel)
	v := res.Files[0].Decision.Deny
	i := slices.IndexFunc(v, func(v policy.Violation) bool { return v.Code == "DES-COMMIT-STATUS" })
	if i < 0 {
		t.Fatalf("no DES-COMMIT-STATUS in %+v", v)
	}
	if v[i].Field != "/tdd_cycle/phase_execution_log/5/status" || !strings.Contains(v[i].Message, `phase GREEN_ACCEPTANCE has status "PASS"`) ||
		v[i].Details["phase"] != "GREEN_ACCEPTANCE" || len(v[i].Recovery) == 0 {
		t.Errorf("violation %+v", v[i])
	}
}

func TestPreCommitLegacyPhaseLog(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	legacy := map[string]any{"task_id": "01-01", "tdd_cycle": map[string]any{"tdd_phase_tracking": map[string]any{"phase_execution_log": fourteenPhases()}}}
	p.writeStep(stepRel, legacy)
	if res := p.preCommit(stepRel); res.Denied() {
		t.Fatalf("complete legacy log denied:\n%s", res.Reason())
	}
	log := legacy["tdd_cycle"].(map[string]any)["tdd_phase_tracking"].(map[string]any)["phase_execution_log"].([]any)
	log[2].(map[string]any)["outcome"] = ""
	p.writeStep(stepRel, legacy)
	res := p.preCommit(stepRel)
	if d := res.Files[0].Decision.Deny; len(d) != 1 || d[0].Field != "/tdd_cycle/tdd_phase_tracking/phase_execution_log/2/outcome" {
		t.Errorf("deny %+v, want one DES-COMMIT-OUTCOME at the legacy location", d)
	}
}

func TestPreCommitGate2Verdicts(t *testing.T) {
	t.Parallel()
	at := func(min int) time.Time { return gate1Now.Add(time.Duration(min-100) * time.Minute) }
	stale := func(step string, t time.Time) audit.Entry {
		return audit.Entry{Time: t, Event: audit.StaleResolution, Fields: map[string]any{"step_file": step, "phases": []any{}, "from": "FAILED", "to": "PARTIAL"}}
	}
	other := "docs/feature/shop/steps/01-02.json"
	cases := []struct {
		name    string
		entries []audit.Entry
		denied  bool
	}{
		{"no verdict", nil, false},
		{"passed", []audit.Entry{stopVerdict(stepRel, "PASS", at(1))}, false},
		{"failed", []audit.Entry{stopVerdict(stepRel, "PASS", at(1)), stopVerdict(stepRel, "FAIL", at(2), "DES-PHASE-ABANDONED")}, true},
		{"failed, then passed", []audit.Entry{stopVerdict(stepRel, "FAIL", at(1)), stopVerdict(stepRel, "PASS", at(2))}, false},
		{"failed, then resolved", []audit.Entry{stopVerdict(stepRel, "FAIL", at(1)), stale(stepRel, at(2))}, false},
		{"resolved, then failed again", []audit.Entry{stopVerdict(stepRel, "FAIL", at(1)), stale(stepRel, at(2)), stopVerdict(stepRel, "FAIL", at(3))}, true},
		{"failed, then no opinion", []audit.Entry{stopVerdict(stepRel, "FAIL", at(1)), stopVerdict(stepRel, "NO_OPINION", at(2))}, true},
		{"another step failed", []audit.Entry{stopVerdict(other, "FAIL", at(1))}, false},
		{"another step passed after", []audit.Entry{stopVerdict(stepRel, "FAIL", at(1)), stopVerdict(other, "PASS", at(2))}, true},
		{"failed yesterday, resolved today", []audit.Entry{stopVerdict(stepRel, "FAIL", gate1Now.Add(-30*time.Hour)), stale(stepRel, at(2))}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newProject(t, nil)
			p.writeStep(stepRel, doneStep())
			p.appendAudit(c.entries...)
			res := p.preCommit(stepRel)
			if res.Denied() != c.denied {
				t.Fatalf("denied = %v, want %v\n%s", res.Denied(), c.denied, res.Reason())
			}
			if c.denied {
				if got := commitCodes(res); !cmp.Equal(got, []string{"DES-COMMIT-GATE2"}) {
					t.Errorf("codes %v", got)
				}
			}
		})
	}
	p := newProject(t, nil)
	p.writeStep(stepRel, doneStep())
	p.appendAudit(stopVerdict(stepRel, "FAIL", at(5), "DES-TURN-LIMIT", "DES-TIMEOUT"))
	want := "[DES-COMMIT-GATE2] " + stepRel + ": Gate 2 failed this step at 2026-11-22T10:25:00Z (DES-TURN-LIMIT, DES-TIMEOUT), and no later passing subagent stop or stale resolution resolves it"
	if r := p.preCommit(stepRel).Reason(); !strings.HasPrefix(r, want) || !strings.Contains(r, "hook stale --resolve "+stepRel) {
		t.Errorf("reason:\n%s\nwant it to start with\n%s", r, want)
	}
}

func TestPreCommitManyFilesOneAppend(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	second, third := "docs/feature/shop/steps/01-02.json", "docs/feature/cart/steps/02-01.json"
	p.writeStep(stepRel, doneStep())
	p.writeStep(second, withPhase(doneStep(), 13, map[string]any{"status": "IN_PROGRESS"}))
	p.writeStep(third, doneStep())
	p.appendAudit(stopVerdict(third, "FAIL", gate1Now.Add(-time.Hour)))
	before := len(p.auditEvents())
	res, err := p.eng.CheckCommit(t.Context(), gate.Commit{
		Files:  []gate.CommitFile{{Path: third}, {Path: filepath.Join(p.root, stepRel)}, {Path: second}, {Path: "./" + third}},
		Source: gate.SourceClaudeCode, ToolUseID: "toolu_1", SessionID: "sess",
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range res.Files {
		got = append(got, f.StepFile+" "+strings.Join(f.Decision.Codes(), ","))
	}
	want := []string{third + " DES-COMMIT-GATE2", stepRel + " ", second + " DES-COMMIT-PHASE-OPEN"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if failed := res.Failed(); len(failed) != 2 || !res.Denied() {
		t.Errorf("Failed() = %+v", failed)
	}
	r := res.Reason()
	if !strings.Contains(r, "[DES-COMMIT-GATE2] "+third) || !strings.Contains(r, "[DES-COMMIT-PHASE-OPEN] "+second) || strings.Count(r, "Recovery:") != 1 {
		t.Errorf("reason:\n%s", r)
	}
	entries := p.auditEvents()[before:]
	if len(entries) != 3 {
		t.Fatalf("appended %+v", entries)
	}
	for i, e := range entries {
		wantEvent := audit.CommitValidationFailed
		if i == 1 {
			wantEvent = audit.CommitValidationPassed
		}
		if e.Event != wantEvent || e.Fields["step_file"] != res.Files[i].StepFile || e.Fields["source"] != "claude-code" ||
			e.Fields["tool_use_id"] != "toolu_1" || e.Fields["session_id"] != "sess" {
			t.Errorf("entry %d: %+v", i, e)
		}
	}
}

func TestPreCommitContentOverridesDisk(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	p.writeStep(stepRel, doneStep()) // the work tree is complete...
	res, err := p.eng.CheckCommit(t.Context(), gate.Commit{Files: []gate.CommitFile{
		{Path: stepRel, Content: []byte(`{"task_id": "01-01"}`)}, // ...the staged content is not
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := commitCodes(res); !cmp.Equal(got, []string{"DES-COMMIT-INCOMPLETE"}) {
		t.Errorf("codes %v", got)
	}
	// A file that does not exist on disk can be judged on its content.
	res, err = p.eng.CheckCommit(t.Context(), gate.Commit{Files: []gate.CommitFile{{Path: "docs/new/steps/09-09.json", Content: []byte("{")}}})
	if err != nil || commitCodes(res)[0] != "DES-STEPFILE-SCHEMA" {
		t.Errorf("%v, %v", commitCodes(res), err)
	}
}

func TestPreCommitRefusesWhatItCannotJudge(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	p.writeStep(stepRel, doneStep())
	outside := filepath.Join(t.TempDir(), "steps", "01-01.json")
	if err := os.MkdirAll(filepath.Dir(outside), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(outside, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(p.root, "docs", "link.json")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{outside, "../x/steps/01-01.json", "docs/link.json", "."} {
		_, err := p.eng.PreCommit(t.Context(), stepRel, f)
		if !errors.Is(err, gate.ErrOutsideRoot) || !strings.Contains(err.Error(), p.root) {
			t.Errorf("PreCommit(%s): err = %v, want ErrOutsideRoot naming the root", f, err)
		}
	}
	if _, err := p.eng.PreCommit(t.Context(), "docs/feature/shop/steps/09-09.json"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v", err)
	}
	if _, err := p.eng.PreCommit(t.Context(), "docs"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: err = %v", err)
	}
	if len(p.auditEvents()) != 0 {
		t.Errorf("a refused run recorded %+v", p.auditEvents())
	}
	inside, out := p.eng.PreCommitGate().InProject([]gate.CommitFile{{Path: outside}, {Path: stepRel}, {Path: link}})
	if len(inside) != 1 || inside[0].Path != stepRel || !cmp.Equal(out, []string{outside, link}) {
		t.Errorf("InProject: %+v, %v", inside, out)
	}
}

// A trail that cannot be read is not judged in part: Gate 3 fails closed.
func TestPreCommitMalformedTrailIsAnError(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	p.writeStep(stepRel, doneStep())
	p.appendAudit(stopVerdict(stepRel, "PASS", gate1Now.Add(-time.Hour)))
	files, _ := p.eng.Audit().Files()
	f, err := os.OpenFile(files[0], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("{\"timestamp\": \"2026-11-22T11:00:00Z\", \"event\": \"SUBAGENT_STOP_VALIDATION\", \"step_fi\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	res, err := p.eng.PreCommit(t.Context(), stepRel)
	if !errors.Is(err, audit.ErrMalformedLine) || len(res.Files) != 0 {
		t.Fatalf("res %+v, err %v: want ErrMalformedLine and no decision", res, err)
	}
	r := gate.Internal(policy.PreCommit, err)
	if !r.Denied() || !strings.Contains(r.Reason(), "[DES-INTERNAL]") || !strings.Contains(r.Reason(), "line 2") {
		t.Errorf("fail-closed reason:\n%s", r.Reason())
	}
}

func TestPreCommitKeepsDecisionWhenNotRecorded(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, "audit")
	// A directory where today's day file should be: reads skip it, appends fail.
	if err := os.MkdirAll(filepath.Join(dir, audit.FileName(gate1Now)), 0o755); err != nil {
		t.Fatal(err)
	}
	log, err := audit.Open(dir, audit.WithClock(func() time.Time { return gate1Now }))
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeEvaluator{answer: policy.Decision{Deny: []policy.Violation{{Code: "DES-COMMIT-GAP", Message: "m"}}}}
	res, err := gate.PreCommit{Root: root, Audit: log, Workers: 1}.Check(t.Context(), f, gate.Commit{Files: []gate.CommitFile{{Path: "steps/01-01.json", Content: []byte("{}")}}})
	if !errors.Is(err, gate.ErrNotRecorded) || !res.Denied() {
		t.Errorf("res %+v, err %v: want the deny kept and ErrNotRecorded", res, err)
	}
}

func TestPreCommitInputDocument(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	f := &fakeEvaluator{}
	content := `{"task_id": "x", "tdd_cycle": {"tdd_phase_tracking": {"phase_execution_log": [
		{"phase_name": "PREPARE", "status": "SKIPPED", "blocked_by": "NOT_APPLICABLE: x"}, 7,
		{"phase_name": "RED_UNIT", "status": "EXECUTED", "outcome": "PASS", "blocked_by": null}]}}}`
	_, err := gate.PreCommit{Root: root, Workers: 1}.Check(t.Context(), f, gate.Commit{Files: []gate.CommitFile{
		{Path: "a/steps/01-01.json", Content: []byte(content)},
		{Path: "a/steps/01-02.json", Content: []byte("nope")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 2 {
		t.Fatalf("%d evaluations", len(f.calls))
	}
	in := f.calls[0].(map[string]any)
	step := in["step"].(map[string]any)
	delete(step, "document")
	want := map[string]any{
		"step": map[string]any{
			"path": "a/steps/01-01.json", "workflow_type": "tdd_cycle",
			"phase_log": "/tdd_cycle/tdd_phase_tracking/phase_execution_log",
			"phases": []any{
				map[string]any{"name": "PREPARE", "pos": 0, "at": "/tdd_cycle/tdd_phase_tracking/phase_execution_log/0", "status": "SKIPPED", "outcome": "", "blocked_by": "NOT_APPLICABLE: x"},
				map[string]any{"name": "RED_UNIT", "pos": 2, "at": "/tdd_cycle/tdd_phase_tracking/phase_execution_log/2", "status": "EXECUTED", "outcome": "PASS", "blocked_by": ""},
			},
		},
		"gate2": []any{},
	}
	if diff := cmp.Diff(want, in); diff != "" {
		t.Errorf("input (-want +got):\n%s", diff)
	}
	bad := f.calls[1].(map[string]any)["step"].(map[string]any)
	if bad["problem"] != "invalid_json" || bad["error"] == "" || bad["phases"] != nil || bad["document"] != nil {
		t.Errorf("unparsable step facts %+v", bad)
	}
}

func TestPreCommitEvaluationErrorIsAnError(t *testing.T) {
	t.Parallel()
	f := &fakeEvaluator{err: errors.New("policy broke")}
	res, err := gate.PreCommit{Root: t.TempDir(), Workers: 1}.Check(t.Context(), f, gate.Commit{Files: []gate.CommitFile{{Path: "steps/01-01.json", Content: []byte("{}")}}})
	if err == nil || !strings.Contains(err.Error(), "policy broke") || len(res.Files) != 0 {
		t.Errorf("res %+v, err %v", res, err)
	}
}
