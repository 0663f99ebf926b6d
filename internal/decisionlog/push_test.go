package decisionlog

import (
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// collector is an httptest collector of OPA decision logs: it checks each
// upload as OPA's plugin sends it, gunzips and decodes the array.
type collector struct {
	t        *testing.T
	mu       sync.Mutex
	token    string
	failFrom int // the upload (1-based) from which it answers 500; 0 never
	uploads  int
	chunks   [][]Event
	maxBody  int
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.uploads++
	switch {
	case r.Method != http.MethodPost:
		c.t.Errorf("method %s, want POST", r.Method)
	case r.Header.Get("Content-Type") != "application/json" || r.Header.Get("Content-Encoding") != "gzip":
		c.t.Errorf("headers %v, want application/json, gzip", r.Header)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+c.token && !(c.token == "" && got == "") {
		http.Error(w, "bad token", http.StatusUnauthorized)
		return
	}
	if c.failFrom > 0 && c.uploads >= c.failFrom {
		http.Error(w, "collector down", http.StatusInternalServerError)
		return
	}
	body, _ := io.ReadAll(r.Body)
	c.maxBody = max(c.maxBody, len(body))
	zr, err := gzip.NewReader(strings.NewReader(string(body)))
	if err != nil {
		c.t.Errorf("body not gzip: %v", err)
		http.Error(w, "bad gzip", http.StatusBadRequest)
		return
	}
	var events []Event
	if err := json.NewDecoder(zr).Decode(&events); err != nil {
		c.t.Errorf("body not a JSON array of events: %v", err)
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	c.chunks = append(c.chunks, events)
}

func (c *collector) events() []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	var all []Event
	for _, ch := range c.chunks {
		all = append(all, ch...)
	}
	return all
}

// noise is n bytes of hex that compress no better than real inputs.
func noise(n int) string {
	b := make([]byte, (n+1)/2)
	rand.Read(b)
	return hex.EncodeToString(b)[:n]
}

func fillLog(t *testing.T, dir string, n int, pad int) []string {
	t.Helper()
	l := Open(dir, Options{Mask: []string{"/input/call/prompt"}, MaxBytes: 1 << 30})
	var ids []string
	for i := range n {
		ev := sampleEvent(t, map[string]any{"i": i, "pad": noise(pad), "call": map[string]any{"prompt": "secret", "subagent_type": "coder"}},
			map[string]any{"deny": []any{map[string]any{"code": "DES-X", "msg": "no"}}, "warn": []any{}, "exception": []any{}})
		ev.Timestamp = time.Date(2026, 11, 24+i%2, 10, 0, i, 0, time.UTC) // two days: two files
		if err := l.Append(ev); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ev.DecisionID)
	}
	return ids
}

func TestPushSendsEveryEventOnce(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "decisions")
	ids := fillLog(t, dir, 120, 3000)
	c := &collector{t: t, token: "s3cret"}
	srv := httptest.NewServer(c)
	defer srv.Close()
	p := Pusher{Dir: dir, URL: srv.URL + "/logs", Token: "s3cret"}
	res, err := p.Push(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	got := c.events()
	if res.Events != len(ids) || len(got) != len(ids) || res.Pending != 0 {
		t.Fatalf("result %+v, collector got %d, want %d", res, len(got), len(ids))
	}
	if res.Chunks < 2 || c.maxBody > ChunkBytes {
		t.Errorf("%d chunks, largest %d bytes: want several, each at most %d", res.Chunks, c.maxBody, ChunkBytes)
	}
	seen := map[string]bool{}
	for _, ev := range got {
		seen[ev.DecisionID] = true
		in := (*ev.Input).(map[string]any)
		if ev.Path != "des/gates/tool_use" || ev.Labels["app"] != "des" || ev.Bundles["des"].Revision != "des-builtin" ||
			ev.Timestamp.IsZero() || ev.RequestedBy != "des" || in["call"].(map[string]any)["prompt"] != nil || ev.Erased[0] != "/input/call/prompt" {
			t.Fatalf("event as received: %+v", ev)
		}
		res := (*ev.Result).(map[string]any)
		if res["deny"].([]any)[0].(map[string]any)["code"] != "DES-X" {
			t.Fatalf("result as received: %v", res)
		}
	}
	for _, id := range ids {
		if !seen[id] {
			t.Fatalf("decision %s not received", id)
		}
	}
	// Nothing new: nothing sent.
	before := c.uploads
	if res, err := p.Push(t.Context()); err != nil || res.Events != 0 || c.uploads != before {
		t.Errorf("second push: %+v, %v, %d uploads", res, err, c.uploads-before)
	}
	// New events: only they are sent.
	more := fillLog(t, dir, 3, 10)
	if res, err := p.Push(t.Context()); err != nil || res.Events != 3 {
		t.Errorf("push of 3 new: %+v, %v", res, err)
	}
	got = c.events()
	if len(got) != len(ids)+3 {
		t.Errorf("collector has %d events, want %d", len(got), len(ids)+3)
	}
	for _, ev := range got[len(ids):] {
		if ev.DecisionID != more[0] && ev.DecisionID != more[1] && ev.DecisionID != more[2] {
			t.Errorf("second push sent %s, not one of the new events", ev.DecisionID)
		}
	}
}

// A collector that fails halfway keeps what it accepted; the next push
// sends the rest, and nothing twice.
func TestPushResumesAfterCollectorFailure(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "decisions")
	ids := fillLog(t, dir, 120, 3000)
	c := &collector{t: t, failFrom: 3}
	srv := httptest.NewServer(c)
	defer srv.Close()
	p := Pusher{Dir: dir, URL: srv.URL}
	res, err := p.Push(t.Context())
	var ce *CollectorError
	if !errors.As(err, &ce) || ce.Status != http.StatusInternalServerError || !strings.Contains(err.Error(), "collector down") {
		t.Fatalf("err = %v, want a CollectorError 500 with the collector's answer", err)
	}
	accepted := len(c.events())
	if res.Chunks != 2 || res.Events != accepted || res.Pending != len(ids)-accepted || accepted == 0 {
		t.Fatalf("result %+v; collector accepted %d of %d", res, accepted, len(ids))
	}
	c.mu.Lock()
	c.failFrom = 0
	c.mu.Unlock()
	res, err = p.Push(t.Context())
	if err != nil || res.Events != len(ids)-accepted {
		t.Fatalf("resumed push: %+v, %v; want %d events", res, err, len(ids)-accepted)
	}
	got := c.events()
	seen := map[string]int{}
	for _, ev := range got {
		seen[ev.DecisionID]++
	}
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("decision %s received %d times, want once", id, seen[id])
		}
	}
}

func TestPushTokenAndUnreachableCollector(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "decisions")
	fillLog(t, dir, 2, 10)
	c := &collector{t: t, token: "right"}
	srv := httptest.NewServer(c)
	p := Pusher{Dir: dir, URL: srv.URL, Token: "wrong"}
	_, err := p.Push(t.Context())
	var ce *CollectorError
	if !errors.As(err, &ce) || ce.Status != http.StatusUnauthorized {
		t.Errorf("wrong token: err = %v, want a 401 CollectorError", err)
	}
	p.Token = "right"
	if res, err := p.Push(t.Context()); err != nil || res.Events != 2 {
		t.Errorf("right token: %+v, %v", res, err)
	}
	srv.Close()
	fillLog(t, dir, 1, 10)
	res, err := p.Push(t.Context())
	if !errors.As(err, &ce) || ce.Status != 0 || res.Pending != 1 {
		t.Errorf("collector gone: %+v, err = %v; want an unreachable CollectorError, 1 pending", res, err)
	}
}

// A line cut short (a crash mid-write) is never sent, and never blocks
// the events after it.
func TestPushSkipsTornLine(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "decisions")
	fillLog(t, dir, 1, 10)
	names, _ := segmentNames(dir)
	f, err := os.OpenFile(filepath.Join(dir, names[0].name()), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"decision_id": "torn", "inp` + "\n")
	f.WriteString(`{"long": "` + strings.Repeat("x", windowBytes) + `"}` + "\n") // longer than a read window
	f.Close()
	ids := fillLog(t, dir, 1, 10)
	c := &collector{t: t}
	srv := httptest.NewServer(c)
	defer srv.Close()
	res, err := Pusher{Dir: dir, URL: srv.URL}.Push(t.Context())
	if err != nil || res.Events != 2 || res.Skipped != 2 {
		t.Fatalf("push: %+v, %v; want 2 events, 2 skipped", res, err)
	}
	if got := c.events(); got[len(got)-1].DecisionID != ids[0] {
		t.Errorf("last event %s, want %s", got[len(got)-1].DecisionID, ids[0])
	}
}

// A file replaced by a shorter one (restored from a backup, say) is read
// from its start.
func TestPushAfterFileReplaced(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "decisions")
	fillLog(t, dir, 4, 2000)
	c := &collector{t: t}
	srv := httptest.NewServer(c)
	defer srv.Close()
	p := Pusher{Dir: dir, URL: srv.URL}
	if res, err := p.Push(t.Context()); err != nil || res.Events != 4 {
		t.Fatalf("push: %+v, %v", res, err)
	}
	names, _ := segmentNames(dir)
	for _, s := range names {
		if err := os.Truncate(filepath.Join(dir, s.name()), 0); err != nil {
			t.Fatal(err)
		}
	}
	ids := fillLog(t, dir, 2, 10)
	res, err := p.Push(t.Context())
	if err != nil || res.Events != 2 {
		t.Fatalf("push after the files were replaced: %+v, %v; want the 2 new events", res, err)
	}
	got := c.events()
	if got[len(got)-1].DecisionID != ids[0] && got[len(got)-1].DecisionID != ids[1] {
		t.Errorf("last received %s, not a new event", got[len(got)-1].DecisionID)
	}
}
