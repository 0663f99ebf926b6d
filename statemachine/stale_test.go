package statemachine_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/deterministic-exec/des/statemachine"
)

var scanNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func phaseLog(entries ...string) string {
	return `{"task_id": "x", "tdd_cycle": {"phase_execution_log": [` + strings.Join(entries, ",") + `]}}`
}

func entry(name, status, started string) string {
	s := "null"
	if started != "" {
		s = `"` + started + `"`
	}
	return fmt.Sprintf(`{"phase_name": %q, "status": %q, "started_at": %s}`, name, status, s)
}

func TestScanStale(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	hourAgo := scanNow.Add(-time.Hour)
	writeFile(t, filepath.Join(dir, "01-01.json"), phaseLog(
		entry("RED_UNIT", "IN_PROGRESS", "2026-03-01T11:00:00Z"),       // stale
		entry("PREPARE", "IN_PROGRESS", "2026-03-01T12:00:00.5+01:00"), // stale: 11:00 UTC
		entry("GREEN_UNIT", "IN_PROGRESS", "2026-03-01T11:45:00Z"),     // 15 minutes: fresh
		entry("REVIEW", "EXECUTED", "2026-03-01T01:00:00Z"),            // not in progress
		entry("COMMIT", "IN_PROGRESS", ""),                             // no start
		entry("REFACTOR_L1", "IN_PROGRESS", "yesterday"),               // unparsable start
		entry("REFACTOR_L2", "IN_PROGRESS", "2026-03-01T13:00:00Z"),    // in the future
		entry("REFACTOR_L3", "IN_PROGRESS", "2026-03-01T11:30:00Z"),    // exactly the threshold
		`"not an object"`,
	))
	// No zone: UTC, as Python's naive isoformat; legacy log location.
	writeFile(t, filepath.Join(dir, "01-02.json"), `{"tdd_cycle": {"tdd_phase_tracking": {"phase_execution_log": [`+
		entry("COMMIT", "IN_PROGRESS", "2026-03-01T10:00:00.123456")+`]}}}`)
	// The status spelt with an escape is still IN_PROGRESS.
	writeFile(t, filepath.Join(dir, "01-03.json"), phaseLog(`{"phase_name": "REVIEW", "st\u0061tus": "IN\u005fPROGRESS", "started_at": "2026-03-01T11:00:00Z"}`))
	// Skipped silently: not JSON, not an object, wrong extension, in a
	// subdirectory, a directory named *.json, a key of another case.
	writeFile(t, filepath.Join(dir, "broken.json"), `{"tdd_cycle": `)
	writeFile(t, filepath.Join(dir, "array.json"), `[`+entry("X", "IN_PROGRESS", "2020-01-01T00:00:00Z")+`]`)
	writeFile(t, filepath.Join(dir, "notes.txt"), phaseLog(entry("X", "IN_PROGRESS", "2020-01-01T00:00:00Z")))
	writeFile(t, filepath.Join(dir, "case.json"), `{"tdd_cycle": {"phase_execution_log": [{"phase_name": "X", "Status": "IN_PROGRESS", "started_at": "2020-01-01T00:00:00Z"}]}}`)
	sub := filepath.Join(dir, "nested.json")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(sub, "01-03.json"), phaseLog(entry("X", "IN_PROGRESS", "2020-01-01T00:00:00Z")))

	got, err := statemachine.ScanStale(dir, scanNow, 30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	f1, f2 := filepath.Join(dir, "01-01.json"), filepath.Join(dir, "01-02.json")
	want := []statemachine.StaleWork{
		{File: f1, Phase: "PREPARE", StartedAt: time.Date(2026, 3, 1, 11, 0, 0, 5e8, time.UTC), Age: time.Hour - 500*time.Millisecond},
		{File: f1, Phase: "RED_UNIT", StartedAt: hourAgo, Age: time.Hour},
		{File: f2, Phase: "COMMIT", StartedAt: time.Date(2026, 3, 1, 10, 0, 0, 123456000, time.UTC), Age: 2*time.Hour - 123456*time.Microsecond},
		{File: filepath.Join(dir, "01-03.json"), Phase: "REVIEW", StartedAt: hourAgo, Age: time.Hour},
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("ScanStale (-want +got):\n%s", diff)
	}
}

func TestScanStaleDirs(t *testing.T) {
	t.Parallel()
	got, err := statemachine.ScanStale(filepath.Join(t.TempDir(), "missing"), scanNow, time.Minute)
	if got != nil || err != nil {
		t.Errorf("missing dir: %v, %v; want nil, nil", got, err)
	}
	file := filepath.Join(t.TempDir(), "file")
	writeFile(t, file, "x")
	if _, err := statemachine.ScanStale(file, scanNow, time.Minute); err == nil {
		t.Error("a file as dir: no error")
	}
	got, err = statemachine.ScanStale(t.TempDir(), scanNow, time.Minute)
	if got != nil || err != nil {
		t.Errorf("empty dir: %v, %v", got, err)
	}
}

func TestScanStaleSkipsOversized(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A stale phase, then padding past the limit: the file is not read.
	content := phaseLog(entry("X", "IN_PROGRESS", "2020-01-01T00:00:00Z"))
	content = content[:len(content)-1] + `, "pad": "` + strings.Repeat("x", statemachine.MaxStepFileSize) + `"}`
	writeFile(t, filepath.Join(dir, "big.json"), content)
	got, err := statemachine.ScanStale(dir, scanNow, time.Minute)
	if got != nil || err != nil {
		t.Errorf("oversized: %v, %v", got, err)
	}
}

func TestParseTimestamp(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]time.Time{
		"2026-01-25T11:46:38.953424+00:00": time.Date(2026, 1, 25, 11, 46, 38, 953424000, time.UTC),
		"2026-01-23T00:23:00Z":             time.Date(2026, 1, 23, 0, 23, 0, 0, time.UTC),
		"2026-01-23T02:23:00+02:00":        time.Date(2026, 1, 23, 0, 23, 0, 0, time.UTC),
		"2026-01-25T02:28:35.037871":       time.Date(2026, 1, 25, 2, 28, 35, 37871000, time.UTC),
		"2026-01-25T02:28:35":              time.Date(2026, 1, 25, 2, 28, 35, 0, time.UTC),
	} {
		got, ok := statemachine.ParseTimestamp(s)
		if !ok || !got.Equal(want) {
			t.Errorf("ParseTimestamp(%q) = %v, %v; want %v", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "2026-01-25", "2026-01-25 02:28:35", "yesterday"} {
		if _, ok := statemachine.ParseTimestamp(s); ok {
			t.Errorf("ParseTimestamp(%q) accepted", s)
		}
	}
}

// The corpus has six phases IN_PROGRESS with a parsable start (January
// 2026): all stale a month later, none an hour before the earliest.
func TestScanStaleCorpus(t *testing.T) {
	t.Parallel()
	corpusFiles(t)
	got, err := statemachine.ScanStale(corpusDir, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), 30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, w := range got {
		names = append(names, w.Phase)
	}
	if want := []string{"COMMIT", "COMMIT", "COMMIT", "GREEN_UNIT", "GREEN_UNIT", "COMMIT"}; !cmp.Equal(names, want) {
		t.Errorf("stale phases %v, want %v", names, want)
	}
	got, err = statemachine.ScanStale(corpusDir, time.Date(2026, 1, 22, 0, 0, 0, 0, time.UTC), 30*time.Minute)
	if err != nil || len(got) != 0 {
		t.Errorf("before any start: %v, %v", got, err)
	}
}

// stepsDir fills a directory with n corpus files, copied round-robin, every
// tenth given a phase IN_PROGRESS since a day before scanNow.
func stepsDir(b *testing.B, n int) string {
	b.Helper()
	files := corpusFiles(b)
	dir := b.TempDir()
	for i := range n {
		data := readFile(b, files[i%len(files)])
		if i%10 == 0 {
			s, err := statemachine.ParseStep(data)
			if err != nil {
				b.Fatal(err)
			}
			if len(s.Phases) > 0 {
				path := append(s.PhaseLogPath, fmt.Sprint(s.Phases[0].Pos))
				if err := s.Object().SetPath(append(path, "status"), "IN_PROGRESS"); err != nil {
					b.Fatal(err)
				}
				if err := s.Object().SetPath(append(path, "started_at"), "2026-02-28T12:00:00Z"); err != nil {
					b.Fatal(err)
				}
				if data, err = s.Object().Marshal(); err != nil {
					b.Fatal(err)
				}
			}
		}
		writeFile(b, filepath.Join(dir, fmt.Sprintf("%02d-%02d.json", i/100, i%100)), string(data))
	}
	return dir
}

func benchmarkScanStale(b *testing.B, n int) {
	dir := stepsDir(b, n)
	got, err := statemachine.ScanStale(dir, scanNow, 30*time.Minute)
	if err != nil || len(got) < n/10-n/100 {
		b.Fatalf("%d stale phases found (%v), want about %d", len(got), err, n/10)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := statemachine.ScanStale(dir, scanNow, 30*time.Minute); err != nil {
			b.Fatal(err)
		}
	}
}

// Gate 1 scans the steps directory before every subagent start: 1,000 files
// must take well under the design's 1 s.
func BenchmarkScanStale1000(b *testing.B) { benchmarkScanStale(b, 1000) }

// A typical steps directory, the size Gate 1's 5 ms budget assumes.
func BenchmarkScanStale50(b *testing.B) { benchmarkScanStale(b, 50) }
