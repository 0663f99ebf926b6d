package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/deterministic-exec/des/internal/filelock"
)

// Environment of a child process of TestConcurrentProcesses.
const (
	envChild   = "DES_AUDIT_CHILD"
	envDir     = "DES_AUDIT_DIR"
	envID      = "DES_AUDIT_CHILD_ID"
	envCount   = "DES_AUDIT_COUNT"
	envStartAt = "DES_AUDIT_START"
)

func TestMain(m *testing.M) {
	if os.Getenv(envChild) == "1" {
		if err := runChild(); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runChild appends DES_AUDIT_COUNT entries carrying a counter and a ~2 KB
// pad, starting when the parent creates the start file.
func runChild() error {
	id := os.Getenv(envID)
	n, err := strconv.Atoi(os.Getenv(envCount))
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(os.Getenv(envStartAt)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return errors.New("start file never appeared")
		}
	}
	l, err := Open(os.Getenv(envDir))
	if err != nil {
		return err
	}
	for i := range n {
		err := l.Append(context.Background(), Entry{Event: HookError, Fields: map[string]any{
			"error": "e", "child": id, "n": i, "pad": pad(id),
		}})
		if err != nil {
			return err
		}
	}
	return nil
}

func pad(id string) string { return strings.Repeat(id, 2048/len(id)) }

func mustOpen(t testing.TB, dir string, opts ...Option) *Log {
	t.Helper()
	l, err := Open(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func fixedClock(t time.Time) Option { return WithClock(func() time.Time { return t }) }

// readAll returns the entries of all day files of l.
func readAll(t *testing.T, l *Log) []Entry {
	t.Helper()
	files, err := l.Files()
	if err != nil {
		t.Fatal(err)
	}
	var all []Entry
	for _, f := range files {
		es, err := ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, es...)
	}
	return all
}

var day = time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.UTC)

// hookError is a HOOK_ERROR entry with its required "error" and fields.
func hookError(fields map[string]any) Entry {
	f := map[string]any{"error": "e"}
	for k, v := range fields {
		f[k] = v
	}
	return Entry{Event: HookError, Fields: f}
}

// phaseFields are the fields of a PHASE_COMPLETED entry.
func phaseFields(phase string) map[string]any {
	return map[string]any{"step_file": "steps/01-01.json", "phase": phase, "from": "IN_PROGRESS", "to": "EXECUTED"}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	l := mustOpen(t, t.TempDir(), fixedClock(day))
	in := []Entry{
		{Event: PhaseCompleted, Fields: phaseFields("RED")},
		{Time: day.Add(time.Second), Event: CommitValidationFailed, Fields: map[string]any{
			"step_file": "s.json", "source": "cli",
			"duration_ms": 12, "codes": []string{"A", "B"}, "ratio": 0.5, "nested": map[string]any{"ok": true},
			"cmd": "a && b <c>",
		}},
		{Event: HookError, Fields: map[string]any{"error": "e"}, Seq: 99}, // Seq is ignored
	}
	if err := l.Append(context.Background(), in...); err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{Time: day, Event: PhaseCompleted, Fields: phaseFields("RED"), Seq: 1},
		{Time: day.Add(time.Second), Event: CommitValidationFailed, Fields: map[string]any{
			"step_file": "s.json", "source": "cli",
			"duration_ms": json.Number("12"), "codes": []any{"A", "B"}, "ratio": json.Number("0.5"),
			"nested": map[string]any{"ok": true}, "cmd": "a && b <c>",
		}, Seq: 2},
		{Time: day, Event: HookError, Fields: map[string]any{"error": "e"}, Seq: 3},
	}
	if diff := cmp.Diff(want, readAll(t, l)); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}
	// Entry also round-trips through encoding/json, without its Seq.
	want[1].Seq = 0
	b, err := json.Marshal(want[1])
	if err != nil {
		t.Fatal(err)
	}
	var got Entry
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want[1], got); diff != "" {
		t.Errorf("json round trip (-want +got):\n%s", diff)
	}
}

func TestKeyOrder(t *testing.T) {
	t.Parallel()
	e := Entry{Time: day.In(time.FixedZone("X", 3600)), Event: ScopeViolation, Fields: map[string]any{
		"zeta": 1, "alpha": "a&b", "mid": []int{2, 1}, "Upper": nil,
	}}
	b, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"timestamp":"2026-03-14T15:09:26.535897932Z","event":"SCOPE_VIOLATION","Upper":null,"alpha":"a&b","mid":[2,1],"zeta":1}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

func TestDayFileIsUTCDate(t *testing.T) {
	t.Parallel()
	est := time.FixedZone("UTC-5", -5*3600)
	late := time.Date(2026, 1, 31, 23, 30, 0, 0, est) // 2026-02-01 04:30 UTC
	if got, want := FileName(late), "audit-2026-02-01.log"; got != want {
		t.Errorf("FileName = %q, want %q", got, want)
	}
	dir := t.TempDir()
	// Once through Entry.Time and once through the clock.
	if err := mustOpen(t, dir).Append(context.Background(), Entry{Time: late, Event: PhaseCompleted, Fields: phaseFields("RED")}); err != nil {
		t.Fatal(err)
	}
	l := mustOpen(t, dir, fixedClock(late))
	if err := l.Append(context.Background(), Entry{Event: HookError, Fields: map[string]any{"error": "e"}}); err != nil {
		t.Fatal(err)
	}
	files, err := l.Files()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{filepath.Join(dir, "audit-2026-02-01.log")}, files); diff != "" {
		t.Fatalf("files (-want +got):\n%s", diff)
	}
	es := readAll(t, l)
	if len(es) != 2 || !es[0].Time.Equal(late) || es[0].Time.Location() != time.UTC {
		t.Errorf("entries = %+v", es)
	}
}

func TestFiles(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "trail")
	l := mustOpen(t, dir)
	if files, err := l.Files(); err != nil || files != nil {
		t.Fatalf("Files before any append = %v, %v; want nil, nil", files, err)
	}
	for _, d := range []time.Time{day.AddDate(-1, 0, 0), day, day.AddDate(0, 0, 2)} {
		if err := l.Append(context.Background(), Entry{Time: d, Event: TaskStateChanged, Fields: map[string]any{
			"step_file": "s.json", "from": "TODO", "to": "IN_PROGRESS", "by": "write",
		}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"audit-2026-13-01.log", "audit-2026-3-14.log", "notes.txt", "audit-2026-03-14.log.bak"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, err := l.Files()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		filepath.Join(dir, "audit-2025-03-14.log"),
		filepath.Join(dir, "audit-2026-03-14.log"),
		filepath.Join(dir, "audit-2026-03-16.log"),
	}
	if diff := cmp.Diff(want, files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
}

func TestOpenEmptyDir(t *testing.T) {
	t.Parallel()
	if _, err := Open(""); err == nil {
		t.Error("Open(\"\") succeeded")
	}
}

// assertUntouched fails if dir exists.
func assertUntouched(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s was created (stat err %v)", dir, err)
	}
}

func TestInvalidEntryRejected(t *testing.T) {
	t.Parallel()
	for _, key := range []string{"timestamp", "event", "seq", "prev"} {
		t.Run(key, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "trail")
			err := mustOpen(t, dir).Append(context.Background(),
				hookError(nil),
				Entry{Event: HookError, Fields: map[string]any{"error": "e", key: 1}})
			if !errors.Is(err, ErrReservedField) || !strings.Contains(err.Error(), strconv.Quote(key)) {
				t.Errorf("err = %v, want ErrReservedField naming %q", err, key)
			}
			if _, err := (Entry{Event: HookError, Fields: map[string]any{key: 1}}).MarshalJSON(); !errors.Is(err, ErrReservedField) {
				t.Errorf("MarshalJSON err = %v, want ErrReservedField", err)
			}
			assertUntouched(t, dir)
		})
	}
	t.Run("no event", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "trail")
		if err := mustOpen(t, dir).Append(context.Background(), Entry{}); !errors.Is(err, ErrMissingEvent) {
			t.Errorf("err = %v, want ErrMissingEvent", err)
		}
		assertUntouched(t, dir)
	})
	t.Run("unencodable", func(t *testing.T) {
		l := mustOpen(t, t.TempDir(), fixedClock(day))
		err := l.Append(context.Background(), Entry{Event: HookError, Fields: map[string]any{"error": "e", "ch": make(chan int)}})
		var uerr *json.UnsupportedTypeError
		if !errors.As(err, &uerr) {
			t.Errorf("err = %v, want *json.UnsupportedTypeError", err)
		}
		if files, _ := l.Files(); len(files) != 0 {
			t.Errorf("files written: %v", files)
		}
	})
}

func TestEntryTooLarge(t *testing.T) {
	t.Parallel()
	l := mustOpen(t, t.TempDir(), fixedClock(day))
	ctx := context.Background()
	if err := l.Append(ctx, hookError(map[string]any{"n": 1})); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(l.Dir(), FileName(day))
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	big := hookError(map[string]any{"pad": strings.Repeat("x", MaxLineSize)})
	// The small entry ahead of the big one is not written either.
	err = l.Append(ctx, hookError(nil), big)
	if !errors.Is(err, ErrEntryTooLarge) {
		t.Fatalf("err = %v, want ErrEntryTooLarge", err)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("file changed: %q -> %q", before, after)
	}
	// Exactly MaxLineSize bytes is allowed.
	overhead := len(`{"timestamp":"2026-03-14T15:09:26.535897932Z","event":"HOOK_ERROR","seq":2,"prev":"` + zeroHash + `","error":"e","pad":""}` + "\n")
	fit := hookError(map[string]any{"pad": strings.Repeat("x", MaxLineSize-overhead)})
	if err := l.Append(ctx, fit); err != nil {
		t.Errorf("line of exactly MaxLineSize: %v", err)
	}
	if es, err := ReadFile(path); err != nil || len(es) != 2 {
		t.Errorf("ReadFile = %d entries, %v; want 2", len(es), err)
	}
}

func TestCanceledContext(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "trail")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := mustOpen(t, dir).Append(ctx, hookError(nil))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	assertUntouched(t, dir)
}

func TestLockHeldElsewhere(t *testing.T) {
	t.Parallel()
	l := mustOpen(t, t.TempDir(), fixedClock(day))
	// A second lock on the same file stands in for another process.
	lockPath := filepath.Join(l.Dir(), lockName)
	held, err := filelock.Acquire(context.Background(), lockPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = l.Append(ctx, hookError(nil))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), lockPath) {
		t.Errorf("err = %v, want DeadlineExceeded naming %s", err, lockPath)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Append took %v after a 50ms deadline", d)
	}
	if files, _ := l.Files(); len(files) != 0 {
		t.Errorf("files written: %v", files)
	}
	// Once released, appends go through again.
	if err := held.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(context.Background(), hookError(nil)); err != nil {
		t.Errorf("after unlock: %v", err)
	}
}

func TestReadFileMalformed(t *testing.T) {
	t.Parallel()
	good := `{"timestamp":"2026-03-14T15:09:26Z","event":"HOOK_ERROR"}` + "\n"
	for name, tc := range map[string]struct {
		content string
		line    int
	}{
		"not json":      {good + "{oops\n", 2},
		"torn":          {good + good + `{"timestamp":"2026-03-14T15:09:26Z","ev`, 3},
		"no newline":    {good + strings.TrimSuffix(good, "\n"), 2},
		"empty line":    {good + "\n" + good, 2},
		"no event":      {`{"timestamp":"2026-03-14T15:09:26Z"}` + "\n", 1},
		"bad timestamp": {`{"timestamp":"yesterday","event":"X"}` + "\n", 1},
		"trailing data": {good + `{"timestamp":"2026-03-14T15:09:26Z","event":"X"} {}` + "\n", 2},
		"not an object": {"[]\n", 1},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "audit-2026-03-14.log")
			if err := os.WriteFile(path, []byte(tc.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadFile(path)
			if !errors.Is(err, ErrMalformedLine) || !strings.Contains(err.Error(), fmt.Sprintf("%s: line %d:", path, tc.line)) {
				t.Errorf("err = %v, want ErrMalformedLine at %s line %d", err, path, tc.line)
			}
		})
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing.log")); !errors.Is(err, os.ErrNotExist) || errors.Is(err, ErrMalformedLine) {
		t.Errorf("missing file: err = %v, want ErrNotExist only", err)
	}
}

func TestUnmarshalDropsChainKeys(t *testing.T) {
	t.Parallel()
	var e Entry
	if err := json.Unmarshal([]byte(`{"timestamp":"2026-03-14T15:09:26Z","event":"X","seq":7,"prev":"ab","k":"v"}`), &e); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"k": "v"}, e.Fields); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
}

func TestFsync(t *testing.T) {
	t.Parallel()
	l := mustOpen(t, t.TempDir(), WithFsync(true), fixedClock(day))
	if err := l.Append(context.Background(), hookError(nil), Entry{Time: day.AddDate(0, 0, 1), Event: HookError, Fields: map[string]any{"error": "e"}}); err != nil {
		t.Fatal(err)
	}
	if n := len(readAll(t, l)); n != 2 {
		t.Errorf("%d entries, want 2", n)
	}
}

func TestConcurrentGoroutines(t *testing.T) {
	t.Parallel()
	const goroutines, each = 16, 200
	l := mustOpen(t, t.TempDir(), fixedClock(day))
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				e := hookError(map[string]any{"g": g, "i": i, "pad": strings.Repeat("p", 512)})
				if err := l.Append(context.Background(), e); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkCounters(t, readAll(t, l), "g", "i", goroutines, each)
	assertIntact(t, l.Dir(), goroutines*each)
}

// checkCounters asserts that entries come from exactly writers distinct
// values of writerKey, each with the counters 0..each-1 under counterKey, in
// order.
func checkCounters(t *testing.T, entries []Entry, writerKey, counterKey string, writers, each int) {
	t.Helper()
	if len(entries) != writers*each {
		t.Fatalf("%d entries, want %d", len(entries), writers*each)
	}
	next := make(map[string]int)
	for i, e := range entries {
		w := fmt.Sprint(e.Fields[writerKey])
		n, err := strconv.Atoi(fmt.Sprint(e.Fields[counterKey]))
		if err != nil || n != next[w] {
			t.Fatalf("entry %d: writer %s counter %v, want %d", i, w, e.Fields[counterKey], next[w])
		}
		next[w]++
	}
	if len(next) != writers {
		t.Errorf("%d writers seen, want %d", len(next), writers)
	}
}

func TestConcurrentProcesses(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("spawns processes")
	}
	const children, each = 4, 500
	dir := t.TempDir()
	start := filepath.Join(t.TempDir(), "start")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmds := make([]*exec.Cmd, children)
	outs := make([]bytes.Buffer, children)
	for c := range children {
		id := string(rune('a' + c))
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envChild+"=1", envDir+"="+dir, envID+"="+id,
			envCount+"="+strconv.Itoa(each), envStartAt+"="+start)
		cmd.Stdout, cmd.Stderr = &outs[c], &outs[c]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[c] = cmd
	}
	// Release all children at once so that their appends overlap.
	if err := os.WriteFile(start, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for c, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("child %d: %v\n%s", c, err, outs[c].String())
		}
	}
	if t.Failed() {
		return
	}
	entries := readAll(t, mustOpen(t, dir))
	for i, e := range entries {
		id, _ := e.Fields["child"].(string)
		if e.Fields["pad"] != pad(id) {
			t.Fatalf("entry %d: pad of child %q damaged", i, id)
		}
	}
	checkCounters(t, entries, "child", "n", children, each)
	assertIntact(t, dir, children*each)
}
