package registry_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/filelock"
	"github.com/deterministic-exec/des/internal/registry"
)

// helperEnv makes the test binary run one registry call and exit, so that
// a test can race real processes: "start|<dir>|<id>" or "count|<dir>|<session>".
const helperEnv = "REGISTRY_HELPER"

var t0 = time.Date(2026, 11, 25, 14, 0, 0, 0, time.UTC)

func TestMain(m *testing.M) {
	if v, ok := os.LookupEnv(helperEnv); ok {
		parts := strings.SplitN(v, "|", 3)
		r := registry.Open(parts[1])
		switch parts[0] {
		case "start":
			if err := r.Start(registry.Agent{ID: parts[2], Type: "worker", SessionID: "s"}, time.Now()); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		case "count":
			n, err := r.CountDirect(context.Background(), parts[2], time.Now())
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			fmt.Println(n)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestLifecycle(t *testing.T) {
	dir := filepath.Join(t.TempDir(), ".des", "sessions")
	r := registry.Open(dir)
	if got, err := r.Running(t0, time.Hour); err != nil || len(got) != 0 {
		t.Fatalf("empty registry: %v, %v", got, err)
	}
	if _, ok, err := r.Last(); ok || err != nil {
		t.Fatalf("Last of an empty registry: %v, %v", ok, err)
	}
	for i, id := range []string{"a1", "b2", "c3"} {
		if err := r.Start(registry.Agent{ID: id, Type: "type-" + id, SessionID: "s1"}, t0.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	a, err := r.Stop("b2", t0.Add(90*time.Second))
	if err != nil || a.Duration() != 30*time.Second || a.Type != "type-b2" {
		t.Fatalf("Stop: %+v, %v", a, err)
	}
	if again, _ := r.Stop("b2", t0.Add(time.Hour)); !again.StoppedAt.Equal(a.StoppedAt) {
		t.Errorf("a repeated Stop moved the stop time: %v", again.StoppedAt)
	}
	if _, err := r.Stop("zz", t0); !errors.Is(err, registry.ErrUnknownAgent) {
		t.Errorf("Stop of an unknown agent: %v", err)
	}
	running, err := r.Running(t0.Add(3*time.Minute), time.Hour)
	if err != nil || ids(running) != "a1,c3" {
		t.Errorf("Running: %v, %v", ids(running), err)
	}
	// a1 started 60 minutes ago and was never seen to stop: it no longer counts.
	if running, _ := r.Running(t0.Add(60*time.Minute), time.Hour); ids(running) != "c3" {
		t.Errorf("Running after the TTL: %v", ids(running))
	}
	if running, _ := r.Running(t0.Add(99*time.Hour), 0); ids(running) != "a1,c3" {
		t.Errorf("Running without a TTL: %v", ids(running))
	}
	last, ok, err := r.Last()
	if !ok || err != nil || last.ID != "b2" {
		t.Errorf("Last: %+v %v %v", last, ok, err)
	}
	f := registry.Facts(running)
	if f["running"] != 2 || f["agents"].([]any)[0].(map[string]any)["started_at"] != "2026-11-25T14:00:00Z" {
		t.Errorf("Facts: %v", f)
	}

	// Counters.
	ctx := context.Background()
	for want := 1; want <= 3; want++ {
		if n, err := r.CountDirect(ctx, "s1", t0); n != want || err != nil {
			t.Fatalf("CountDirect = %d, %v; want %d", n, err, want)
		}
	}
	if n, _ := r.CountDirect(ctx, "s2", t0); n != 1 {
		t.Errorf("sessions share a counter: %d", n)
	}
	if err := r.ResetTurn(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if err := r.ResetTurn(ctx, "never"); err != nil {
		t.Errorf("ResetTurn of a session without calls: %v", err)
	}
	if n, _ := r.CountDirect(ctx, "s1", t0.Add(time.Minute)); n != 1 {
		t.Errorf("after ResetTurn: %d", n)
	}

	// Prune at t0+61m with a 1h TTL (cut t0+1m): a1 (started t0, never
	// stopped) and the s2 counter (t0) go; b2 (stopped t0+1m30s), c3 and
	// the s1 counter (t0+1m) stay.
	n, err := r.Prune(ctx, t0.Add(61*time.Minute), time.Hour)
	if err != nil || n != 2 {
		t.Errorf("Prune removed %d, %v; want 2", n, err)
	}
	if n, _ := r.CountDirect(ctx, "s2", t0); n != 1 {
		t.Errorf("the pruned counter was kept: %d", n)
	}
	if _, err := r.Stop("a1", t0); !errors.Is(err, registry.ErrUnknownAgent) {
		t.Errorf("a1 was not pruned: %v", err)
	}
}

func ids(as []registry.Agent) string {
	var s []string
	for _, a := range as {
		s = append(s, a.ID)
	}
	return strings.Join(s, ",")
}

func TestIDsStayInTheDirectory(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "sessions")
	r := registry.Open(dir)
	weird := []string{"../x", "../../etc/passwd", "a/b", "a_b", `C:\x`, "..", ".", "é", strings.Repeat("z", 300), "a\x00b"}
	for _, id := range weird {
		if err := r.Start(registry.Agent{ID: id}, t0); err != nil {
			t.Fatalf("Start(%q): %v", id, err)
		}
		if _, err := r.CountDirect(context.Background(), id, t0); err != nil {
			t.Fatalf("CountDirect(%q): %v", id, err)
		}
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 1 {
		t.Errorf("files outside the directory: %v", entries)
	}
	running, _ := r.Running(t0, time.Hour)
	got := strings.Split(ids(running), ",")
	slices.Sort(got)
	want := slices.Clone(weird)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("ids after a round trip: %q", got)
	}
	if err := r.Start(registry.Agent{}, t0); !errors.Is(err, registry.ErrInvalidID) {
		t.Errorf("empty id: %v", err)
	}
	if _, err := r.CountDirect(context.Background(), "", t0); !errors.Is(err, registry.ErrInvalidID) {
		t.Errorf("empty session: %v", err)
	}
}

func TestHeldLock(t *testing.T) {
	dir := t.TempDir()
	r := registry.Open(dir)
	r.LockWait = 50 * time.Millisecond
	l, err := filelock.Acquire(context.Background(), filepath.Join(dir, "turns.lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	start := time.Now()
	if _, err := r.CountDirect(context.Background(), "s", t0); !errors.Is(err, filelock.ErrHeld) {
		t.Errorf("CountDirect under a held lock: %v", err)
	}
	if err := r.ResetTurn(context.Background(), "s"); !errors.Is(err, filelock.ErrHeld) {
		t.Errorf("ResetTurn under a held lock: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("waited %v", d)
	}
}

type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) Expect(path string, data []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, fmt.Sprintf("expect %s %v", filepath.Base(path), data != nil))
	return nil
}

func (r *recorder) Settle(_ context.Context, path string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, "settle "+filepath.Base(path))
	return nil
}

func TestAnnouncesWrites(t *testing.T) {
	r := registry.Open(t.TempDir())
	rec := &recorder{}
	r.Writes = rec
	r.Start(registry.Agent{ID: "a"}, t0)
	r.ResetTurn(context.Background(), "s")
	// The lock file too, the first time it is made: it is des's.
	want := []string{"expect agent-a.json true", "settle agent-a.json", "expect turns.lock true", "settle turns.lock", "expect turn-s.json false", "settle turn-s.json"}
	if !slices.Equal(rec.calls, want) {
		t.Errorf("announcements: %q", rec.calls)
	}
}

func TestConcurrentGoroutines(t *testing.T) {
	const n = 20
	r := registry.Open(filepath.Join(t.TempDir(), "sessions"))
	var wg sync.WaitGroup
	counts := make([]int, n)
	for i := range n {
		wg.Go(func() {
			if err := r.Start(registry.Agent{ID: "agent" + strconv.Itoa(i)}, time.Now()); err != nil {
				t.Error(err)
			}
			c, err := r.CountDirect(context.Background(), "s", time.Now())
			if err != nil {
				t.Error(err)
			}
			counts[i] = c
		})
	}
	wg.Wait()
	checkRace(t, r, counts, n)
}

func TestConcurrentProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	const n = 20
	dir := filepath.Join(t.TempDir(), "sessions")
	var wg sync.WaitGroup
	counts := make([]int, n)
	run := func(arg string) string {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"="+arg)
		out, err := cmd.Output()
		if err != nil {
			t.Errorf("helper %s: %v", arg, err)
		}
		return strings.TrimSpace(string(out))
	}
	for i := range n {
		wg.Go(func() { run("start|" + dir + "|agent" + strconv.Itoa(i)) })
		wg.Go(func() { counts[i], _ = strconv.Atoi(run("count|" + dir + "|s")) })
	}
	wg.Wait()
	checkRace(t, registry.Open(dir), counts, n)
}

// checkRace: n agents run and the n counts are 1..n, each once.
func checkRace(t *testing.T, r *registry.Registry, counts []int, n int) {
	t.Helper()
	running, err := r.Running(time.Now(), time.Hour)
	if err != nil || len(running) != n {
		t.Errorf("%d agents running, %v; want %d", len(running), err, n)
	}
	slices.Sort(counts)
	for i, c := range counts {
		if c != i+1 {
			t.Fatalf("counts %v; want 1..%d once each", counts, n)
		}
	}
}
