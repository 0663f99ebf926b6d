package taskgraph_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/deterministic-exec/des/internal/filelock"
	"github.com/deterministic-exec/des/internal/taskgraph"
	"github.com/google/go-cmp/cmp"
)

// helperEnv makes the test binary run one Sync and exit, so that a test can
// race real processes: "<path>|<phase>|<verdict>".
const helperEnv = "TASKGRAPH_SYNC_HELPER"

func TestMain(m *testing.M) {
	if v, ok := os.LookupEnv(helperEnv); ok {
		parts := strings.Split(v, "|")
		u, err := taskgraph.Sync(context.Background(), parts[0], parts[1], taskgraph.Outcome{Verdict: parts[2]}, nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_ = json.NewEncoder(os.Stdout).Encode(u)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func example(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("testdata/active_task_graph.json")
	if err != nil {
		t.Fatal(err)
	}
	return writeGraph(t, string(data))
}

func writeGraph(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "active_task_graph.json")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func load(t *testing.T, path string) *taskgraph.Graph {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	g, _, err := taskgraph.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestParseDefaults(t *testing.T) {
	g, doc, err := taskgraph.Parse([]byte(`{"waves":[{"phases":[
		{"phase_id":"a","type":"implementation","status":null,"depends_on":null,"retries":null,"is_atomic":null},
		{"phase_id":"b","type":"verification","verifies_phase_id":"a","status":"completed","retries":2.0}]}],
		"max_retries":null,"current_wave":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if g.MaxRetries != 3 || g.CurrentWave != 0 || g.Waves[0].ParallelExecution || g.Waves[0].WaveID != -1 {
		t.Errorf("graph defaults: %+v", g)
	}
	a, _ := g.Phase("a")
	want := taskgraph.Phase{PhaseID: "a", Type: "implementation", DependsOn: []string{}, Status: "pending"}
	if diff := cmp.Diff(want, a); diff != "" {
		t.Errorf("phase a (-want +got):\n%s", diff)
	}
	if b, _ := g.Phase("b"); b.Retries != 2 || b.Status != "completed" || b.VerifiesPhaseID != "a" {
		t.Errorf("phase b: %+v", b)
	}
	if _, ok := doc["max_retries"]; !ok {
		t.Error("the document must stay as written (null kept)")
	}
	for _, bad := range []struct {
		in   string
		want error
	}{
		{`{"waves": [`, taskgraph.ErrInvalidJSON},
		{`{} {}`, taskgraph.ErrInvalidJSON},
		{`[]`, taskgraph.ErrNotObject},
		{`null`, taskgraph.ErrNotObject},
	} {
		if _, _, err := taskgraph.Parse([]byte(bad.in)); !errors.Is(err, bad.want) {
			t.Errorf("Parse(%s) = %v, want %v", bad.in, err, bad.want)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		doc  string
		want []string // pointers
	}{
		{"example", mustRead(t, "testdata/active_task_graph.json"), nil},
		{"minimal", `{"waves":[]}`, nil},
		{"nulls and unknown fields", `{"waves":[{"phases":[{"phase_id":"a","type":"docs","status":null,"x":{"y":1}}],"wave_id":null,"extra":true}],"tier":null,"team":"t"}`, nil},
		{"no waves", `{}`, []string{""}},
		{"wave without phases", `{"waves":[{}]}`, []string{"/waves/0"}},
		{"phase without id and type", `{"waves":[{"phases":[{}]}]}`, []string{"/waves/0/phases/0"}},
		{"bad status", `{"waves":[{"phases":[{"phase_id":"a","type":"implementation","status":"done"}]}]}`, []string{"/waves/0/phases/0/status"}},
		{"bad id", `{"waves":[{"phases":[{"phase_id":"a b","type":"implementation"}]}]}`, []string{"/waves/0/phases/0/phase_id"}},
		{"wrong types", `{"current_wave":-1,"max_retries":"3","waves":[{"parallel_execution":"yes","phases":[{"phase_id":"a","type":"","retries":1.5,"depends_on":"b"}]}]}`,
			[]string{"/current_wave", "/max_retries", "/waves/0/parallel_execution", "/waves/0/phases/0/depends_on", "/waves/0/phases/0/retries", "/waves/0/phases/0/type"}},
		{"manifest", `{"waves":[{"phases":[{"phase_id":"a","type":"implementation","deliverable_manifest":{"files":["a.py"]}}]}]}`, []string{"/waves/0/phases/0/deliverable_manifest/files/0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, doc, err := taskgraph.Parse([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range taskgraph.Validate(doc) {
				got = append(got, e.Pointer)
				if e.Message == "" {
					t.Errorf("empty message at %q", e.Pointer)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("pointers (-want +got):\n%s\n%v", diff, taskgraph.Validate(doc))
			}
		})
	}
	_, doc, _ := taskgraph.Parse([]byte(`{"waves":[{"phases":[{"phase_id":"a b","type":"implementation"}]}]}`))
	if msg := taskgraph.Validate(doc)[0].Error(); !strings.Contains(msg, "letters, digits") || !strings.Contains(msg, `"a b"`) {
		t.Errorf("an id error says what an id may be and what was found: %s", msg)
	}
	_, doc, _ = taskgraph.Parse([]byte(`{"waves":[{"phases":[{"phase_id":"a","type":"implementation","status":"done"}]}]}`))
	if msg := taskgraph.Validate(doc)[0].Error(); msg != `/waves/0/phases/0/status: value must be one of "pending", "in_progress", "completed", "failed", null (found "done")` {
		t.Errorf("status error: %s", msg)
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPhaseID(t *testing.T) {
	for _, tc := range []struct {
		prompt string
		want   string
	}{
		{"Phase ID: phase_0_0\nImplement calc.py", "phase_0_0"},
		{"Implement it.\nphase id: impl-auth", "impl-auth"},
		{"PHASE ID:impl.v2", "impl.v2"},
		{"  - **Phase ID:** `impl_calc`", "impl_calc"},
		{"**Phase ID**: impl_calc", "impl_calc"},
		{"## Phase ID: impl_calc (the calculator)", "impl_calc"},
		{"Phase-ID: a1", "a1"},
		{"> Phase ID: \"q\"", "q"},
		{"Phase ID: p1.", "p1"},
		{"Phase ID: p1\r\nmore", "p1"},
		{"Phase ID: a/b", ""},
		{"<!-- DES-TASK-PHASE: verify_calc -->\nVerify it", "verify_calc"},
		{"text <!--des-task-phase:x-->", "x"},
		{"Phase ID: impl_calc\n<!-- DES-TASK-PHASE: verify_calc -->", "verify_calc"}, // the marker wins
		{"Phase ID: a\nPhase ID: b", "a"},                                            // the first line wins
		{"Context from Phase ID: a", ""},                                             // not at the start of a line
		{"Phase ID: a b", "a"},
		{"Phase ID: ../x", ""},
		{"Phase ID:", ""},
		{"Phase IDs: a", ""},
		{"Phase ID: " + strings.Repeat("a", 129), ""},
		{"<!-- DES-TASK-PHASE: a b -->", ""},
		{"no phase here", ""},
	} {
		got, ok := taskgraph.PhaseID(tc.prompt)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("PhaseID(%q) = %q, %v; want %q", tc.prompt, got, ok, tc.want)
		}
	}
}

func TestVerdict(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{"All good.\nVERDICT: PASS", "PASS"},
		{"VERDICT: FAIL\n- calc.py missing", "FAIL"},
		{"**VERDICT: FAIL**", "FAIL"},
		{"**Verdict:** fail", "FAIL"},
		{"## Verdict: PASS_WITH_MINOR_ISSUES", "PASS"},
		{"verdict = Failed", "FAIL"},
		// A FAIL line anywhere wins: a later PASS may be quoted text (the
		// implementation's own report), and the message holds a FAIL.
		{"VERDICT: FAIL\n...on reflection\nVERDICT: PASS", "FAIL"},
		{"VERDICT: FAIL\n- calc.py missing\n\nThe implementer's report said:\n> VERDICT: PASS", "FAIL"},
		{"VERDICT: PASS\nVERDICT: FAIL", "FAIL"},
		{"Answer with VERDICT: PASS or VERDICT: FAIL.", ""},
		{"VERDICT: UNSURE", ""},
		{"", ""},
	} {
		if got := taskgraph.Verdict(tc.text); got != tc.want {
			t.Errorf("Verdict(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

type recorder struct {
	mu      sync.Mutex
	calls   []string
	expects [][]byte
}

func (r *recorder) Expect(path string, data []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls, r.expects = append(r.calls, "expect "+filepath.Base(path)), append(r.expects, data)
	return nil
}

func (r *recorder) Settle(_ context.Context, path string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, "settle "+filepath.Base(path))
	return nil
}

// TestSyncFlow runs the design's flow on the example graph: wave 0's
// implementations stop in parallel, the wave syncs, a verification fails
// three times and the user must decide.
func TestSyncFlow(t *testing.T) {
	path := example(t)
	ctx := context.Background()
	rec := &recorder{}
	step := func(phase, verdict string, wantKind string, wantTo string) taskgraph.Update {
		t.Helper()
		u, err := taskgraph.Sync(ctx, path, phase, taskgraph.Outcome{Verdict: verdict}, rec)
		if err != nil {
			t.Fatalf("Sync(%s): %v", phase, err)
		}
		if u.To != wantTo || u.Next.Kind != wantKind {
			t.Fatalf("Sync(%s, %q): to %s, next %s (%s); want %s, %s", phase, verdict, u.To, u.Next.Kind, u.Next, wantTo, wantKind)
		}
		if u.Next.String() == "" {
			t.Fatalf("no advice after %s", phase)
		}
		return u
	}

	// Wave 0's implementations stop together: one of them syncs the wave.
	var wave0 [2]taskgraph.Update
	var wg sync.WaitGroup
	for i, id := range []string{"impl_calc", "impl_api"} {
		wg.Go(func() {
			var err error
			if wave0[i], err = taskgraph.Sync(ctx, path, id, taskgraph.Outcome{}, rec); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	first, u := wave0[0], wave0[1]
	if first.WaveAdvanced {
		first, u = u, first
	}
	if first.WaveAdvanced || first.Next.Kind != taskgraph.NextWait || !strings.Contains(first.Next.String(), "(pending)") || len(first.Next.Later) != 1 {
		t.Errorf("the first stop of wave 0: %+v\n%s", first, first.Next)
	}
	if !u.WaveAdvanced || u.WaveBefore != 0 || u.WaveAfter != 1 || u.Next.Kind != taskgraph.NextWave {
		t.Errorf("wave sync: %+v", u)
	}
	want := "Task graph: wave 1 is now current. Delegate its phases (in parallel): verify_calc (prompt line `Phase ID: verify_calc`), verify_api (prompt line `Phase ID: verify_api`)."
	if got := u.Next.String(); got != want {
		t.Errorf("wave advice:\n got %s\nwant %s", got, want)
	}
	if len(rec.calls) != 4 || rec.calls[0] != "expect active_task_graph.json" || rec.calls[1] != "settle active_task_graph.json" {
		t.Errorf("announcements: %v", rec.calls)
	}
	if got := mustRead(t, path); string(rec.expects[1]) != got {
		t.Error("the announced content is not what was written")
	}
	// A repeated stop changes nothing.
	if u := step("impl_api", "", taskgraph.NextWave, "completed"); u.Changed || u.WaveAdvanced {
		t.Errorf("repeated stop: %+v", u)
	}
	step("verify_api", "PASS", taskgraph.NextWait, "completed")
	if u := step("verify_calc", "FAIL", taskgraph.NextReimplement, "failed"); u.ResetRetries != 1 {
		t.Fatalf("first FAIL: %+v", u)
	}
	// Meanwhile another stop in the wave shows what the wave waits for.
	if u := step("verify_api", "PASS", taskgraph.NextWait, "completed"); !strings.Contains(u.Next.String(), "verify_calc (failed; impl_calc is to be implemented again first)") {
		t.Errorf("waiting advice: %s", u.Next)
	}
	step("impl_calc", "", taskgraph.NextVerify, "completed")

	for attempt := 2; attempt <= 3; attempt++ {
		kind := taskgraph.NextReimplement
		if attempt == 3 {
			kind = taskgraph.NextEscalate
		}
		u = step("verify_calc", "FAIL", kind, "failed")
		if u.Reset != "impl_calc" || u.ResetRetries != attempt || u.WaveAdvanced {
			t.Fatalf("failed verification %d: %+v", attempt, u)
		}
		// The same stop again (a hook retried) counts once.
		if again := step("verify_calc", "FAIL", kind, "failed"); again.Changed || again.Reset != "" {
			t.Fatalf("repeated FAIL %d counted twice: %+v", attempt, again)
		}
		g := load(t, path)
		if p, _ := g.Phase("impl_calc"); p.Status != "pending" || p.Retries != attempt || g.CurrentWave != 1 {
			t.Fatalf("after FAIL %d: impl_calc %+v, wave %d", attempt, p, g.CurrentWave)
		}
		if attempt < 3 {
			if !strings.Contains(u.Next.String(), "Delegate impl_calc again with the verifier's findings (prompt line `Phase ID: impl_calc`), then verify_calc again") {
				t.Errorf("re-implementation advice: %s", u.Next)
			}
			u = step("impl_calc", "", taskgraph.NextVerify, "completed")
			if got := u.Next.String(); got != "Task graph: phase impl_calc is completed. Delegate its verification now: verify_calc (prompt line `Phase ID: verify_calc`)." {
				t.Errorf("re-verification advice: %s", got)
			}
		}
	}
	if s := u.Next.String(); !strings.Contains(s, "failed verification 3 times (max_retries 3)") || !strings.Contains(s, "ask the user") {
		t.Errorf("escalation advice: %s", s)
	}

	// Had the third attempt passed instead, the plan would go on to its end.
	path = example(t)
	for _, s := range []struct{ phase, verdict, kind string }{
		{"impl_calc", "", taskgraph.NextWait}, {"impl_api", "", taskgraph.NextWave},
		{"verify_calc", "PASS", taskgraph.NextWait}, {"verify_api", "PASS", taskgraph.NextWave},
		{"verify_integration", "PASS", taskgraph.NextComplete},
	} {
		u, err := taskgraph.Sync(ctx, path, s.phase, taskgraph.Outcome{Verdict: s.verdict}, nil)
		if err != nil || u.Next.Kind != s.kind {
			t.Fatalf("%s: %v, %s (%s)", s.phase, err, u.Next.Kind, u.Next)
		}
	}
	if g := load(t, path); !g.Complete() || g.CurrentWave != 3 {
		t.Errorf("complete plan: current_wave %d", g.CurrentWave)
	}
}

func TestSyncOutcomes(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		phase    string
		outcome  taskgraph.Outcome
		wantTo   string
		wantKind string
	}{
		{"gate 2 fails an implementation", "impl_calc", taskgraph.Outcome{GateFailed: true}, "failed", taskgraph.NextRetry},
		{"a FAIL verdict of an implementation is ignored", "impl_calc", taskgraph.Outcome{Verdict: "FAIL"}, "completed", taskgraph.NextWait},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := taskgraph.Sync(ctx, example(t), tc.phase, tc.outcome, nil)
			if err != nil || u.To != tc.wantTo || u.Next.Kind != tc.wantKind {
				t.Errorf("got %+v, %v", u, err)
			}
		})
	}
}

func TestSyncKeepsUnknownFields(t *testing.T) {
	in := `{
  "x-team": {"owner": "ana", "links": ["<a&b>", 1.50, 1e3]},
  "waves": [
    {"phases": [
      {"phase_id": "a", "type": "implementation", "notes": "keep \u00e9 me", "estimated_minutes": 10.0},
      {"phase_id": "b", "type": "implementation", "status": null, "retries": 0}
    ], "colour": "blue"},
    {"phases": [{"phase_id": "v", "type": "verification", "verifies_phase_id": "a", "status": "pending"}]}
  ],
  "trailer": [1, 2, 3]
}
`
	path := writeGraph(t, in)
	ctx := context.Background()
	for _, p := range []string{"a", "b"} {
		if _, err := taskgraph.Sync(ctx, path, p, taskgraph.Outcome{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := taskgraph.Sync(ctx, path, "v", taskgraph.Outcome{Verdict: "FAIL"}, nil); err != nil {
		t.Fatal(err)
	}
	want := `{
  "x-team": {"owner": "ana", "links": ["<a&b>", 1.50, 1e3]},
  "waves": [
    {"phases": [
      {"phase_id": "a", "type": "implementation", "notes": "keep \u00e9 me", "estimated_minutes": 10.0, "status": "pending", "retries": 1},
      {"phase_id": "b", "type": "implementation", "status": "completed", "retries": 0}
    ], "colour": "blue"},
    {"phases": [{"phase_id": "v", "type": "verification", "verifies_phase_id": "a", "status": "failed"}]}
  ],
  "trailer": [1, 2, 3],
  "current_wave": 1
}
`
	if diff := cmp.Diff(want, mustRead(t, path)); diff != "" {
		t.Errorf("rewritten graph (-want +got):\n%s", diff)
	}
}

func TestSyncErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(example(t), link); err != nil {
		t.Skip(err)
	}
	for _, tc := range []struct {
		name string
		path string
		want error
	}{
		{"missing", filepath.Join(dir, "none.json"), fs.ErrNotExist},
		{"symbolic link", link, taskgraph.ErrNotRegular},
		{"unknown phase", example(t), taskgraph.ErrUnknownPhase},
		{"invalid JSON", writeGraph(t, `{"waves":`), taskgraph.ErrInvalid},
		{"schema", writeGraph(t, `{"waves":[{"phases":[{"phase_id":"nope"}]}]}`), taskgraph.ErrInvalid},
		{"repeated id", writeGraph(t, `{"waves":[{"phases":[{"phase_id":"nope","type":"x"},{"phase_id":"nope","type":"x"}]}]}`), taskgraph.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before []byte
			if b, err := os.ReadFile(tc.path); err == nil {
				before = b
			}
			_, err := taskgraph.Sync(ctx, tc.path, "nope", taskgraph.Outcome{}, nil)
			if !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
			if b, _ := os.ReadFile(tc.path); string(b) != string(before) {
				t.Error("the file was changed")
			}
		})
	}
	t.Run("held lock", func(t *testing.T) {
		path := example(t)
		lk, err := filelock.Acquire(ctx, path+".lock")
		if err != nil {
			t.Fatal(err)
		}
		defer lk.Unlock()
		short, cancel := context.WithTimeout(ctx, 50_000_000)
		defer cancel()
		if _, err := taskgraph.Sync(short, path, "impl_calc", taskgraph.Outcome{}, nil); !errors.Is(err, filelock.ErrHeld) {
			t.Errorf("got %v, want ErrHeld", err)
		}
	})
}

// raceGraph is one wave of n implementation phases and their verification.
func raceGraph(t *testing.T, n int) (string, []string) {
	var impl, ver []string
	var ids []string
	for i := range n {
		id := fmt.Sprintf("impl_%d", i)
		ids = append(ids, id)
		impl = append(impl, fmt.Sprintf(`{"phase_id":%q,"type":"implementation","custom":%d}`, id, i))
		ver = append(ver, fmt.Sprintf(`{"phase_id":"verify_%d","type":"verification","verifies_phase_id":%q}`, i, id))
	}
	return writeGraph(t, `{"current_wave":0,"waves":[{"parallel_execution":true,"phases":[`+strings.Join(impl, ",")+
		`]},{"phases":[`+strings.Join(ver, ",")+`]}]}`), ids
}

func TestSyncParallelGoroutines(t *testing.T) {
	const n, repeats = 12, 3
	path, ids := raceGraph(t, n)
	var wg sync.WaitGroup
	updates := make(chan taskgraph.Update, n*repeats)
	for r := range repeats {
		for _, id := range ids {
			wg.Go(func() {
				u, err := taskgraph.Sync(context.Background(), path, id, taskgraph.Outcome{}, nil)
				if err != nil {
					t.Errorf("Sync(%s) #%d: %v", id, r, err)
				}
				updates <- u
			})
		}
	}
	wg.Wait()
	close(updates)
	advanced, changed := 0, 0
	for u := range updates {
		if u.WaveAdvanced {
			advanced++
		}
		if u.Changed {
			changed++
		}
	}
	g := load(t, path)
	if advanced != 1 || changed != n || g.CurrentWave != 1 {
		t.Errorf("advanced %d times, %d changes, current_wave %d; want 1, %d, 1", advanced, changed, g.CurrentWave, n)
	}
	if !strings.Contains(mustRead(t, path), `"custom":11`) {
		t.Error("unknown fields lost")
	}
}

func TestSyncParallelProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	const n = 10
	path, ids := raceGraph(t, n)
	var wg sync.WaitGroup
	outs := make([][]byte, 2*n)
	for i := range 2 * n { // each phase stops twice
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"="+path+"|"+ids[i%n]+"|")
			out, err := cmd.Output()
			if err != nil {
				t.Errorf("helper %d: %v", i, err)
			}
			outs[i] = out
		})
	}
	wg.Wait()
	advanced, changed := 0, 0
	for _, out := range outs {
		var u struct {
			WaveAdvanced bool `json:"wave_advanced"`
			Changed      bool `json:"changed"`
		}
		if err := json.Unmarshal(out, &u); err != nil {
			t.Fatalf("helper output %q: %v", out, err)
		}
		if u.WaveAdvanced {
			advanced++
		}
		if u.Changed {
			changed++
		}
	}
	if g := load(t, path); advanced != 1 || changed != n || g.CurrentWave != 1 {
		t.Errorf("advanced %d times, %d changes, current_wave %d; want 1, %d, 1", advanced, changed, g.CurrentWave, n)
	}
}

func TestFacts(t *testing.T) {
	root := t.TempDir()
	rel := taskgraph.DefaultPath
	if f := taskgraph.InvocationFacts(root, rel); f != nil {
		t.Errorf("no graph: %v", f)
	}
	// A write of a first graph: no disk.
	f := taskgraph.WriteFacts(root, rel, []byte(`{"waves":[{"phases":[{"phase_id":"a"}]}]}`))
	if _, ok := f["disk"]; ok || f["path"] != rel || f["document"] == nil {
		t.Errorf("first write: %v", f)
	}
	errs := f["schema_errors"].([]any)
	if len(errs) != 1 || errs[0].(map[string]any)["pointer"] != "/waves/0/phases/0" {
		t.Errorf("schema errors: %v", errs)
	}
	full := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(`{"waves":[],"n":1.50}`), 0o644); err != nil {
		t.Fatal(err)
	}
	f = taskgraph.WriteFacts(root, rel, []byte(`[1]`))
	if f["problem"] != "not_object" || f["error"] == "" || f["document"] != nil || f["schema_errors"] != nil {
		t.Errorf("array write: %v", f)
	}
	if disk := f["disk"].(map[string]any); disk["n"] != json.Number("1.50") {
		t.Errorf("disk: %v", disk)
	}
	if f := taskgraph.WriteFacts(root, rel, []byte(`{`)); f["problem"] != "invalid_json" {
		t.Errorf("broken write: %v", f)
	}
	if f := taskgraph.InvocationFacts(root, rel); f["document"] == nil || f["problem"] != nil {
		t.Errorf("invocation: %v", f)
	}
	os.WriteFile(full, []byte(`{"waves":`), 0o644)
	if f := taskgraph.InvocationFacts(root, rel); f["problem"] != "invalid_json" || !strings.Contains(f["error"].(string), "line 1") {
		t.Errorf("broken graph: %v", f)
	}
	os.Remove(full)
	if err := os.Symlink("/etc/hostname", full); err == nil {
		if f := taskgraph.InvocationFacts(root, rel); f["problem"] != "unreadable" {
			t.Errorf("a link out of the project: %v", f)
		}
	}
}

func FuzzPhaseID(f *testing.F) {
	for _, s := range []string{"Phase ID: a", "<!-- DES-TASK-PHASE: b -->", "**Phase ID:** `c`", "phase_id: d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, prompt string) {
		id, ok := taskgraph.PhaseID(prompt)
		if ok != (id != "") || (ok && !taskgraph.ValidPhaseID(id)) {
			t.Fatalf("PhaseID(%q) = %q, %v", prompt, id, ok)
		}
		_ = taskgraph.Verdict(prompt)
	})
}
