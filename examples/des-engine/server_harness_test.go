package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/deterministic-exec/des/internal/channel"
)

// testServerPID returns the pid of the decision server of engineBin that
// listens in the runtime directory run (XDG_RUNTIME_DIR), waiting for one
// still starting (it holds the start lock until it listens); ok is false
// when none answers.
func testServerPID(run string) (pid int, ok bool, err error) {
	return testServerPIDOf(run, engineBin)
}

// testEngineKey is the key of the install of des-engine at engine (its
// build ID and its path, links resolved, as the client computes it).
func testEngineKey(engine string) (string, error) {
	id, err := channel.ReadBuildID(engine)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(engine)
	if err != nil {
		return "", err
	}
	return channel.Key(id, real), nil
}

// testServerPIDOf is testServerPID for the des-engine at engine.
func testServerPIDOf(run, engine string) (pid int, ok bool, err error) {
	key, err := testEngineKey(engine)
	if err != nil {
		return 0, false, err
	}
	dir := filepath.Join(run, "des")
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return 0, false, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lock, err := channel.AcquireLock(ctx, channel.LockPath(dir, key))
	if err != nil {
		return 0, false, err
	}
	defer lock.Unlock()
	conn, err := net.DialTimeout("unix", channel.SocketPath(dir, key), time.Second)
	if err != nil {
		return 0, false, nil // no server, or a stale socket
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	var hello channel.Hello
	if err := channel.ReadJSON(conn, &hello); err != nil {
		return 0, false, fmt.Errorf("read the server's hello: %w", err)
	}
	return hello.PID, true, nil
}

// stopTestServer ends the decision server pid (SIGTERM, then SIGKILL after
// 10 s) and waits until it is gone.
func stopTestServer(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return err
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil || zombie(pid) {
			return nil
		}
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	return fmt.Errorf("decision server %d did not stop within 10 s of SIGTERM; killed", pid)
}

// stopTestServers stops the decision server the tests started in run, so
// that nothing is left running after the package's tests.
func stopTestServers(run string) {
	pid, ok, err := testServerPID(run)
	if err == nil && ok {
		err = stopTestServer(pid)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "TestMain: stopping the decision server:", err)
	}
}

// zombie reports whether pid has exited and waits for its parent to reap it.
func zombie(pid int) bool {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(raw, ')')
	return i >= 0 && i+2 < len(raw) && raw[i+2] == 'Z'
}
