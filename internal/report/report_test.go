package report

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/internal/decisionlog"
)

// Each kind's colour is readable as text on the page and on its badge, in
// both themes (WCAG AA, 4.5:1), and so are the page's text colours.
func TestThemeContrast(t *testing.T) {
	t.Parallel()
	for name, th := range Themes() {
		for what, pair := range map[string][2]string{
			"text": {th.Text, th.Background}, "muted text": {th.Muted, th.Background},
			"text on a panel": {th.Text, th.Panel}, "muted text on a panel": {th.Muted, th.Panel},
		} {
			if c := Contrast(pair[0], pair[1]); c < 4.5 {
				t.Errorf("%s theme: %s %s on %s: contrast %.2f, want 4.5", name, what, pair[0], pair[1], c)
			}
		}
		for kind, col := range th.Kinds {
			for on, bg := range map[string]string{"the page": th.Background, "its badge": col.BG, "a panel": th.Panel} {
				if c := Contrast(col.FG, bg); c < 4.5 {
					t.Errorf("%s theme: %s %s on %s (%s): contrast %.2f, want 4.5", name, kind, col.FG, on, bg, c)
				}
			}
		}
		if len(th.Kinds) != 9 {
			t.Errorf("%s theme: %d kinds", name, len(th.Kinds))
		}
	}
	if c := Contrast("#000000", "#ffffff"); c < 20.9 || c > 21.1 {
		t.Errorf("black on white: %.2f, want 21", c)
	}
}

func entry(seq int64, at time.Time, ev audit.EventType, f map[string]any) audit.Entry {
	return audit.Entry{Seq: seq, Time: at, Event: ev, Fields: f, Attested: true}
}

func TestBuild(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	step := "docs/feature/shop/steps/01-01.json"
	entries := []audit.Entry{
		entry(1, at, audit.TaskInvocationRejected, map[string]any{"session_id": "s1", "step_file": step, "codes": []any{"DES-PHASE-MISSING"}}),
		entry(2, at.Add(time.Minute), audit.TaskInvocationValidated, map[string]any{"session_id": "s1", "step_file": step, "codes": []any{}}),
		entry(3, at.Add(2*time.Minute), audit.PhaseCompleted, map[string]any{"session_id": "s1", "agent_id": "a1", "agent_type": "software-crafter", "step_file": step, "phase": "PREPARE", "from": "IN_PROGRESS", "to": "EXECUTED"}),
		entry(4, at.Add(3*time.Minute), audit.SubagentStopValidation, map[string]any{"session_id": "s1", "agent_id": "a1", "step_file": step, "outcome": "FAIL", "codes": []any{"DES-PHASE-INCOMPLETE"}, "action": "block"}),
		entry(5, at.Add(4*time.Minute), audit.CommitValidationPassed, map[string]any{"step_file": step, "codes": []any{"DES-NOTE"}, "source": "git-hook"}),
		entry(6, at.Add(5*time.Minute), audit.PhaseEscalation, map[string]any{"session_id": "s1", "type": "gate_blocked", "phase": "06-implementation", "codes": []any{"DES-GATE-BLOCKED"}}),
		entry(7, at.Add(6*time.Minute), audit.IntegrityViolation, map[string]any{"session_id": "s1", "agent_id": "a1", "gate": "tool_use", "tool": "Bash", "paths": []any{".des/config.json"}, "codes": []any{"DES-EFFECT-PROTECTED"}}),
		entry(8, at.Add(7*time.Minute), audit.TaskGraphUpdated, map[string]any{"session_id": "s1", "task_graph": "g.json", "phase": "P1", "status": "completed", "wave_from": 1, "wave_to": 2}),
		entry(9, at.Add(48*time.Hour), audit.TaskInvocationValidated, map[string]any{"session_id": "s2", "step_file": step, "codes": []any{}}),
	}
	r := Build(entries, Options{Project: "shop", Now: at, To: at.Add(24 * time.Hour), Phases: []string{"PREPARE", "RED_UNIT"},
		Titles: map[string]string{"DES-PHASE-MISSING": "A phase is missing"}, Trail: Trail{Status: TrailIntact, Summary: "audit trail intact"}})
	if len(r.Events) != 8 {
		t.Fatalf("%d events, want 8 (the last is after To)", len(r.Events))
	}
	kinds := []string{}
	for _, e := range r.Events {
		kinds = append(kinds, e.Kind)
	}
	want := []string{KindDeny, KindPass, KindInfo, KindDeny, KindWarn, KindEscal, KindRestore, KindInfo}
	if !slices.Equal(kinds, want) {
		t.Errorf("kinds %v, want %v", kinds, want)
	}
	var lanes []string
	for _, l := range r.Lanes {
		lanes = append(lanes, l.ID+"="+l.Label)
	}
	if !slices.Equal(lanes, []string{`session "s1" agent ""=session s1`, `session "s1" agent "a1"=subagent a1 (software-crafter) of session s1`, `source "git-hook"=git-hook (outside a session)`}) {
		t.Errorf("lanes %v", lanes)
	}
	if len(r.Steps) != 1 || r.Steps[0].Phases[0] != (PhaseCell{Name: "PREPARE", Status: "EXECUTED", Seq: 3}) || r.Steps[0].Phases[1].Status != "NOT_EXECUTED" {
		t.Errorf("steps %+v", r.Steps)
	}
	var gates []string
	for _, g := range r.Steps[0].Gates {
		gates = append(gates, g.Gate+" "+g.Outcome)
	}
	if !slices.Equal(gates, []string{"Gate 1 denied", "Gate 1 allowed", "Gate 2 FAIL", "Gate 3 passed"}) {
		t.Errorf("gates %v", gates)
	}
	if len(r.Workflow) != 1 || len(r.Workflow[0].Escalations) != 1 || len(r.Waves) != 1 || r.Waves[0].Status != "completed" {
		t.Errorf("workflow %+v, waves %+v", r.Workflow, r.Waves)
	}
	var codes []string
	for _, c := range r.Codes {
		codes = append(codes, c.Severity+" "+c.Code)
	}
	if codes[0] != "deny DES-EFFECT-PROTECTED" && codes[0] != "deny DES-PHASE-INCOMPLETE" && codes[0] != "deny DES-PHASE-MISSING" || !slices.Contains(codes, "warn DES-NOTE") {
		t.Errorf("codes %v", codes)
	}
}

// What the trail holds is text, never markup or script: a step file name,
// a code or a message built to break out of the page is shown as written.
func TestWriteHTMLEscapes(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	evil := `"><img src=x onerror=alert(1)></script><script>alert(2)</script>`
	r := Build([]audit.Entry{
		entry(1, at, audit.TaskInvocationRejected, map[string]any{"session_id": evil, "step_file": evil, "codes": []any{evil}}),
		entry(2, at, audit.HookError, map[string]any{"error": evil}),
	}, Options{Project: evil, Now: at, Trail: Trail{Status: TrailBroken, Summary: evil}})
	var b bytes.Buffer
	if err := r.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, bad := range []string{"<img", "<script>alert", "</script><script>"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
	if strings.Count(page, "<script") != 2 {
		t.Errorf("%d script elements, want the data and the page's own", strings.Count(page, "<script"))
	}
}

// What a line des did not write, or a line of the wrong shape, can do: be
// marked, never panic the report, never pass for another lane or a restore
// that did not happen.
func TestBuildHostileLines(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	entries := []audit.Entry{
		{Seq: 0, Time: at, Event: audit.TaskInvocationValidated, Fields: map[string]any{"session_id": "a/b", "codes": "DES-X"}, Attested: true},
		{Seq: 0, Time: at, Event: audit.IntegrityViolation, Fields: map[string]any{"session_id": "a", "agent_id": "b", "changes": map[string]any{"x": 1}, "paths": 7}},
		{Seq: 3, Time: at, Event: audit.IntegrityViolation, Fields: map[string]any{"changes": []any{map[string]any{"path": "x", "restored": false}}, "paths": []any{"x"}}, Attested: true},
		{Seq: 4, Time: at, Event: audit.CommitValidationPassed, Fields: map[string]any{"step_file": "s.json", "source": "cli", "codes": []any{}}},
		{Seq: 5, Time: at, Event: "NOT_AN_EVENT", Fields: nil, Attested: true},
	}
	r := Build(entries, Options{Now: at})
	if len(r.Events) != 5 || r.Unattested != 2 {
		t.Fatalf("%d events, %d unattested; want 5, 2", len(r.Events), r.Unattested)
	}
	if len(r.Lanes) != 4 || r.Events[0].Lane == r.Events[1].Lane {
		t.Errorf("lanes %+v: session \"a/b\" and session a's agent b must differ", r.Lanes)
	}
	if a, b := r.Events[0].Anchor(), r.Events[1].Anchor(); a == b || a != "e-0-0" || b != "e-0-1" {
		t.Errorf("anchors of lines before the chain: %q, %q", a, b)
	}
	if r.Events[2].Kind != KindError || !strings.HasPrefix(r.Events[2].What, "could not restore") {
		t.Errorf("a restore that failed: %s %q", r.Events[2].Kind, r.Events[2].What)
	}
	if g := r.Steps[0].Gates; len(g) != 1 || g[0].Attested {
		t.Errorf("Gate 3 verdict of a line des did not write: %+v", g)
	}
	var b bytes.Buffer
	if err := r.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "2 lines of the trail were not written by des") {
		t.Error("the page does not say how many lines des did not write")
	}
}

// An entry's messages are those of the decision with its codes made just
// before it, never one logged after it.
func TestBuildMessages(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	decision := func(t time.Time, msg string) decisionlog.Event {
		var res any = map[string]any{"deny": []any{map[string]any{"code": "DES-P", "msg": msg}}, "warn": []any{}}
		return decisionlog.Event{Timestamp: t, Result: &res}
	}
	r := Build([]audit.Entry{
		{Seq: 1, Time: at, Event: audit.DocumentWriteBlocked, Fields: map[string]any{"codes": []any{"DES-P"}}, Attested: true},
		{Seq: 2, Time: at.Add(time.Hour), Event: audit.DocumentWriteBlocked, Fields: map[string]any{"codes": []any{"DES-P"}}, Attested: true},
	}, Options{Now: at, Decisions: []decisionlog.Event{
		decision(at.Add(500*time.Millisecond), "forged: approved"),
		decision(at.Add(-20*time.Millisecond), "the real one"),
		decision(at.Add(-time.Minute), "too old"),
	}})
	if m := r.Events[0].Messages; !slices.Equal(m, []string{"[DES-P] the real one"}) {
		t.Errorf("messages %q", m)
	}
	if m := r.Events[1].Messages; m != nil {
		t.Errorf("an entry with no decision just before it: messages %q", m)
	}
}
