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
