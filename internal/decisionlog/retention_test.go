package decisionlog

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Files of days older than MaxAge go when a new file starts; the rest stay.
func TestKeptFilesAge(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "decisions")
	l := Open(dir, Options{MaxBytes: 1 << 30, MaxAge: 3 * 24 * time.Hour})
	start := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	for day := range 10 {
		ev := sampleEvent(t, map[string]any{"day": day}, map[string]any{"deny": []any{}})
		ev.Timestamp = start.AddDate(0, 0, day)
		if err := l.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	_, files := readEvents(t, dir)
	want := []string{"2026-11-08.jsonl", "2026-11-09.jsonl", "2026-11-10.jsonl"}
	if !slices.Equal(files, want) {
		t.Errorf("kept %v, want %v (three days, the newest included)", files, want)
	}
}

// A push erases its own mask besides the log's, and bounds each event to
// what one upload takes; the kept file keeps both whole.
func TestPushMaskAndBound(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "decisions")
	l := Open(dir, Options{MaxBytes: 1 << 30})
	small := sampleEvent(t, map[string]any{"call": map[string]any{"prompt": "secret", "subagent_type": "coder"}}, map[string]any{"deny": []any{}})
	big := sampleEvent(t, map[string]any{"step": map[string]any{"document": noise(3 * MaxEventBytes)}}, map[string]any{"deny": []any{}})
	for _, ev := range []Event{small, big} {
		if err := l.Append(ev); err != nil {
			t.Fatal(err)
		}
	}
	kept, _ := readEvents(t, dir)
	if len(kept) != 2 || kept[1].Input == nil || len(kept[1].Erased) != 0 {
		t.Fatalf("kept %d events, the big one %+v: want both whole", len(kept), kept[1].Erased)
	}
	c := &collector{t: t}
	srv := httptest.NewServer(c)
	defer srv.Close()
	p := Pusher{Dir: dir, URL: srv.URL, Mask: []string{"/input/call/prompt"}}
	if _, err := p.Push(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := c.events()
	if len(got) != 2 {
		t.Fatalf("collector got %d events, want 2", len(got))
	}
	in := (*got[0].Input).(map[string]any)
	if in["call"].(map[string]any)["prompt"] != nil || in["call"].(map[string]any)["subagent_type"] != "coder" || !slices.Equal(got[0].Erased, []string{"/input/call/prompt"}) {
		t.Errorf("masked event as received: input %v, erased %v", in, got[0].Erased)
	}
	if got[1].Input != nil || !slices.Equal(got[1].Erased, []string{"/input"}) || got[1].DecisionID != big.DecisionID {
		t.Errorf("big event as received: input kept %v, erased %v", got[1].Input != nil, got[1].Erased)
	}
}

// Events reads back what Append kept, with where; a line that is not an
// event is reported by place and reading goes on.
func TestEventsReadBack(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "decisions")
	l := Open(dir, Options{MaxBytes: 1 << 30})
	var ids []string
	for i := range 3 {
		ev := sampleEvent(t, map[string]any{"n": 12345678901234567}, map[string]any{"deny": []any{}})
		ev.Timestamp = time.Date(2026, 11, 24+i, 10, 0, 0, 0, time.UTC)
		if err := l.Append(ev); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ev.DecisionID)
	}
	f := filepath.Join(dir, "2026-11-25.jsonl")
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(f, append([]byte("not json\n"), data...), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []string
	var lineErrs []*LineError
	for rec, err := range Events(dir) {
		var le *LineError
		switch {
		case errors.As(err, &le):
			lineErrs = append(lineErrs, le)
		case err != nil:
			t.Fatal(err)
		default:
			got = append(got, rec.DecisionID)
			if in := (*rec.Input).(map[string]any); in["n"] != any(json.Number("12345678901234567")) {
				t.Errorf("number read back as %#v", in["n"])
			}
			if rec.DecisionID == ids[1] && (rec.File != f || rec.Line != 2) {
				t.Errorf("second event at %s:%d, want %s:2", rec.File, rec.Line, f)
			}
		}
	}
	if !slices.Equal(got, ids) {
		t.Errorf("read %v, want %v", got, ids)
	}
	if len(lineErrs) != 1 || lineErrs[0].Line != 1 || !strings.Contains(lineErrs[0].Error(), "2026-11-25.jsonl:1: not an event") {
		t.Errorf("line errors %v", lineErrs)
	}
}

// A line that is JSON but not an event des can read does not stop the
// push: it is passed over, and the events after it are sent.
func TestPushPassesOverForeignLines(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "decisions")
	l := Open(dir, Options{MaxBytes: 1 << 30})
	ev := sampleEvent(t, map[string]any{"call": map[string]any{"prompt": "p"}}, map[string]any{"deny": []any{}})
	ev.Timestamp = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	if err := l.Append(ev); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "2026-11-24.jsonl")
	file, err := os.OpenFile(f, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	file.WriteString(`{"timestamp":"not a time"}` + "\n")
	file.Close()
	ev2 := sampleEvent(t, map[string]any{}, map[string]any{"deny": []any{}})
	ev2.Timestamp = ev.Timestamp.Add(time.Minute)
	if err := l.Append(ev2); err != nil {
		t.Fatal(err)
	}
	c := &collector{t: t}
	srv := httptest.NewServer(c)
	defer srv.Close()
	p := Pusher{Dir: dir, URL: srv.URL, Mask: []string{"/input/call/prompt"}}
	res, err := p.Push(t.Context())
	if err != nil || res.Events != 2 || res.Skipped != 1 || len(c.events()) != 2 {
		t.Fatalf("push: %+v, %v; collector got %d", res, err, len(c.events()))
	}
	if res, err := p.Push(t.Context()); err != nil || res.Events != 0 {
		t.Errorf("second push: %+v, %v", res, err)
	}
}
