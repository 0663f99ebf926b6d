package des

import (
	"bufio"
	"bytes"
	"encoding/json"
	"github.com/deterministic-exec/des/rego"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/internal/decisionlog"
	"github.com/deterministic-exec/des/policy"
)

func loggedEvents(t testing.TB, root string) []decisionlog.Event {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, DecisionsDir, "*.jsonl"))
	var out []decisionlog.Event
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var ev decisionlog.Event
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out = append(out, ev)
		}
	}
	return out
}

func TestEvaluateWritesDecisionLog(t *testing.T) {
	t.Parallel()
	root, state := t.TempDir(), t.TempDir()
	now := time.Date(2026, 11, 25, 18, 30, 0, 42, time.FixedZone("CET", 3600))
	e, err := New(t.Context(), WithRoot(root), WithClock(func() time.Time { return now }),
		WithEnv(env(map[string]string{"DES_DECISION_LOG_MASK": "/input/call/prompt", "DES_STATE_DIR": state})))
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]any{
		"tool":   "Write",
		"writes": []any{map[string]any{"path": ".des/config.json", "tool": "Write"}},
		"call":   map[string]any{"prompt": "the secret plan", "subagent_type": "coder"},
	}
	d, err := e.Evaluate(t.Context(), policy.ToolUse, in)
	if err != nil || d.Allowed() {
		t.Fatalf("decision %+v, %v; want a deny", d, err)
	}
	if _, ok := in["call"].(map[string]any)["prompt"]; !ok {
		t.Error("masking edited the caller's input")
	}
	evs := loggedEvents(t, root)
	if len(evs) != 1 {
		t.Fatalf("%d events logged, want 1", len(evs))
	}
	ev := evs[0]
	id, err := os.ReadFile(filepath.Join(state, installationIDFile))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Labels["id"] != strings.TrimSpace(string(id)) || ev.Labels["app"] != "des" || ev.Labels["version"] == "" {
		t.Errorf("labels %v (installation id %q)", ev.Labels, id)
	}
	if ev.Path != "des/gates/tool_use" || ev.Bundles["des"].Revision != rego.Revision() || ev.Labels["decision_point"] != "embedded" || !ev.Timestamp.Equal(now) || ev.Timestamp.Location() != time.UTC {
		t.Errorf("path %q, bundles %v, timestamp %v", ev.Path, ev.Bundles, ev.Timestamp)
	}
	if len(ev.DecisionID) != 36 || ev.Metrics["timer_rego_query_eval_ns"] == nil || ev.Error != nil {
		t.Errorf("decision id %q, metrics %v, error %v", ev.DecisionID, ev.Metrics, ev.Error)
	}
	if !slices.Equal(ev.Erased, []string{"/input/call/prompt"}) {
		t.Errorf("erased %v, want the prompt", ev.Erased)
	}
	input := (*ev.Input).(map[string]any)
	if _, ok := input["call"].(map[string]any)["prompt"]; ok || input["tool"] != "Write" {
		t.Errorf("input %v: prompt kept or facts lost", input)
	}
	result := (*ev.Result).(map[string]any)
	deny := result["deny"].([]any)
	if len(deny) != len(d.Deny) || deny[0].(map[string]any)["code"] != d.Deny[0].Code || deny[0].(map[string]any)["msg"] != d.Deny[0].Message {
		t.Errorf("result deny %v, decision %v", deny, d.Deny)
	}
	if _, ok := result["warn"].([]any); !ok {
		t.Errorf("result has no warn array: %v", result)
	}
	if _, ok := result["exception"]; ok {
		t.Errorf("result has an exception set, but nothing was waived: %v", result)
	}
	ignore, _ := os.ReadFile(filepath.Join(root, DecisionsDir, ".gitignore"))
	if !strings.Contains(string(ignore), "\n*\n") {
		t.Errorf("%s/.gitignore = %q", DecisionsDir, ignore)
	}
}

// Waived violations are in the deny or warn set, as the policy yielded
// them, and their codes in the exception set.
func TestDecisionResultKeepsWaived(t *testing.T) {
	t.Parallel()
	d := policy.Decision{
		Deny:   []policy.Violation{{Code: "A", Message: "a", Severity: policy.Deny, Field: "/x", Recovery: []string{"fix"}, Details: map[string]any{"phase": "p1"}}},
		Waived: []policy.Violation{{Code: "B", Message: "b", Severity: policy.Deny}, {Code: "C", Message: "c", Severity: policy.Warn}},
		Info:   map[string]any{"level": "full"},
	}
	got, _ := json.Marshal(decisionResult(d))
	want := `{"deny":[{"code":"A","field":"/x","msg":"a","phase":"p1","recovery":["fix"]},{"code":"B","msg":"b"}],"exception":["B","C"],"info":{"level":"full"},"warn":[{"code":"C","msg":"c"}]}`
	if string(got) != want {
		t.Errorf("result\n got %s\nwant %s", got, want)
	}
}

// A decision that cannot be logged is still the decision; the failure is
// a warning.
func TestDecisionLogFailureKeepsDecision(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".des"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, DecisionsDir), []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	e, err := New(t.Context(), WithRoot(root), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
		WithEnv(env(map[string]string{"DES_DECISION_LOG": "on", "DES_STATE_DIR": t.TempDir()})))
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]any{"writes": []any{map[string]any{"path": ".des/config.json", "tool": "Write"}}}
	d, err := e.Evaluate(t.Context(), policy.ToolUse, in)
	if err != nil || d.Allowed() {
		t.Errorf("decision %+v, %v; want the deny, no error", d, err)
	}
	if !strings.Contains(logs.String(), "decision not logged") {
		t.Errorf("no warning: %q", logs.String())
	}
}

func TestDecisionLogOffWritesNothing(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	e, err := New(t.Context(), WithRoot(root), WithEnv(env(map[string]string{"DES_DECISION_LOG": "off", "DES_STATE_DIR": t.TempDir()})))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Evaluate(t.Context(), policy.ToolUse, map[string]any{"writes": []any{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, DecisionsDir)); !os.IsNotExist(err) {
		t.Errorf("%s exists with decision_log off (%v)", DecisionsDir, err)
	}
}

// BenchmarkEvaluateDecisionLog is the cost logging adds to one decision:
// compare off with on (masking, encoding, one append).
func BenchmarkEvaluateDecisionLog(b *testing.B) {
	in := map[string]any{
		"tool":   "Write",
		"writes": []any{map[string]any{"path": ".des/config.json", "tool": "Write"}},
		"call":   map[string]any{"prompt": strings.Repeat("a prompt ", 200), "subagent_type": "coder"},
	}
	for _, mode := range []string{"off", "on"} {
		b.Run(mode, func(b *testing.B) {
			root := b.TempDir()
			e, err := New(b.Context(), WithRoot(root), WithEnv(env(map[string]string{"DES_DECISION_LOG": mode, "DES_STATE_DIR": b.TempDir(), "DES_DECISION_LOG_MAX_BYTES": "1099511627776"})))
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := e.Evaluate(b.Context(), policy.ToolUse, in); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if logged := len(loggedEvents(b, root)); (mode == "on") != (logged > 0) {
				b.Errorf("decision_log %s: %d events logged", mode, logged)
			}
		})
	}
}

func TestDecisionLogMaskSetting(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, c := range []struct {
		env     string
		want    []string
		wantErr string
	}{
		{"/input/call/prompt, /input/command", []string{"/input/call/prompt", "/input/command"}, ""},
		{"/input/call//prompt", nil, "empty segment"},
		{"/input/call/", nil, "empty segment"},
		{"/call/prompt", nil, "not a JSON pointer under /input/ or /result/"},
	} {
		cfg, err := LoadConfig(root, env(map[string]string{"DES_DECISION_LOG_MASK": c.env}))
		switch {
		case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), "decision_log_mask")):
			t.Errorf("%q: err = %v, want one naming decision_log_mask: %s", c.env, err, c.wantErr)
		case c.wantErr == "" && (err != nil || !slices.Equal(cfg.DecisionLogMask, c.want)):
			t.Errorf("%q: %q, %v; want %q", c.env, cfg.DecisionLogMask, err, c.want)
		}
	}
	writeConfig(t, root, `{"decision_log_mask": []}`)
	if cfg, err := LoadConfig(root, env(nil)); err != nil || len(cfg.DecisionLogMask) != 0 {
		t.Errorf("an empty list in the file: %q, %v; want no mask", cfg.DecisionLogMask, err)
	}
}

// A gate that cannot decide is logged with OPA's error fields and no
// result: a rule that conflicts at evaluation, policies that do not parse.
func TestDecisionLogRecordsErrors(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct{ rego, code string }{
		"conflict": {"package des.gates.tool_use\n\ninfo := 1\n\ninfo := 2 if input.tool\n", "eval_conflict_error"},
		"syntax":   {"package des.gates.tool_use\n\ndeny contains x if {\n", "internal_error"},
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			writeConfig(t, root, `{"decision_log": "on"}`)
			dir := filepath.Join(root, ".des", "policies")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "team.rego"), []byte(c.rego), 0o644); err != nil {
				t.Fatal(err)
			}
			e, err := New(t.Context(), WithRoot(root), WithLazyPolicies(), WithEnv(env(map[string]string{"DES_STATE_DIR": t.TempDir()})))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.Evaluate(t.Context(), policy.ToolUse, map[string]any{"tool": "Write", "writes": []any{}}); err == nil {
				t.Fatal("no error")
			}
			evs := loggedEvents(t, root)
			if len(evs) != 1 || evs[0].Error == nil || evs[0].Result != nil || evs[0].Input == nil {
				t.Fatalf("events %+v; want one with its input, an error and no result", evs)
			}
			if evs[0].Error.Code != c.code || !strings.Contains(evs[0].Error.Message, "team.rego") {
				t.Errorf("error %+v, want code %s and a message naming the file", *evs[0].Error, c.code)
			}
		})
	}
}

// One Engine shared by goroutines logs every decision once, whole.
func TestDecisionLogConcurrentEvaluate(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	e, err := New(t.Context(), WithRoot(root), WithEnv(env(map[string]string{"DES_DECISION_LOG_MASK": "/input/call/prompt", "DES_STATE_DIR": t.TempDir()})))
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]any{"tool": "Agent", "writes": []any{}, "call": map[string]any{"prompt": "p"}}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 25 {
				if _, err := e.Evaluate(t.Context(), policy.ToolUse, in); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	evs := loggedEvents(t, root)
	ids := map[string]bool{}
	for _, ev := range evs {
		ids[ev.DecisionID] = true
		if !slices.Equal(ev.Erased, []string{"/input/call/prompt"}) {
			t.Fatalf("event %s: erased %v", ev.DecisionID, ev.Erased)
		}
	}
	if len(evs) != 200 || len(ids) != 200 {
		t.Errorf("%d events, %d distinct ids; want 200", len(evs), len(ids))
	}
}

// Masking the result edits the logged copy, never the decision the caller
// acts on.
func TestDecisionLogMaskLeavesDecision(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	e, err := New(t.Context(), WithRoot(root), WithEnv(env(map[string]string{
		"DES_DECISION_LOG": "on", "DES_STATE_DIR": t.TempDir(), "DES_DECISION_LOG_MASK": "/result/info/level,/result/info/phases/current",
	})))
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]any{"tool": "Agent", "call": map[string]any{"prompt": "p", "subagent_type": "x"}, "prompt": map[string]any{"validation": "required"}}
	d, err := e.Evaluate(t.Context(), policy.PreInvocation, in)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Info["level"]; !ok {
		t.Fatalf("decision info %v: the mask reached it", d.Info)
	}
	if _, ok := d.Info["phases"].(map[string]any)["current"]; !ok {
		t.Fatalf("decision info %v: the mask reached it", d.Info)
	}
	ev := loggedEvents(t, root)[0]
	info := (*ev.Result).(map[string]any)["info"].(map[string]any)
	if _, ok := info["level"]; ok || len(ev.Erased) != 2 {
		t.Errorf("logged info %v, erased %v: not masked", info, ev.Erased)
	}
}

// Without an installation id (a state directory des cannot write) the
// decisions are still logged, without labels.id, and the problem is said.
func TestDecisionLogWithoutInstallationID(t *testing.T) {
	t.Parallel()
	root, state := t.TempDir(), filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(state, []byte("a file where the state directory should be"), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	e, err := New(t.Context(), WithRoot(root), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
		WithEnv(env(map[string]string{"DES_DECISION_LOG": "on", "DES_STATE_DIR": state})))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Evaluate(t.Context(), policy.ToolUse, map[string]any{"writes": []any{}}); err != nil {
		t.Fatal(err)
	}
	evs := loggedEvents(t, root)
	if len(evs) != 1 || evs[0].Labels["id"] != "" || evs[0].Labels["app"] != "des" {
		t.Errorf("events %+v; want one without labels.id", evs)
	}
	if !strings.Contains(logs.String(), "no installation id") {
		t.Errorf("no warning: %q", logs.String())
	}
}

// Each event carries the audit trail's head as it stood before the
// decision (none before the first line), and AuditHeads reads them back.
func TestDecisionLogRecordsAuditHead(t *testing.T) {
	t.Parallel()
	root, state := t.TempDir(), t.TempDir()
	e, err := New(t.Context(), WithRoot(root), WithEnv(env(map[string]string{"DES_DECISION_LOG": "on", "DES_STATE_DIR": state})))
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]any{"tool": "Write", "writes": []any{map[string]any{"path": "src/a.go", "tool": "Write"}}}
	if _, err := e.Evaluate(t.Context(), policy.ToolUse, in); err != nil {
		t.Fatal(err)
	}
	if err := e.Audit().Append(t.Context(), audit.Entry{Event: audit.HookError, Fields: map[string]any{"error": "x"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Evaluate(t.Context(), policy.ToolUse, in); err != nil {
		t.Fatal(err)
	}
	evs := loggedEvents(t, root)
	if len(evs) != 2 || evs[0].AuditHead != nil || evs[1].AuditHead == nil {
		t.Fatalf("events %+v", evs)
	}
	head, ok := e.Audit().Head()
	if h := evs[1].AuditHead; !ok || h.Seq != 1 || h.SHA256 != head.SHA256 || h.Dir != head.Dir || !head.Of(e.Audit().Dir()) {
		t.Errorf("des_audit_head %+v, trail's head %+v", h, head)
	}
	heads, err := decisionlog.AuditHeads(filepath.Join(root, DecisionsDir))
	if err != nil || len(heads) != 1 || heads[0].AuditHead != *evs[1].AuditHead || heads[0].Line != 2 || !heads[0].Time.Equal(evs[1].Timestamp) {
		t.Errorf("AuditHeads = %+v, %v", heads, err)
	}
}
