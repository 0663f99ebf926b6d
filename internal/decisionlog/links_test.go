package decisionlog

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// The push runs outside Claude Code's sandbox (des-hook logs push, the warm
// server's pusher), and .des/decisions is not in the sandbox's denyWrite: a
// link the agent puts at the push state's name while the upload runs (after
// the state was read) must not carry the state's write to ~/.bashrc.
func TestAttackPushStateIsNotWrittenThroughALink(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "decisions")
	fillLog(t, dir, 3, 10)
	bashrc := filepath.Join(t.TempDir(), ".bashrc")
	if err := os.WriteFile(bashrc, []byte("echo original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var url string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The agent, while the upload runs.
		st := filepath.Join(dir, stateFile(url))
		_ = os.Remove(st)
		_ = os.Symlink(bashrc, st)
	}))
	defer srv.Close()
	url = srv.URL + "/logs"
	_, _ = Pusher{Dir: dir, URL: url}.Push(t.Context())
	if got, _ := os.ReadFile(bashrc); string(got) != "echo original\n" {
		t.Errorf("~/.bashrc was replaced by the push state through a link: %q", got)
	}
}
