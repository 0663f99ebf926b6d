package client

// The test binary is its own companion: re-executed with
// DES_CHANNEL_TEST_ROLE it becomes a decision server (what a client starts),
// a racing client process, or a fake server (run from a copy of the binary,
// so it is a different file with the same build ID).

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/channel"
	"github.com/deterministic-exec/des/internal/server"
)

const (
	envRole   = "DES_CHANNEL_TEST_ROLE"
	envStarts = "DES_CHANNEL_TEST_STARTS" // file: one line per server start, its pid
	envIdle   = "DES_CHANNEL_TEST_IDLE"   // server idle timeout
	envSock   = "DES_CHANNEL_TEST_SOCK"   // the fake's socket
	envSaw    = "DES_CHANNEL_TEST_SAW"    // the fake writes here what it received
	envDir    = "DES_CHANNEL_TEST_DIR"    // the racing client's runtime directory
)

func TestMain(m *testing.M) {
	switch os.Getenv(envRole) {
	case "server":
		os.Exit(runServer())
	case "client":
		os.Exit(runClient())
	case "fake":
		os.Exit(runFake())
	case "crash": // a companion that cannot serve
		if f, err := os.OpenFile(os.Getenv(envStarts), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
			fmt.Fprintln(f, os.Getpid())
			_ = f.Close()
		}
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// testHandler's behaviour is chosen by the request's stdin.
func testHandler(ctx context.Context, req *channel.Request) *channel.Reply {
	switch cmd, _, _ := strings.Cut(string(req.Stdin), "\n"); cmd {
	case "pid":
		return &channel.Reply{Stdout: []byte(strconv.Itoa(os.Getpid()))}
	case "env":
		return &channel.Reply{Stdout: []byte(strings.Join(req.Env, "\n")), Stderr: []byte(req.Root + " " + req.Cwd)}
	case "hang":
		time.Sleep(1500 * time.Millisecond) // ignores its deadline: the client must not
		return &channel.Reply{}
	case "panic":
		panic("test handler panics")
	case "slow":
		<-ctx.Done()
		return &channel.Reply{Exit: 3}
	}
	return &channel.Reply{Stdout: req.Stdin, Exit: 7}
}

func runServer() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	dir, lock := server.Inherited(nil)
	_, _, key, err := server.Self()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ln, err := server.Listen(ctx, dir, key, lock)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if f, err := os.OpenFile(os.Getenv(envStarts), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
		fmt.Fprintln(f, os.Getpid())
		_ = f.Close()
	}
	idle, _ := time.ParseDuration(os.Getenv(envIdle))
	if idle == 0 {
		idle = time.Minute
	}
	_ = server.Serve(ctx, ln, testHandler, server.Options{IdleTimeout: idle})
	return 0
}

func runClient() int {
	exe, _ := os.Executable()
	c := New(Options{Companion: exe, Dir: os.Getenv(envDir), WaitForStart: true, StartTimeout: 10 * time.Second,
		ServerEnv: serverEnv(os.Getenv(envStarts), "")})
	rep, err := c.Call(context.Background(), &channel.Request{Stdin: []byte("pid")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	os.Stdout.Write(rep.Stdout)
	return 0
}

// runFake answers every request "allow", announcing the real build ID.
func runFake() int {
	ln, err := net.Listen("unix", os.Getenv(envSock))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	exe, _ := os.Executable()
	id, _ := channel.ReadBuildID(exe)
	fmt.Println("ready")
	for {
		conn, err := ln.Accept()
		if err != nil {
			return 1
		}
		_ = channel.WriteJSON(conn, &channel.Hello{Protocol: channel.Protocol, BuildID: id, PID: os.Getpid()})
		_ = conn.SetReadDeadline(time.Now().Add(time.Second))
		if req, err := channel.ReadRequest(conn); err == nil {
			_ = os.WriteFile(os.Getenv(envSaw), req.Stdin, 0o600)
			_ = channel.WriteJSON(conn, &channel.Accept{Accepted: true})
			_ = channel.ReadJSON(conn, &channel.Commit{})
			_ = channel.WriteReply(conn, &channel.Reply{Stdout: []byte(`{"decision":"allow"}`)})
		}
		_ = conn.Close()
	}
}

func serverEnv(starts, idle string) []string {
	env := []string{envRole + "=server", envStarts + "=" + starts}
	if idle != "" {
		env = append(env, envIdle+"="+idle)
	}
	return env
}

// fixture is one test's runtime directory and the servers started in it.
type fixture struct {
	t      testing.TB
	dir    string
	starts string
	exe    string
}

func newFixture(t testing.TB) *fixture {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, dir: t.TempDir(), exe: exe}
	f.starts = t.TempDir() + "/starts"
	if err := os.Chmod(f.dir, 0o700); err != nil { // t.TempDir is 0755 on some versions
		t.Fatal(err)
	}
	t.Cleanup(f.stopServers)
	return f
}

func (f *fixture) client(wait bool, idle string) *Client {
	return New(Options{Companion: f.exe, Dir: f.dir, WaitForStart: wait, StartTimeout: 10 * time.Second,
		ServerEnv: serverEnv(f.starts, idle)})
}

// pids lists the servers started so far.
func (f *fixture) pids() []int {
	data, _ := os.ReadFile(f.starts)
	var out []int
	for _, l := range strings.Fields(string(data)) {
		if n, err := strconv.Atoi(l); err == nil {
			out = append(out, n)
		}
	}
	return out
}

func (f *fixture) stopServers() {
	// A server a call started in the background holds the start lock until
	// it listens: wait for that, so it has recorded its pid and is stopped
	// here rather than left writing into a directory being removed.
	if id, err := channel.ReadBuildID(f.exe); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if l, err := channel.AcquireLock(ctx, channel.LockPath(f.dir, channel.Key(id, f.exe))); err == nil {
			_ = l.Close()
		}
		cancel()
	}
	for _, pid := range f.pids() {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		waitGone(f.t, pid)
	}
}

// waitGone waits for the process to exit (the client that started it reaps it).
func waitGone(t testing.TB, pid int) {
	for range 500 {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		// An orphan whose init does not reap it is gone all the same, once
		// its last thread has exited (a zombie leader alone says nothing:
		// its other threads may still hold the socket).
		proc := "/proc/" + strconv.Itoa(pid)
		st, err := os.ReadFile(proc + "/stat")
		tasks, _ := os.ReadDir(proc + "/task")
		if err == nil && strings.Contains(string(st), ") Z ") && len(tasks) <= 1 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Errorf("server pid %d still running", pid)
}

func (f *fixture) call(c *Client, stdin string) (*channel.Reply, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.Call(ctx, &channel.Request{Root: "/root", Cwd: "/cwd", Stdin: []byte(stdin)})
}

// serverPid asks the running server for its pid.
func (f *fixture) serverPid(c *Client) int {
	f.t.Helper()
	rep, err := f.call(c, "pid")
	if err != nil {
		f.t.Fatalf("call: %v", err)
	}
	pid, err := strconv.Atoi(string(rep.Stdout))
	if err != nil {
		f.t.Fatalf("pid reply %q", rep.Stdout)
	}
	return pid
}

// inProcess serves in the test process itself (which is the companion).
func (f *fixture) inProcess(opts server.Options) (stop func() error) {
	f.t.Helper()
	_, _, key, err := server.Self()
	if err != nil {
		f.t.Fatal(err)
	}
	ln, err := server.Listen(context.Background(), f.dir, key, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.Serve(ctx, ln, testHandler, opts) }()
	var once bool
	var res error
	stop = func() error {
		if !once {
			once = true
			cancel()
			res = <-done
		}
		return res
	}
	f.t.Cleanup(func() { _ = stop() })
	return stop
}

func (f *fixture) sock() string {
	id, err := channel.ReadBuildID(f.exe)
	if err != nil {
		f.t.Fatal(err)
	}
	return channel.SocketPath(f.dir, channel.Key(id, f.exe))
}
