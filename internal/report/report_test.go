package report

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deterministic-exec/des/audit"
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
	if !slices.Equal(lanes, []string{"s1=session s1", "s1/a1=subagent a1 (software-crafter) of session s1", "git git-hook=git-hook (outside a session)"}) {
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
