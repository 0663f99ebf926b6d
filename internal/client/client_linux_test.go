package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/channel"
	"github.com/deterministic-exec/des/internal/server"
)

// eventually retries call until it succeeds (a server started in the
// background comes up).
func eventually(t *testing.T, f *fixture, c *Client, stdin string) *channel.Reply {
	t.Helper()
	var err error
	for range 300 {
		var rep *channel.Reply
		if rep, err = f.call(c, stdin); err == nil {
			return rep
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no server came up: %v", err)
	return nil
}

func TestColdCallFallsBackAndStartsServer(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.client(false, "")
	_, err := f.call(c, "pid")
	if !errors.Is(err, ErrNotAccepted) || !errors.Is(err, ErrNoServer) || !strings.Contains(err.Error(), "started one") {
		t.Fatalf("cold call: %v; want ErrNotAccepted/ErrNoServer, started one", err)
	}
	rep := eventually(t, f, c, "env")
	if got := string(rep.Stderr); got != "/root /cwd" {
		t.Errorf("root and cwd arrived as %q", got)
	}
	rep = eventually(t, f, c, "hello")
	if string(rep.Stdout) != "hello" || rep.Exit != 7 {
		t.Errorf("reply %q exit %d", rep.Stdout, rep.Exit)
	}
	if n := len(f.pids()); n != 1 {
		t.Errorf("%d servers started, want 1", n)
	}
	if fi, err := os.Stat(f.sock()); err != nil || fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 {
		t.Errorf("socket %v, %v: want a 0600 socket", fi, err)
	}
}

func TestRacingGoroutinesStartOneServer(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const n = 16
	pids := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c := f.client(true, "") // one Client each: like separate processes
			rep, err := f.call(c, "pid")
			if err != nil {
				t.Errorf("client %d: %v", i, err)
				return
			}
			pids[i], _ = strconv.Atoi(string(rep.Stdout))
		})
	}
	wg.Wait()
	if started := f.pids(); len(started) != 1 || slices.ContainsFunc(pids, func(p int) bool { return p != started[0] }) {
		t.Errorf("servers started %v, answered by %v; want exactly one", started, pids)
	}
}

func TestRacingProcessesStartOneServer(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const n = 6
	cmds := make([]*exec.Cmd, n)
	outs := make([]bytes.Buffer, n)
	for i := range n {
		cmd := exec.Command(f.exe)
		cmd.Env = append(os.Environ(), envRole+"=client", envDir+"="+f.dir, envStarts+"="+f.starts)
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		cmds[i] = cmd
	}
	for _, cmd := range cmds {
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	var pids []string
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("client process %d: %v: %s", i, err, outs[i].String())
		}
		pids = append(pids, outs[i].String())
	}
	// The servers were started by the client processes, now gone: not our
	// children, so wait for them by polling rather than reaping.
	started := f.pids()
	if len(started) != 1 {
		t.Fatalf("servers started %v, want exactly one", started)
	}
	for _, p := range pids {
		if p != strconv.Itoa(started[0]) {
			t.Errorf("answered by %v, started %v", pids, started)
			break
		}
	}
}

func TestIdleServerExits(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.client(true, "300ms")
	first := f.serverPid(c)
	waitGone(t, first)
	if _, err := os.Stat(f.sock()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an idle server left its socket: %v", err)
	}
	if second := f.serverPid(c); second == first {
		t.Errorf("same server %d after idle exit", first)
	}
	if n := len(f.pids()); n != 2 {
		t.Errorf("%d servers started, want 2", n)
	}
}

func TestStaleSocketIsReplaced(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: f.sock(), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	_ = ln.Close() // leaves a socket file nobody listens on
	if _, err := os.Stat(f.sock()); err != nil {
		t.Fatal(err)
	}
	c := f.client(true, "")
	f.serverPid(c)
	if n := len(f.pids()); n != 1 {
		t.Errorf("%d servers started, want 1", n)
	}
}

func TestKilledServerIsReplaced(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.client(true, "")
	first := f.serverPid(c)
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, first)
	second := f.serverPid(c)
	if second == first || len(f.pids()) != 2 {
		t.Errorf("after SIGKILL of %d: answered by %d, started %v", first, second, f.pids())
	}
}

func TestFakeServerIsRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	// A copy of the companion: the same build ID, but not the companion file.
	fake := filepath.Join(t.TempDir(), "fake")
	data, err := os.ReadFile(f.exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fake, data, 0o755); err != nil {
		t.Fatal(err)
	}
	saw := filepath.Join(t.TempDir(), "saw")
	cmd := exec.Command(fake)
	cmd.Env = append(os.Environ(), envRole+"=fake", envSock+"="+f.sock(), envSaw+"="+saw)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if _, err := io.ReadFull(out, make([]byte, 6)); err != nil { // "ready\n"
		t.Fatal(err)
	}
	for _, wait := range []bool{false, true} {
		_, err := f.call(f.client(wait, ""), "secret event")
		if !errors.Is(err, ErrNotAccepted) || !errors.Is(err, ErrPeerMismatch) || !strings.Contains(err.Error(), fake) {
			t.Errorf("fake server: %v; want ErrPeerMismatch naming %s", err, fake)
		}
	}
	if _, err := os.Stat(saw); !errors.Is(err, os.ErrNotExist) {
		t.Error("the client sent its request to the fake server")
	}
	if len(f.pids()) != 0 {
		t.Errorf("a server was started beside the fake: %v", f.pids())
	}
}

// A peer that is the companion file but announces another build is refused
// (the in-process listener here runs the very test binary).
func TestWrongBuildIDIsRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ln, err := net.Listen("unix", f.sock())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			_ = channel.WriteJSON(conn, &channel.Hello{Protocol: channel.Protocol, BuildID: "other/build", PID: os.Getpid()})
			_ = conn.Close()
		}
	}()
	if _, err := f.call(f.client(false, ""), "x"); !errors.Is(err, ErrPeerMismatch) || !errors.Is(err, ErrNotAccepted) {
		t.Errorf("wrong build ID: %v; want ErrPeerMismatch", err)
	}
}

// A server that takes the connection but never says hello costs the hello
// timeout, not the request's deadline, whether the request is small enough
// to be written before the hello (pipelined) or not; nothing is committed.
func TestSilentServerFallsBackWithinHelloTimeout(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ln, err := net.Listen("unix", f.sock())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	committed := make(chan bool, 4)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				// Read whatever comes (so a large write never blocks on
				// us), and never answer.
				var got bytes.Buffer
				_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
				_, _ = io.Copy(&got, conn)
				committed <- bytes.Contains(got.Bytes(), []byte(`"commit"`))
			}()
		}
	}()
	for _, size := range []int{10, pipelineMax + 1} {
		c := f.client(false, "")
		c.opts.HelloTimeout = 200 * time.Millisecond
		start := time.Now()
		_, err := f.call(c, strings.Repeat("x", size))
		if !errors.Is(err, ErrNotAccepted) || errors.Is(err, ErrNoAnswer) {
			t.Errorf("%d bytes, silent server: %v; want ErrNotAccepted", size, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%d bytes: the client waited %v for a hello, past its 200ms timeout", size, d)
		}
		if <-committed {
			t.Errorf("%d bytes: the client committed to a server that never said hello", size)
		}
	}
}

// A server that closes without accepting, or refuses: nothing was run, fall back.
func TestNoAcceptFallsBack(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id, _ := channel.ReadBuildID(f.exe)
	ln, err := net.Listen("unix", f.sock())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	refuse := make(chan bool, 2)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			_ = channel.WriteJSON(conn, &channel.Hello{Protocol: channel.Protocol, BuildID: id, PID: os.Getpid()})
			_, _ = channel.ReadRequest(conn)
			if <-refuse {
				_ = channel.WriteJSON(conn, &channel.Accept{Error: "protocol 1, this server speaks 2"})
			}
			_ = conn.Close()
		}
	}()
	refuse <- false
	if _, err := f.call(f.client(false, ""), "x"); !errors.Is(err, ErrNotAccepted) || errors.Is(err, ErrNoAnswer) {
		t.Errorf("closed before accept: %v; want ErrNotAccepted", err)
	}
	refuse <- true
	if _, err := f.call(f.client(false, ""), "x"); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "speaks 2") {
		t.Errorf("refused: %v; want ErrRefused with the server's reason", err)
	}
}

func TestAcceptThenSilenceIsNoAnswer(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.inProcess(server.Options{})
	c := f.client(false, "")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Call(ctx, &channel.Request{Stdin: []byte("hang")})
	if !errors.Is(err, ErrNoAnswer) || errors.Is(err, ErrNotAccepted) {
		t.Errorf("silent server: %v; want ErrNoAnswer", err)
	}
	if d := time.Since(start); d > time.Second { // the handler hangs 1.5 s
		t.Errorf("the client waited %v past a 300ms deadline", d)
	}
	// The handler's own context ends at the request's deadline.
	rep, err := c.Call(context.Background(), &channel.Request{Stdin: []byte("slow"), Deadline: time.Now().Add(200 * time.Millisecond).UnixMilli()})
	if err != nil || rep.Exit != 3 {
		t.Errorf("handler past its deadline: %v, %+v", err, rep)
	}
}

func TestPanickingHandlerIsNoAnswer(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.inProcess(server.Options{})
	_, err := f.call(f.client(false, ""), "panic")
	if !errors.Is(err, ErrNoAnswer) || !strings.Contains(err.Error(), "test handler panics") {
		t.Errorf("panic: %v; want ErrNoAnswer with the panic", err)
	}
	if rep, err := f.call(f.client(false, ""), "still"); err != nil || string(rep.Stdout) != "still" {
		t.Errorf("after a panic: %v", err)
	}
}

func TestOversizedRequests(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.inProcess(server.Options{})
	c := f.client(false, "")
	big := bytes.Repeat([]byte("x"), channel.MaxStdin)
	if rep, err := f.call(c, string(big)); err != nil || len(rep.Stdout) != len(big) {
		t.Fatalf("an 8 MiB event: %v", err)
	}
	if _, err := f.call(c, string(big)+"x"); !errors.Is(err, ErrNotAccepted) || !errors.Is(err, channel.ErrTooLarge) {
		t.Errorf("oversized event from the client: %v; want ErrNotAccepted, too large", err)
	}
	// A client that announces too much anyway is told so and cut off.
	for _, frames := range [][]int{{channel.MaxMeta + 1}, {2, channel.MaxStdin + 1}} {
		conn, err := net.Dial("unix", f.sock())
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		if err := channel.ReadJSON(conn, &channel.Hello{}); err != nil {
			t.Fatal(err)
		}
		for _, n := range frames {
			if n == 2 {
				_ = channel.WriteFrame(conn, []byte("{}"))
				continue
			}
			_, _ = conn.Write([]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
		}
		var a channel.Accept
		if err := channel.ReadJSON(conn, &a); err != nil || a.Accepted || !strings.Contains(a.Error, "too large") {
			t.Errorf("frames %v: accept %+v, %v; want a refusal", frames, a, err)
		}
		if _, err := conn.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("frames %v: connection left open: %v", frames, err)
		}
		_ = conn.Close()
	}
}

func TestSlowClientIsCutOff(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.inProcess(server.Options{ReadTimeout: 300 * time.Millisecond, MaxConns: 2})
	var conns []net.Conn
	for range 2 { // as many as the server serves at once
		conn, err := net.Dial("unix", f.sock())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conns = append(conns, conn)
	}
	start := time.Now()
	rep, err := f.call(f.client(false, ""), "served")
	if err != nil || string(rep.Stdout) != "served" {
		t.Errorf("a request behind slow clients: %v", err)
	}
	for _, conn := range conns {
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		_ = channel.ReadJSON(conn, &channel.Hello{})
		if _, err := conn.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("a client that sends nothing was not cut off: %v", err)
		}
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("slow clients held the server %v", d)
	}
}

func TestManyClientsAtOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := f.client(true, "")
	f.serverPid(c) // started
	const n = 100
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			want := "event " + strconv.Itoa(i)
			rep, err := f.call(f.client(true, ""), want)
			if err != nil || string(rep.Stdout) != want {
				t.Errorf("client %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if len(f.pids()) != 1 {
		t.Errorf("servers started: %v", f.pids())
	}
}

func TestExecutableChangedStopsServer(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	exe := filepath.Join(t.TempDir(), "companion")
	data, err := os.ReadFile(f.exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	stop := f.inProcess(server.Options{Executable: exe, IdleTimeout: time.Hour})
	c := f.client(false, "")
	if _, err := f.call(c, "x"); err != nil {
		t.Fatal(err)
	}
	// Reinstalled: another file in its place, even with the same build ID
	// (clients would refuse this server's /proc/<pid>/exe from now on).
	if err := os.WriteFile(exe+".new", data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(exe+".new", exe); err != nil {
		t.Fatal(err)
	}
	if _, err := f.call(c, "x"); !errors.Is(err, ErrNotAccepted) || !strings.Contains(err.Error(), "hello") {
		t.Errorf("after the executable changed: %v; want ErrNotAccepted, no hello", err)
	}
	if err := stop(); !errors.Is(err, server.ErrExecutableChanged) {
		t.Errorf("Serve returned %v, want ErrExecutableChanged", err)
	}
}

func TestEnvAndRequestFields(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.inProcess(server.Options{})
	env := channel.ForwardEnv([]string{"DES_DECISION_SERVER=auto", "GITHUB_TOKEN=t", "HOME=/h"})
	rep, err := f.newCall(env)
	if err != nil || string(rep.Stdout) != "DES_DECISION_SERVER=auto\nHOME=/h" {
		t.Errorf("env arrived as %q, %v", rep.Stdout, err)
	}
}

func (f *fixture) newCall(env []string) (*channel.Reply, error) {
	return f.client(false, "").Call(context.Background(), &channel.Request{Env: env, Stdin: []byte("env")})
}

func TestUnsafeRuntimeDirFallsBack(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	if err := os.Chmod(f.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := f.call(f.client(true, ""), "x")
	if !errors.Is(err, ErrNotAccepted) || !errors.Is(err, channel.ErrUnsafeDir) || !strings.Contains(err.Error(), "0755") {
		t.Errorf("unsafe directory: %v; want ErrNotAccepted naming the mode", err)
	}
	if len(f.pids()) != 0 {
		t.Error("a server was started in an unsafe directory")
	}
}

func TestClientImportGraph(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/deterministic-exec/des/internal/channel") {
		t.Fatalf("go list -deps gave %d packages without internal/channel: not the client's graph", len(deps))
	}
	for _, d := range deps {
		if strings.Contains(d, "github.com/open-policy-agent") || strings.Contains(d, "jsonschema") ||
			(strings.Contains(d, ".") && !strings.HasPrefix(d, "github.com/deterministic-exec/des/internal/") && !strings.HasPrefix(d, "vendor/")) {
			t.Errorf("the client links %s", d)
		}
	}
}

func BenchmarkRoundTrip(b *testing.B) {
	f := newFixture(b)
	_, _, key, err := server.Self()
	if err != nil {
		b.Fatal(err)
	}
	ln, err := server.Listen(context.Background(), f.dir, key, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- server.Serve(ctx, ln, testHandler, server.Options{}) }()
	defer func() { cancel(); <-done }()
	c := f.client(false, "")
	event := bytes.Repeat([]byte("e"), 2048)
	for b.Loop() {
		if _, err := c.Call(context.Background(), &channel.Request{Stdin: event}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestServerDyingBeforeListeningIsNotRestartedAtOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	c := New(Options{Companion: f.exe, Dir: f.dir, ServerEnv: []string{envRole + "=crash", envStarts + "=" + f.starts}})
	if _, err := f.call(c, "x"); !errors.Is(err, ErrNoServer) || !strings.Contains(err.Error(), "started one") {
		t.Fatalf("cold call: %v", err)
	}
	for range 300 {
		if len(f.pids()) == 1 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	pids := f.pids()
	if len(pids) != 1 {
		t.Fatalf("started %v", pids)
	}
	waitGone(t, pids[0])
	for range 3 {
		_, err := f.call(c, "x")
		if !errors.Is(err, ErrNotAccepted) || !strings.Contains(err.Error(), "exited before listening") {
			t.Errorf("after a failed start: %v; want a fallback saying the server exited before listening", err)
		}
	}
	if n := len(f.pids()); n != 1 {
		t.Errorf("%d starts of a companion that cannot serve, want 1", n)
	}
}

// Stopping the server lets the requests in flight finish.
func TestStopWaitsForRequestsInFlight(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	stop := f.inProcess(server.Options{})
	c := f.client(false, "")
	done := make(chan error, 1)
	go func() {
		rep, err := c.Call(context.Background(), &channel.Request{Stdin: []byte("slow"), Deadline: time.Now().Add(500 * time.Millisecond).UnixMilli()})
		if err == nil && rep.Exit != 3 {
			err = errors.New("exit " + strconv.Itoa(rep.Exit))
		}
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Errorf("Serve = %v", err)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("Serve returned after %v, before the request in flight ended", d)
	}
	if err := <-done; err != nil {
		t.Errorf("request in flight: %v", err) // cut off: ErrNoAnswer
	}
	if _, err := f.call(c, "x"); !errors.Is(err, ErrNotAccepted) {
		t.Errorf("after stop: %v; want a fallback", err)
	}
}

func TestSocketPathTooLong(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	long := filepath.Join(f.dir, strings.Repeat("d", 100))
	if err := os.Mkdir(long, 0o700); err != nil {
		t.Fatal(err)
	}
	c := New(Options{Companion: f.exe, Dir: long})
	_, err := f.call(c, "x")
	if !errors.Is(err, ErrNotAccepted) || !errors.Is(err, channel.ErrSocketPathTooLong) || !strings.Contains(err.Error(), "XDG_RUNTIME_DIR") {
		t.Errorf("long socket path: %v; want a fallback naming the fix", err)
	}
}
