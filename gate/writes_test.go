package gate_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/internal/filelock"
	"github.com/deterministic-exec/des/internal/integrity"
	"github.com/google/go-cmp/cmp"
)

// recordingWrites is a gate.Writes that settles several paths at once, as
// internal/integrity's Checker does, and keeps what it was told.
type recordingWrites struct {
	mu       sync.Mutex
	expected []string
	settles  [][]string
}

func (w *recordingWrites) Expect(path string, _ []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.expected = append(w.expected, path)
	return nil
}

func (w *recordingWrites) Settle(ctx context.Context, path string) error {
	return w.SettleAll(ctx, path)
}

func (w *recordingWrites) SettleAll(_ context.Context, paths ...string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.settles = append(w.settles, slices.Clone(paths))
	return nil
}

// Gate 1's two run records (by tool_use_id and by prompt) are announced
// before they are written and settled together: a baseline is updated once
// per invocation, not once per record.
func TestGate1SettlesItsRunRecordsTogether(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	w := &recordingWrites{}
	eng, err := des.New(t.Context(), des.WithRoot(root), des.WithClock(func() time.Time { return gate1Now }), des.WithWrites(w),
		des.WithEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatal(err)
	}
	p := &project{t, root, eng}
	p.writeStep(stepRel, todoStep())
	if res := p.check(render(t, "execute-step", todoStep())); res.Denied() {
		t.Fatalf("denied: %s", res.Reason())
	}
	var runs [][]string
	for _, s := range w.settles {
		if filepath.Base(filepath.Dir(s[0])) == "runs" {
			runs = append(runs, s)
		}
	}
	if len(runs) != 1 || len(runs[0]) != 2 || filepath.Base(runs[0][0]) != "toolu_01.json" {
		t.Fatalf("run records settled as %v, want both in one call", runs)
	}
	for _, p := range runs[0] {
		if !slices.Contains(w.expected, p) {
			t.Errorf("%s settled but never announced (announced: %v)", p, w.expected)
		}
	}
	if stepSettles := slices.DeleteFunc(slices.Clone(w.settles), func(s []string) bool { return filepath.Base(filepath.Dir(s[0])) == "runs" }); !cmp.Equal(stepSettles, [][]string{{filepath.Join(root, stepRel)}}) {
		t.Errorf("other settles %v, want the step file's", stepSettles)
	}
}

// With the effect check's own Checker, Gate 1's writes are recorded in its
// baseline while a Bash call is in flight: a record the call then deletes
// is restored at its end. Whether the writes went in under the check's lock
// (no check running) or were announced (a check holding the lock), the
// outcome is the same.
func TestGate1WritesRecordedInTheEffectBaseline(t *testing.T) {
	t.Parallel()
	for _, busy := range []bool{false, true} {
		t.Run(map[bool]string{false: "under the lock", true: "announced"}[busy], func(t *testing.T) {
			root := t.TempDir()
			state := t.TempDir()
			chk := integrity.New(integrity.Options{Root: root, StateDir: state})
			ctx := context.Background()
			if _, err := chk.Begin(ctx, "toolu_bash", nil, 0); err != nil {
				t.Fatal(err)
			}
			eng, err := des.New(t.Context(), des.WithRoot(root), des.WithClock(func() time.Time { return gate1Now }), des.WithWrites(chk),
				des.WithEnv(func(string) (string, bool) { return "", false }))
			if err != nil {
				t.Fatal(err)
			}
			p := &project{t, root, eng}
			p.writeStep(stepRel, todoStep())
			var release func()
			if busy {
				// Another checker's lock on the same state: a check in progress.
				l, err := filelock.Acquire(ctx, filepath.Join(state, "integrity", "lock"))
				if err != nil {
					t.Fatal(err)
				}
				release = func() { _ = l.Unlock() }
				time.AfterFunc(100*time.Millisecond, release) // Settle waits for it
			}
			if res := p.check(render(t, "execute-step", todoStep())); res.Denied() {
				t.Fatalf("denied: %s", res.Reason())
			}
			rec := filepath.Join(root, des.RunsDir, "toolu_01.json")
			want, err := os.ReadFile(rec)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(rec); err != nil { // the Bash call in flight
				t.Fatal(err)
			}
			if _, err := chk.End(ctx, "toolu_bash", false); err != nil {
				t.Fatal(err)
			}
			if got, err := os.ReadFile(rec); err != nil || string(got) != string(want) {
				t.Errorf("the run record after the check: %q, %v; want it restored", got, err)
			}
			if doc := p.readStep(stepRel); doc["state"].(map[string]any)["status"] != "IN_PROGRESS" {
				t.Errorf("the step's move was undone: %v", doc["state"])
			}
		})
	}
}
