package gate_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/gate"
)

func ptr(s string) *string { return &s }

func TestIncoming(t *testing.T) {
	t.Parallel()
	disk := []byte(`{"a": 1, "b": 1}`)
	cases := []struct {
		name string
		call gate.WriteCall
		disk []byte
		want string
		ok   bool
	}{
		{"write", gate.WriteCall{Content: ptr("new")}, disk, "new", true},
		{"write a new file", gate.WriteCall{Content: ptr("new")}, nil, "new", true},
		{"edit", gate.WriteCall{Edits: []gate.Edit{{Old: `"a": 1`, New: `"a": 2`}}}, disk, `{"a": 2, "b": 1}`, true},
		{"edit not unique", gate.WriteCall{Edits: []gate.Edit{{Old: `1`, New: `2`}}}, disk, "", false},
		{"edit replace all", gate.WriteCall{Edits: []gate.Edit{{Old: `1`, New: `2`, ReplaceAll: true}}}, disk, `{"a": 2, "b": 2}`, true},
		{"edit missing text", gate.WriteCall{Edits: []gate.Edit{{Old: `"c"`, New: `"d"`}}}, disk, "", false},
		{"edit missing file", gate.WriteCall{Edits: []gate.Edit{{Old: `a`, New: `b`}}}, nil, "", false},
		{"multi edit in order", gate.WriteCall{Edits: []gate.Edit{{Old: `"a": 1`, New: `"a": 9`}, {Old: `"a": 9, "b": 1`, New: `"a": 9, "b": 9`}}}, disk, `{"a": 9, "b": 9}`, true},
		{"multi edit one fails", gate.WriteCall{Edits: []gate.Edit{{Old: `"a": 1`, New: `"a": 9`}, {Old: `"zz"`, New: `x`}}}, disk, "", false},
	}
	for _, c := range cases {
		got, ok := gate.Incoming(c.call, c.disk)
		if ok != c.ok || string(got) != c.want {
			t.Errorf("%s: Incoming = %q, %v; want %q, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

func TestDocumentKinds(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	guard := p.eng.DocumentWriteGate()
	for path, want := range map[string]string{
		stepRel:                                              gate.KindStep,
		filepath.Join(p.root, stepRel):                       gate.KindStep,
		".des/state.json":                                    gate.KindState,
		".isdlc/state.json":                                  gate.KindState,
		".isdlc/projects/shop/state.json":                    gate.KindState,
		".isdlc/projects/shop/other.json":                    "",
		"docs/feature/shop/steps/notes.md":                   "",
		"src/state.json":                                     "",
		filepath.Join(p.root, "..", "x", "steps", "01.json"): "",
	} {
		if kind, _ := guard.Kind(path); kind != want {
			t.Errorf("Kind(%s) = %q, want %q", path, kind, want)
		}
	}
}

// stepDoc is a step file with a task status and phases given as name, status, outcome, blocked_by.
func stepDoc(task string, phases ...[4]string) string {
	var log []any
	for _, p := range phases {
		e := map[string]any{"phase_name": p[0], "status": p[1], "outcome": nil, "blocked_by": nil}
		if p[2] != "" {
			e["outcome"] = p[2]
		}
		if p[3] != "" {
			e["blocked_by"] = p[3]
		}
		log = append(log, e)
	}
	b, _ := json.MarshalIndent(map[string]any{"task_id": "01-01", "state": map[string]any{"status": task}, "tdd_cycle": map[string]any{"phase_execution_log": log}}, "", "  ")
	return string(b) + "\n"
}

func (p *project) write(tool, content string) gate.Result {
	p.t.Helper()
	res, err := p.eng.CheckWrite(p.t.Context(), gate.WriteCall{Tool: tool, Path: filepath.Join(p.root, stepRel), Content: &content, ToolUseID: "toolu_w1", SessionID: "s"})
	if err != nil {
		p.t.Fatalf("CheckWrite: %v", err)
	}
	return res
}

func TestStepWrites(t *testing.T) {
	t.Parallel()
	disk := stepDoc("IN_PROGRESS", [4]string{"PREPARE", "EXECUTED", "PASS", ""}, [4]string{"RED_ACCEPTANCE", "IN_PROGRESS", "", ""}, [4]string{"RED_UNIT", "NOT_EXECUTED", "", ""})
	cases := []struct {
		name     string
		incoming string
		want     []string
	}{
		{"phase completes", stepDoc("IN_PROGRESS", [4]string{"PREPARE", "EXECUTED", "PASS", ""}, [4]string{"RED_ACCEPTANCE", "EXECUTED", "FAIL", ""}, [4]string{"RED_UNIT", "IN_PROGRESS", "", ""}), nil},
		{"phase jumps", stepDoc("IN_PROGRESS", [4]string{"PREPARE", "EXECUTED", "PASS", ""}, [4]string{"RED_ACCEPTANCE", "IN_PROGRESS", "", ""}, [4]string{"RED_UNIT", "EXECUTED", "PASS", ""}), []string{"DES-PHASE-JUMP"}},
		{"terminal phase reopened", stepDoc("IN_PROGRESS", [4]string{"PREPARE", "IN_PROGRESS", "", ""}, [4]string{"RED_ACCEPTANCE", "IN_PROGRESS", "", ""}, [4]string{"RED_UNIT", "NOT_EXECUTED", "", ""}), []string{"DES-PHASE-JUMP"}},
		{"executed without outcome", stepDoc("IN_PROGRESS", [4]string{"PREPARE", "EXECUTED", "PASS", ""}, [4]string{"RED_ACCEPTANCE", "EXECUTED", "", ""}, [4]string{"RED_UNIT", "NOT_EXECUTED", "", ""}), []string{"DES-PHASE-NO-OUTCOME"}},
		{"skipped without reason", stepDoc("IN_PROGRESS", [4]string{"PREPARE", "EXECUTED", "PASS", ""}, [4]string{"RED_ACCEPTANCE", "SKIPPED", "", ""}, [4]string{"RED_UNIT", "NOT_EXECUTED", "", ""}), []string{"DES-PHASE-INVALID-SKIP"}},
		{"task back to todo", stepDoc("TODO", [4]string{"PREPARE", "EXECUTED", "PASS", ""}, [4]string{"RED_ACCEPTANCE", "IN_PROGRESS", "", ""}, [4]string{"RED_UNIT", "NOT_EXECUTED", "", ""}), []string{"DES-TASK-TRANSITION"}},
		{"not json", `{"task_id": "01-01",`, []string{"DES-STEPFILE-SCHEMA"}},
		{"schema", strings.Replace(disk, `"IN_PROGRESS"`, `"WORKING"`, 1), []string{"DES-STEPFILE-SCHEMA"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newProject(t, nil)
			p.writeStep(stepRel, disk)
			res := p.write("Write", c.incoming)
			if !res.Evaluated || !cmp.Equal(res.Decision.Codes(), c.want, cmpEmpty) {
				t.Fatalf("codes = %v, want %v\n%s", res.Decision.Codes(), c.want, res.Reason())
			}
			events := p.auditEvents()
			if c.want != nil && (len(events) != 1 || events[0].Event != audit.DocumentWriteBlocked) {
				t.Errorf("audit = %+v, want one DOCUMENT_WRITE_BLOCKED", events)
			}
			if c.want == nil && len(events) != 0 {
				t.Errorf("an allowed write was recorded before PostToolUse confirmed it: %+v", events)
			}
			if raw, _ := os.ReadFile(filepath.Join(p.root, stepRel)); string(raw) != disk {
				t.Error("the guard changed the file on disk")
			}
		})
	}
}

var cmpEmpty = cmp.Comparer(func(a, b []string) bool { return slices.Equal(a, b) })

// An allowed write's phase changes are recorded only once PostToolUse sees
// the file hold what was allowed.
func TestStepWriteConfirmedAtPostToolUse(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	disk := stepDoc("IN_PROGRESS", [4]string{"PREPARE", "IN_PROGRESS", "", ""})
	incoming := stepDoc("IN_PROGRESS", [4]string{"PREPARE", "EXECUTED", "PASS", ""}, [4]string{"RED_ACCEPTANCE", "IN_PROGRESS", "", ""})
	p.writeStep(stepRel, disk)
	if res := p.write("Write", incoming); res.Denied() {
		t.Fatal(res.Reason())
	}
	// The write was refused (a permission prompt): nothing is confirmed.
	if ok, err := p.eng.ConfirmWrite(t.Context(), "toolu_w1"); ok || err != nil {
		t.Fatalf("confirmed a write that did not land: %v, %v", ok, err)
	}
	// It is said, not silent: the file does not hold what was allowed.
	if ev := p.auditEvents(); len(ev) != 1 || ev[0].Event != audit.WriteNotConfirmed || ev[0].Fields["step_file"] != stepRel {
		t.Fatalf("a write that did not land: trail %+v, want one WRITE_NOT_CONFIRMED", ev)
	}
	// Allowed again, and this time it lands.
	p.write("Write", incoming)
	p.writeStep(stepRel, incoming)
	if ok, err := p.eng.ConfirmWrite(t.Context(), "toolu_w1"); !ok || err != nil {
		t.Fatalf("ConfirmWrite = %v, %v", ok, err)
	}
	var got []string
	for _, e := range p.auditEvents()[1:] {
		got = append(got, string(e.Event)+" "+e.Fields["phase"].(string)+" "+e.Fields["to"].(string))
		if e.Fields["confirmed"] != true || e.Fields["tool_use_id"] != "toolu_w1" {
			t.Errorf("entry %+v is not marked confirmed", e)
		}
	}
	if want := []string{"PHASE_COMPLETED PREPARE EXECUTED", "PHASE_STARTED RED_ACCEPTANCE IN_PROGRESS"}; !cmp.Equal(got, want) {
		t.Errorf("audit = %v, want %v", got, want)
	}
	if ok, _ := p.eng.ConfirmWrite(t.Context(), "toolu_w1"); ok {
		t.Error("a write was confirmed twice")
	}
}

// A step write a formatter rewrote (same JSON value, other bytes) is
// confirmed with the bytes on disk, for the effect check's baseline; the
// bytes allowed, as written, are confirmed with none.
func TestStepWriteConfirmedReformatted(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	disk := stepDoc("IN_PROGRESS", [4]string{"PREPARE", "IN_PROGRESS", "", ""})
	incoming := stepDoc("IN_PROGRESS", [4]string{"PREPARE", "EXECUTED", "PASS", ""}, [4]string{"RED_ACCEPTANCE", "IN_PROGRESS", "", ""})
	p.writeStep(stepRel, disk)
	if res := p.write("Write", incoming); res.Denied() {
		t.Fatal(res.Reason())
	}
	var doc any
	if err := json.Unmarshal([]byte(incoming), &doc); err != nil {
		t.Fatal(err)
	}
	tabs, _ := json.MarshalIndent(doc, "", "\t")
	p.writeStep(stepRel, string(tabs))
	c, err := p.eng.ConfirmWriteResult(t.Context(), "toolu_w1")
	if err != nil || !c.Confirmed || c.Mismatch != "" || c.Path != stepRel || string(c.Reformatted) != string(tabs) {
		t.Fatalf("ConfirmWriteResult = %+v, %v; want confirmed with the reformatted bytes", c, err)
	}

	// The bytes allowed, as they were written: nothing to add.
	p = newProject(t, nil)
	p.writeStep(stepRel, disk)
	p.write("Write", incoming)
	p.writeStep(stepRel, incoming)
	if c, err := p.eng.ConfirmWriteResult(t.Context(), "toolu_w1"); err != nil || !c.Confirmed || c.Reformatted != nil {
		t.Fatalf("ConfirmWriteResult of the bytes allowed = %+v, %v", c, err)
	}
}

func TestStepEditRegressionBlocked(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	disk := stepDoc("IN_PROGRESS", [4]string{"PREPARE", "EXECUTED", "PASS", ""})
	p.writeStep(stepRel, disk)
	res, err := p.eng.CheckWrite(t.Context(), gate.WriteCall{Tool: "Edit", Path: stepRel,
		Edits: []gate.Edit{{Old: `"status": "EXECUTED"`, New: `"status": "IN_PROGRESS"`}}})
	if err != nil || !cmp.Equal(res.Decision.Codes(), []string{"DES-PHASE-JUMP"}) {
		t.Errorf("codes %v, err %v", res.Decision.Codes(), err)
	}
	// An edit Claude Code will refuse (text not found) gets no opinion.
	res, err = p.eng.CheckWrite(t.Context(), gate.WriteCall{Tool: "Edit", Path: stepRel, Edits: []gate.Edit{{Old: "absent", New: "x"}}})
	if err != nil || res.Evaluated {
		t.Errorf("refused edit: %+v, %v", res, err)
	}
}

func TestUnguardedWriteIsNotEvaluated(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	res, err := p.eng.CheckWrite(t.Context(), gate.WriteCall{Tool: "Write", Path: "src/main.go", Content: ptr("package main")})
	if err != nil || res.Evaluated {
		t.Errorf("unguarded write: %+v, %v", res, err)
	}
}

func TestBashWritesToGuardedDocuments(t *testing.T) {
	p := newProject(t, nil)
	t.Setenv("HOME", filepath.Dir(p.root)) // ~/<project> names the project
	p.writeStep(stepRel, todoStep())
	p.writeStep(".isdlc/state.json", map[string]any{"state_version": 1})
	for _, d := range []string{"node_modules/x/steps", "docs/feature/shop/build"} {
		if err := os.MkdirAll(filepath.Join(p.root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cases := map[string][]string{
		`echo '{}' > .isdlc/state.json`:                                  {"DES-STATE-BASH-WRITE"},
		`cd docs/feature/shop && sed -i 's/TODO/DONE/' steps/01-01.json`: {"DES-STATE-BASH-WRITE"},
		"cat x.json | tee .des/state.json >/dev/null":                    {"DES-STATE-BASH-WRITE"},
		`python3 -c "open('.isdlc/state.json','w').write('{}')"`:         {"DES-STATE-BASH-WRITE"},
		"rm -rf .isdlc": {"DES-STATE-BASH-WRITE"},
		"echo 'package x' > .des/policies/relax.rego": {"DES-PROTECTED-PATH"},
		"rm -rf .des":                         {"DES-PROTECTED-PATH"},
		"cat .isdlc/state.json | jq .":        nil,
		`F=.isdlc/state.json; echo '{}' > $F`: {"DES-STATE-BASH-WRITE"},
		`echo '{}' > ~/` + filepath.Base(p.root) + `/.isdlc/state.json`: {"DES-STATE-BASH-WRITE"},
		`cd /nonexistent; echo X > .isdlc/state.json`:                   {"DES-STATE-BASH-WRITE"},
		`echo > $'\x2eisdlc/state.json'`:                                {"DES-STATE-BASH-WRITE"},
		`ln .des/config.json c.json && echo '{}' > c.json`:              {"DES-PROTECTED-PATH"},
		"go test ./... > test.log 2>&1":                                 nil,
	}
	for cmd, want := range cases {
		res, err := p.eng.CheckBash(t.Context(), gate.BashCall{Command: cmd})
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		got := slices.Compact(res.Decision.Codes())
		if !cmp.Equal(got, want, cmpEmpty) {
			t.Errorf("%s: codes = %v, want %v\n%s", cmd, got, want, res.Reason())
		}
		if want == nil && res.Evaluated {
			t.Errorf("%s: evaluated a command that writes nothing of DES's", cmd)
		}
	}
}

func TestIncomingClaudeCodeEditConventions(t *testing.T) {
	t.Parallel()
	create := gate.WriteCall{Edits: []gate.Edit{{Old: "", New: `{"a": 1}`}}}
	for _, disk := range [][]byte{nil, []byte(""), []byte("  \n")} {
		if got, ok := gate.Incoming(create, disk); !ok || string(got) != `{"a": 1}` {
			t.Errorf("empty old_string on %q: %q, %v", disk, got, ok)
		}
	}
	if _, ok := gate.Incoming(create, []byte("x")); ok {
		t.Error("empty old_string on a file with content must be refused")
	}
	crlf := []byte("{\r\n  \"a\": 1,\r\n  \"b\": 2\r\n}\r\n")
	got, ok := gate.Incoming(gate.WriteCall{Edits: []gate.Edit{{Old: "\"a\": 1,\n  \"b\": 2", New: "\"a\": 9,\n  \"b\": 2"}}}, crlf)
	if !ok || string(got) != "{\r\n  \"a\": 9,\r\n  \"b\": 2\r\n}\r\n" {
		t.Errorf("CRLF edit: %q, %v", got, ok)
	}
}

// A removed phase, a duplicate phase name, an Edit that creates the file,
// and a FIFO where a document should be: the review's cases.
func TestStepWriteEvasions(t *testing.T) {
	t.Parallel()
	p := newProject(t, nil)
	disk := stepDoc("IN_PROGRESS", [4]string{"PREPARE", "EXECUTED", "FAIL", ""}, [4]string{"RED_UNIT", "NOT_EXECUTED", "", ""})
	p.writeStep(stepRel, disk)
	if res := p.write("Write", stepDoc("IN_PROGRESS", [4]string{"RED_UNIT", "NOT_EXECUTED", "", ""})); !slices.Contains(res.Decision.Codes(), "DES-PHASE-JUMP") {
		t.Errorf("removed phase: %v", res.Decision.Codes())
	}
	dup := stepDoc("IN_PROGRESS", [4]string{"PREPARE", "EXECUTED", "FAIL", ""}, [4]string{"PREPARE", "EXECUTED", "PASS", ""}, [4]string{"RED_UNIT", "NOT_EXECUTED", "", ""})
	if res := p.write("Write", dup); !slices.Contains(res.Decision.Codes(), "DES-STEPFILE-SCHEMA") {
		t.Errorf("duplicate phase: %v", res.Decision.Codes())
	}
	p.writeStep(stepRel, dup) // a file that already repeats a phase must not break the guard
	if _, err := p.eng.CheckWrite(t.Context(), gate.WriteCall{Tool: "Write", Path: stepRel, Content: &dup}); err != nil {
		t.Errorf("write over a file with a repeated phase: %v", err)
	}
	newFile := "docs/feature/shop/steps/01-02.json"
	res, err := p.eng.CheckWrite(t.Context(), gate.WriteCall{Tool: "Edit", Path: newFile, Edits: []gate.Edit{{New: stepDoc("DONE", [4]string{"PREPARE", "EXECUTED", "PASS", ""})}}})
	if err != nil || !res.Denied() {
		t.Errorf("Edit creating a step file: %+v, %v", res.Decision.Codes(), err)
	}
	fifo := filepath.Join(p.root, "docs", "feature", "shop", "steps", "01-03.json")
	if err := mkfifo(fifo); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	content := "{}"
	if _, err := p.eng.CheckWrite(t.Context(), gate.WriteCall{Tool: "Write", Path: fifo, Content: &content}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("FIFO: err = %v", err)
	}
}
