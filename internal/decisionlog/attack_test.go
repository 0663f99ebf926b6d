package decisionlog

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// A collector URL that redirects (http:// to https://, a path moved) turns
// the POST into a GET, which a web server answers 200: the push counted
// every event as accepted and never sent them again, though no collector
// received one. A redirect is no acceptance: the push fails naming where
// the collector points, and the events stay for the next push.
func TestAttackPushRedirectIsNoAcceptance(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "decisions")
	ids := fillLog(t, dir, 5, 10)
	c := &collector{t: t}
	mux := http.NewServeMux()
	mux.Handle("POST /logs", c)
	mux.HandleFunc("GET /logs", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>collector</html>")) })
	mux.Handle("/old", http.RedirectHandler("/logs", http.StatusMovedPermanently))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	res, err := Pusher{Dir: dir, URL: srv.URL + "/old"}.Push(t.Context())
	if err == nil || !strings.Contains(err.Error(), "301") || !strings.Contains(err.Error(), srv.URL+"/logs") || res.Events != 0 {
		t.Errorf("push to a redirecting URL: %+v, %v; want a failure naming the redirect's target", res, err)
	}
	res, err = Pusher{Dir: dir, URL: srv.URL + "/logs"}.Push(t.Context())
	if err != nil || res.Events != len(ids) || len(c.events()) != len(ids) {
		t.Errorf("push to the collector itself: %+v, %v, collector has %d of %d", res, err, len(c.events()), len(ids))
	}
}

// Whoever runs `des-hook logs push` with their own DES_DECISION_LOG_URL
// (an agent's shell: the decision logs are not in the sandbox's denyWrite,
// since a sandboxed git commit appends to them) posted the events to any
// URL answering 2xx, and the push state then counted them as accepted: the
// organisation's collector never received them. What a collector accepted
// is recorded per collector URL.
func TestAttackPushToDecoyKeepsEventsForCollector(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "decisions")
	ids := fillLog(t, dir, 7, 10)
	decoy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer decoy.Close()
	if res, err := (Pusher{Dir: dir, URL: decoy.URL + "/anything"}).Push(t.Context()); err != nil || res.Events != len(ids) {
		t.Fatalf("push to the decoy: %+v, %v", res, err)
	}
	c := &collector{t: t}
	srv := httptest.NewServer(c)
	defer srv.Close()
	res, err := Pusher{Dir: dir, URL: srv.URL + "/logs"}.Push(t.Context())
	if err != nil || res.Events != len(ids) || len(c.events()) != len(ids) {
		t.Errorf("push to the collector after a decoy: %+v, %v; the collector has %d of %d events", res, err, len(c.events()), len(ids))
	}
}
