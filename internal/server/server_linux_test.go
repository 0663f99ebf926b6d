package server

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/channel"
)

func privateDir(t *testing.T) string {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

func echo(_ context.Context, req *channel.Request) *channel.Reply {
	return &channel.Reply{Stdout: req.Stdin}
}

func TestListen(t *testing.T) {
	dir := privateDir(t)
	_, _, key, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	sock := channel.SocketPath(dir, key)
	// A stale socket file is replaced.
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	_ = stale.Close()
	ln, err := Listen(t.Context(), dir, key, nil)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	defer ln.Close()
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket %v, %v: want mode 0600", fi, err)
	}
	// A live one is not.
	if _, err := Listen(t.Context(), dir, key, nil); !errors.Is(err, ErrAlreadyRunning) {
		t.Errorf("second Listen: %v, want ErrAlreadyRunning", err)
	}
	// The lock was released both times.
	l, ok, err := channel.TryLock(channel.LockPath(dir, key))
	if err != nil || !ok {
		t.Fatalf("lock left held: %v %v", ok, err)
	}
	_ = l.Unlock()
}

func TestListenRefusesUnsafeDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(t.Context(), dir, "k", nil); !errors.Is(err, channel.ErrUnsafeDir) {
		t.Errorf("Listen in a 0755 directory: %v", err)
	}
}

func TestServeIdleExit(t *testing.T) {
	dir := privateDir(t)
	_, _, key, _ := Self()
	ln, err := Listen(t.Context(), dir, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := Serve(t.Context(), ln, echo, Options{IdleTimeout: 200 * time.Millisecond}); !errors.Is(err, ErrIdle) {
		t.Errorf("Serve = %v, want ErrIdle", err)
	}
	if d := time.Since(start); d < 200*time.Millisecond || d > 2*time.Second {
		t.Errorf("idle exit after %v", d)
	}
	if _, err := os.Stat(channel.SocketPath(dir, key)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left behind: %v", err)
	}
}

// Another user cannot be served even when it reaches the socket (here, on
// purpose, in a directory open to all); the 0700 directory normally stops it
// first. Needs root to act as another user.
func TestServeRefusesAnotherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to connect as another user")
	}
	py := "/usr/bin/python3" // not a per-user shim another user cannot run
	if _, err := os.Stat(py); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(open, 0o777)
	_ = os.Chmod(filepath.Dir(open), 0o755)
	_ = os.Chmod(filepath.Dir(filepath.Dir(open)), 0o755)
	sock := filepath.Join(open, "s.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(sock, 0o777)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- Serve(ctx, ln, echo, Options{}) }()
	defer func() { cancel(); <-done }()
	script := `import socket,sys
s=socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1])
print(len(s.recv(100)))`
	cmd := exec.Command(py, "-c", script, sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "0" {
		t.Errorf("another user got %q, %v; want the connection closed without a hello", out, err)
	}
	// Our own user is served.
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var h channel.Hello
	if err := channel.ReadJSON(conn, &h); err != nil || h.PID != os.Getpid() || h.Protocol != channel.Protocol {
		t.Errorf("hello %+v, %v", h, err)
	}
}

func TestInherited(t *testing.T) {
	env := map[string]string{channel.EnvServerDir: "/d"}
	look := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if dir, lock := Inherited(look); dir != "/d" || lock != nil {
		t.Errorf("without a lock descriptor: %q %v", dir, lock)
	}
}

// A descriptor handed in as the lock that is not this build's lock file is
// left alone, and the real lock is taken and released.
func TestListenIgnoresForeignInheritedLock(t *testing.T) {
	dir := privateDir(t)
	_, _, key, _ := Self()
	other, err := os.Create(filepath.Join(t.TempDir(), "not-the-lock"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ln, err := Listen(t.Context(), dir, key, channel.AdoptLock(other))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, err := other.Stat(); err != nil {
		t.Errorf("the foreign descriptor was closed: %v", err)
	}
	l, ok, err := channel.TryLock(channel.LockPath(dir, key))
	if err != nil || !ok {
		t.Fatalf("lock left held: %v %v", ok, err)
	}
	_ = l.Unlock()
}
