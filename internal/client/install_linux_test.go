package client

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
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
