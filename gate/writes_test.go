package gate_test

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/deterministic-exec/des"
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
