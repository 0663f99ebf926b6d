package client

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/channel"
	"github.com/deterministic-exec/des/internal/server"
)

// copyCompanion copies the test binary (the companion) into a directory of
// its own: another install of the same build.
func copyCompanion(t *testing.T, f *fixture) string {
	t.Helper()
	data, err := os.ReadFile(f.exe)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "companion")
	if err := os.WriteFile(p, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// Two installs of one build (a copy in another directory) each get a server
// of their own, at the same time: the second is not refused for good because
// the first one's server holds a socket named after the build alone.
func TestSecondInstallGetsItsOwnServer(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	first := f.client(true, "")
	pid1 := f.serverPid(first)
	copied := copyCompanion(t, f)
	second := New(Options{Companion: copied, Dir: f.dir, WaitForStart: true, StartTimeout: 10 * time.Second,
		ServerEnv: serverEnv(f.starts, "")})
	pid2 := f.serverPid(second)
	if pid2 == pid1 {
		t.Fatalf("both installs answered by server %d", pid1)
	}
	if exe, err := os.Readlink("/proc/" + strconv.Itoa(pid2) + "/exe"); err != nil || exe != copied {
		t.Errorf("the second install's server runs %q (%v), want %s", exe, err, copied)
	}
	if got := f.serverPid(first); got != pid1 {
		t.Errorf("first install now answered by %d, want %d", got, pid1)
	}
}

// A companion named through a symbolic link reaches the server it starts:
// that server names its socket after the file it runs (os.Executable resolves
// links), and so does the client.
func TestLinkedCompanionReachesItsServer(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	link := filepath.Join(t.TempDir(), "des-engine")
	if err := os.Symlink(f.exe, link); err != nil {
		t.Fatal(err)
	}
	c := New(Options{Companion: link, Dir: f.dir, WaitForStart: true, StartTimeout: 10 * time.Second,
		ServerEnv: serverEnv(f.starts, "")})
	pid := f.serverPid(c)
	if got := f.serverPid(f.client(false, "")); got != pid {
		t.Errorf("through the file itself: server %d, through the link %d; want one server", got, pid)
	}
}

// NoteFallback records why the last event was decided in process; a reply
// from the server removes the record; Probe says whether a server answers
// without starting one.
func TestFallbackRecordAndProbe(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.client(false, "")
	if _, _, err := c.Probe(t.Context()); !errors.Is(err, ErrNoServer) || !strings.Contains(err.Error(), "nothing listens on "+f.sock()) {
		t.Errorf("probe without a server: %v", err)
	}
	if len(f.pids()) != 0 {
		t.Fatal("Probe started a server")
	}
	if _, ok, err := c.LastFallback(); ok || err != nil {
		t.Errorf("a fall-back record before any call: %v, %v", ok, err)
	}
	_, err := f.call(c, "x")
	if !errors.Is(err, ErrNoServer) {
		t.Fatalf("cold call: %v", err)
	}
	c.NoteFallback(err)
	rec, ok, rerr := c.LastFallback()
	if !ok || rerr != nil || rec.Cause != channel.CauseNoServer || rec.Why != err.Error() || rec.Socket != f.sock() ||
		rec.Companion != f.exe || time.Since(rec.Time) > time.Minute {
		t.Fatalf("record %+v, %v, %v", rec, ok, rerr)
	}
	eventually(t, f, c, "x")
	if _, ok, _ := c.LastFallback(); ok {
		t.Error("the record outlived an event the server decided")
	}
	pid, sock, err := c.Probe(t.Context())
	if err != nil || sock != f.sock() || pid != f.pids()[0] {
		t.Errorf("probe of the warm server: pid %d, %s, %v; want %v", pid, sock, err, f.pids())
	}
}

// A fall-back of each cause is classified for status.
func TestCause(t *testing.T) {
	t.Parallel()
	for err, want := range map[error]string{
		notAccepted(ErrNoServer, "x"):                      channel.CauseNoServer,
		notAccepted(ErrPeerMismatch, "x"):                  channel.CausePeerMismatch,
		notAccepted(ErrRefused, "x"):                       channel.CauseRefused,
		notAcceptedErr(errors.ErrUnsupported, ErrNoServer): channel.CauseUnsupported,
		ErrNotSent:             channel.CauseNotSent,
		errors.New("whatever"): channel.CauseOther,
	} {
		if got := Cause(err); got != want {
			t.Errorf("Cause(%v) = %s, want %s", err, got, want)
		}
	}
}

// Probe refuses a server that is not the companion file, as Call does.
func TestProbeRefusesAnotherFile(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	copied := copyCompanion(t, f)
	// The in-process server runs the test binary; a client whose companion
	// is the copy looks at the copy's socket: bind the test binary's server
	// there, as a link from one socket to another would.
	id, err := channel.ReadBuildID(copied)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := server.Listen(t.Context(), f.dir, channel.Key(id, copied), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c := New(Options{Companion: copied, Dir: f.dir})
	if _, _, err := c.Probe(t.Context()); !errors.Is(err, ErrPeerMismatch) || !strings.Contains(err.Error(), f.exe) {
		t.Errorf("probe of another file's server: %v; want ErrPeerMismatch naming %s", err, f.exe)
	}
}
