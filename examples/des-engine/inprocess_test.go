package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/deterministic-exec/des/claudecode"
	"github.com/deterministic-exec/des/internal/channel"
)

// How the end-to-end tests' hook calls are decided (DES_TEST_HOOK):
//
//   - "inprocess", the default: by the warm decision server's handler
//     (serveHandler, which runs claudecode.Handler), called in this
//     process with the request the hook client would send it. The
//     decisions, the files they write and the output bytes are the
//     server's; what is left out is only what processes show (the client,
//     the socket, exit statuses), which the tests that need it check
//     through the built binaries (runHookBinary).
//   - "binary": through the built client and its warm server, or, with
//     DES_TEST_DECISION_SERVER=off, des-engine in a process of its own per
//     event. DES_TEST_LONG=1 (CI) runs this path.
var testHookInProcess bool

// inProcessHook is the server's handler the in-process path calls, with
// one cache for the run as a server keeps one for its life; callerPID is a
// child of this process standing for the hook client, so that the effect
// check finds the calls' processes under the same parents as the client's.
var (
	inProcessHook func(context.Context, *channel.Request) *channel.Reply
	callerPID     int
)

// setUpHookPath reads DES_TEST_HOOK and prepares the in-process path; the
// returned func stops what it started.
func setUpHookPath(long bool) (func(), error) {
	switch v := os.Getenv("DES_TEST_HOOK"); v {
	case "":
		testHookInProcess = !long && testDecisionServer != "off"
	case "inprocess":
		testHookInProcess = true
	case "binary":
		testHookInProcess = false
	default:
		return nil, fmt.Errorf("DES_TEST_HOOK=%q: want inprocess or binary", v)
	}
	if !testHookInProcess {
		return func() {}, nil
	}
	sleeper := exec.Command("sleep", "86400")
	sleeper.Dir = os.TempDir()
	if err := sleeper.Start(); err != nil {
		return nil, fmt.Errorf("start the stand-in hook client: %w", err)
	}
	callerPID = sleeper.Process.Pid
	inProcessHook = serveHandler(claudecode.NewCache(), slog.New(slog.NewTextHandler(io.Discard, nil)), nil, nil)
	return func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }, nil
}

// runHookInProcess decides raw as the warm server would for the built
// client run in root with environ; ok is false where the client would not
// send the event to the server (DES_DECISION_SERVER=off, an event over
// the input bound, a path in the client's own /proc view), which the
// caller then runs through the binary.
func runHookInProcess(t testing.TB, root string, environ []string, raw []byte) (hookRun, bool) {
	t.Helper()
	if len(raw) > maxInput {
		return hookRun{}, false
	}
	req := &channel.Request{
		Version: channel.Protocol,
		Root:    root,
		Cwd:     root,
		Env:     append(channel.ForwardEnv(environ), "DES_CLIENT_PATH="+hookBin),
		Stdin:   raw,
		PeerPID: callerPID,
	}
	if decidable(req) != nil {
		return hookRun{}, false
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	rep := inProcessHook(ctx, req)
	return hookRun{rep.Exit, string(rep.Stdout), string(rep.Stderr)}, true
}

// lastValue is the value of key in environ, the last one winning as in
// exec.Cmd.Env (and as the server reads a request's environment).
func lastValue(environ []string, key string) string {
	v, _ := (&channel.Request{Env: environ}).LookupEnv(key)
	return v
}
