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
	ctx := context.Background()
	dir := t.TempDir()
	l := mustOpen(t, dir)
	day1 := time.Date(2026, 11, 20, 23, 0, 0, 0, time.UTC)
	day2 := time.Date(2026, 11, 21, 1, 0, 0, 0, time.UTC)
	entries := []Entry{
		{Time: day1, Event: PhaseStarted, Fields: map[string]any{"step_file": "a.json", "phase": "PREPARE"}},
		{Time: day1.Add(time.Minute), Event: PhaseStarted, Fields: map[string]any{"step_file": "b.json", "phase": "PREPARE"}},
		{Time: day2, Event: PhaseCompleted, Fields: map[string]any{"step_file": "a.json", "phase": "PREPARE"}},
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
