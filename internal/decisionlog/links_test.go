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
	t.Parallel()
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

// The hook appends to the day's log outside the sandbox: a hard link the
// agent made there to ~/.bashrc (a file of the same user; the path check
// and the same-file check both pass) must not get the events, whose
// strings the agent chooses ("$(...)" runs at the next shell start).
func TestAttackAppendDoesNotWriteToAHardLink(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "decisions")
	l := Open(dir, Options{MaxBytes: 1 << 30})
	ev := sampleEvent(t, map[string]any{"command": "$(touch /tmp/pwned)"}, nil)
	if err := l.Append(ev); err != nil { // the directory and the day's file
		t.Fatal(err)
	}
	day := filepath.Join(dir, segment{day: ev.Timestamp.UTC().Format(dayLayout)}.name())
	bashrc := filepath.Join(t.TempDir(), ".bashrc")
	if err := os.WriteFile(bashrc, []byte("echo original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(day); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(bashrc, day); err != nil {
		t.Skip("no hard links here:", err)
	}
	_ = Open(dir, Options{MaxBytes: 1 << 30}).Append(ev)
	if got, _ := os.ReadFile(bashrc); string(got) != "echo original\n" {
		t.Errorf("the event was appended to ~/.bashrc through a hard link: %q", got)
	}
}

// The agent links .des (or .des/decisions) to a directory outside the
// project that holds decision logs (another project's): the push, outside
// the sandbox, must create nothing there, neither its lock nor its state.
func TestAttackPushWritesNothingThroughALinkedDirectory(t *testing.T) {
	t.Parallel()
	for _, at := range []string{".des", ".des/decisions"} {
		t.Run(at, func(t *testing.T) {
			root, outside := t.TempDir(), t.TempDir()
			elsewhere := filepath.Join(outside, "decisions") // another project's logs
			fillLog(t, elsewhere, 3, 10)
			before, _ := os.ReadDir(elsewhere)
			if err := os.MkdirAll(filepath.Join(root, ".des"), 0o755); err != nil {
				t.Fatal(err)
			}
			target := elsewhere
			if at == ".des" {
				os.Remove(filepath.Join(root, ".des"))
				target = outside
			}
			if err := os.Symlink(target, filepath.Join(root, at)); err != nil {
				t.Skip("no symbolic links here:", err)
			}
			srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			defer srv.Close()
			_, err := Pusher{Dir: filepath.Join(root, ".des", "decisions"), Root: root, URL: srv.URL}.Push(t.Context())
			if err == nil {
				t.Error("push through a linked directory succeeded")
			}
			after, _ := os.ReadDir(elsewhere)
			if len(after) != len(before) {
				var names []string
				for _, e := range after {
					names = append(names, e.Name())
				}
				t.Errorf("the push wrote beside another project's logs: %v", names)
			}
		})
	}
}
