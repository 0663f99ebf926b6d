package audit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	l := mustOpen(t, dir)
	day1 := time.Date(2026, 11, 20, 23, 0, 0, 0, time.UTC)
	day2 := time.Date(2026, 11, 21, 1, 0, 0, 0, time.UTC)
	entries := []Entry{
		{Time: day1, Event: PhaseStarted, Fields: map[string]any{"step_file": "a.json", "phase": "PREPARE", "from": "NOT_EXECUTED", "to": "IN_PROGRESS"}},
		{Time: day1.Add(time.Minute), Event: PhaseStarted, Fields: map[string]any{"step_file": "b.json", "phase": "PREPARE", "from": "NOT_EXECUTED", "to": "IN_PROGRESS"}},
		{Time: day2, Event: PhaseCompleted, Fields: map[string]any{"step_file": "a.json", "phase": "PREPARE", "from": "IN_PROGRESS", "to": "EXECUTED"}},
		{Time: day2.Add(time.Minute), Event: HookError, Fields: map[string]any{"error": "x"}},
	}
	if err := l.Append(ctx, entries...); err != nil {
		t.Fatal(err)
	}
	names := func(es []Entry) []string {
		var out []string
		for _, e := range es {
			out = append(out, string(e.Event)+"@"+e.Time.Format(time.TimeOnly))
		}
		return out
	}
	for _, tc := range []struct {
		name string
		q    Query
		want []string
	}{
		{"all", Query{}, []string{"PHASE_STARTED@23:00:00", "PHASE_STARTED@23:01:00", "PHASE_COMPLETED@01:00:00", "HOOK_ERROR@01:01:00"}},
		{"step", Query{StepFile: "a.json"}, []string{"PHASE_STARTED@23:00:00", "PHASE_COMPLETED@01:00:00"}},
		{"events", Query{Events: []EventType{PhaseCompleted, HookError}}, []string{"PHASE_COMPLETED@01:00:00", "HOOK_ERROR@01:01:00"}},
		{"since", Query{Since: day1.Add(time.Minute)}, []string{"PHASE_STARTED@23:01:00", "PHASE_COMPLETED@01:00:00", "HOOK_ERROR@01:01:00"}},
		{"until", Query{Until: day2}, []string{"PHASE_STARTED@23:00:00", "PHASE_STARTED@23:01:00"}},
		{"since next day", Query{Since: day2.Add(30 * time.Second)}, []string{"HOOK_ERROR@01:01:00"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := l.Read(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, names(got)); diff != "" {
				t.Errorf("Read(%+v) (-want +got):\n%s", tc.q, diff)
			}
		})
	}
}

func TestReadMissingDirAndMalformed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "audit")
	l := mustOpen(t, dir)
	if got, err := l.Read(ctx, Query{}); err != nil || len(got) != 0 {
		t.Fatalf("Read of a missing directory = %v, %v; want nothing, nil", got, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "audit-2026-11-20.log"), []byte("{not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Read(ctx, Query{}); !errors.Is(err, ErrMalformedLine) {
		t.Fatalf("Read of a broken trail: err = %v, want ErrMalformedLine", err)
	}
}

// The byte pre-filter never drops a line that matches: step files that JSON
// escapes, events and times read from the line's start, and a late line in
// a file dated after Until.
func TestReadPrefilter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	l := mustOpen(t, dir)
	d1 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	odd := `steps/"quoted" \ <&>/01-01.json`
	entries := []Entry{
		{Time: d1.AddDate(0, 0, 1), Event: HookError, Fields: map[string]any{"error": "next day"}},
		// Stamped d1, written to the file of d1+1 (never behind the head).
		{Time: d1, Event: TaskStateChanged, Fields: map[string]any{"step_file": odd, "from": "TODO", "to": "IN_PROGRESS", "by": "write"}},
		{Time: d1.AddDate(0, 0, 1), Event: HookError, Fields: map[string]any{"error": "mentions " + odd, "step_file": "other.json"}},
	}
	if err := l.Append(ctx, entries...); err != nil {
		t.Fatal(err)
	}
	got, err := l.Read(ctx, Query{StepFile: odd})
	if err != nil || len(got) != 1 || got[0].Event != TaskStateChanged || got[0].Seq != 2 {
		t.Errorf("Read by an escaped step file = %+v, %v", got, err)
	}
	got, err = l.Read(ctx, Query{Until: d1.Add(time.Hour)})
	if err != nil || len(got) != 1 || got[0].Seq != 2 {
		t.Errorf("Read until: a late line in a newer file = %+v, %v", got, err)
	}
	got, err = l.Read(ctx, Query{Events: []EventType{TaskStateChanged}, Since: d1, Until: d1.Add(time.Second)})
	if err != nil || len(got) != 1 {
		t.Errorf("Read by event and time = %+v, %v", got, err)
	}
	// A damaged line is an error when it could match, skipped otherwise.
	f, err := os.OpenFile(filepath.Join(dir, FileName(d1.AddDate(0, 0, 1))), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"timestamp":"2026-11-21T10:00:00Z","event":"SUBAGENT_STOP_VALIDATION","step_file":` + "\n")
	f.Close()
	if _, err := l.Read(ctx, Query{Events: []EventType{SubagentStopValidation}}); !errors.Is(err, ErrMalformedLine) {
		t.Errorf("damaged line that may match: err = %v, want ErrMalformedLine", err)
	}
	if got, err := l.Read(ctx, Query{Events: []EventType{TaskStateChanged}}); err != nil || len(got) != 1 {
		t.Errorf("damaged line that cannot match: %+v, %v", got, err)
	}
}

// Read takes no lock: the newest file's unterminated last line is a line
// being written, not a torn one; an older file's is torn.
func TestReadLeavesOutALineBeingWritten(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	l := mustOpen(t, dir)
	day := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	if err := l.Append(ctx, Entry{Time: day, Event: HookError, Fields: map[string]any{"error": "x"}}); err != nil {
		t.Fatal(err)
	}
	newest := filepath.Join(dir, FileName(day))
	f, err := os.OpenFile(newest, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"timestamp":"2026-11-20T10:00:01Z","event":"HOOK_ERR`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	got, err := l.Read(ctx, Query{})
	if err != nil || len(got) != 1 {
		t.Fatalf("Read during a write = %d entries, %v; want the complete line only", len(got), err)
	}
	// Once a newer file exists, the unterminated line is torn.
	if err := os.WriteFile(filepath.Join(dir, FileName(day.AddDate(0, 0, 1))), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Read(ctx, Query{}); !errors.Is(err, ErrMalformedLine) {
		t.Fatalf("torn line in an older file: err = %v, want ErrMalformedLine", err)
	}
}

// A line not written by Append may spell the step file with escapes; the
// byte pre-filter must leave it to the decoder.
func TestReadFindsEscapedLegacyLines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	legacy := `{"timestamp":"2026-11-20T10:00:00Z","event":"SUBAGENT_STOP_VALIDATION","step_file":"docs\/steps\/01-01.json","outcome":"FAIL","codes":[],"action":"record"}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "audit-2026-11-20.log"), []byte(legacy), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := mustOpen(t, dir).Read(context.Background(), Query{StepFile: "docs/steps/01-01.json"})
	if err != nil || len(got) != 1 {
		t.Fatalf("Read = %d entries, %v; want the legacy line", len(got), err)
	}
}
