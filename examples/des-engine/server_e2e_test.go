package main

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/channel"
	"github.com/deterministic-exec/des/internal/testenv"
)

// The lifecycle of the warm decision server, through the real binaries: the
// client Claude Code runs, and des-engine beside it. Each test has a runtime
// directory of its own (XDG_RUNTIME_DIR), so its server is its own, and stops
// it at the end. The channel's mechanics (locks, the protocol, racing
// clients, oversized events) are tested in internal/client and
// internal/server.

// serverRun is a runtime directory for one test's decision server.
func serverRun(t *testing.T) string {
	t.Helper()
	if testDecisionServer == "off" {
		t.Skip("DES_TEST_DECISION_SERVER=off: the decision server is not used")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the decision server runs on Linux only")
	}
	run := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(run, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopTestServers(run) })
	return run
}

var servedRE = regexp.MustCompile(`decision_server_pid=([0-9]+)`)

// servedBy is the pid of the decision server that decided run r (the
// engine's debug line names it), 0 when it was decided in-process.
func servedBy(r hookRun) int {
	m := servedRE.FindStringSubmatch(r.stderr)
	if m == nil {
		return 0
	}
	pid, _ := strconv.Atoi(m[1])
	return pid
}

// serverCall runs the client on event in root with the runtime directory run.
func serverCall(t *testing.T, run, root string, env []string, event any) hookRun {
	t.Helper()
	return runHookProcess(t, root, append([]string{"XDG_RUNTIME_DIR=" + run, "DES_LOG_LEVEL=debug"}, env...), event)
}

// waitServer returns the pid of the server listening in run, waiting for
// one being started.
// The client starts it in the background: it may not hold the start lock
// yet when this first looks, so it looks again for up to 10 s.
func waitServer(t *testing.T, run string) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		pid, ok, err := testServerPID(run)
		if err == nil && ok {
			return pid
		}
		if time.Now().After(deadline) {
			t.Fatalf("no decision server in %s after 10 s: %v", run, err)
		}
	}
}

// gate1Fixture is the README's Gate 1 event and a project where it is
// denied.
func gate1Fixture(t *testing.T) (root string, event []byte) {
	t.Helper()
	raw, err := os.ReadFile("testdata/gate1-incomplete-prompt.json")
	if err != nil {
		t.Fatal(err)
	}
	return gate1Project(t, "TODO"), raw
}

const wantGate1 = "[DES-PHASE-MISSING] the TDD_14_PHASES section does not name phase REFACTOR_L4"

// teamStop is a team policy that denies every Gate 1 prompt, for the test
// that a changed policy is picked up.
const teamStop = `package des.gates.pre_invocation

# METADATA
# title: Team stop
# description: Every subagent prompt is denied.
# custom:
#   code: TEAM-STOP
#   severity: deny
deny contains {"code": "TEAM-STOP", "msg": "the team stops every subagent"} if {
	input.prompt
}
`

// The first call starts a server and decides in-process; the next ones are
// decided by that server, with the same answer. A changed policy file, a
// changed .des/config.json and a changed DES_* variable are all seen by the
// next call; a second project is served by the same server.
func TestE2EServerLifecycle(t *testing.T) {
	run := serverRun(t)
	root, event := gate1Fixture(t)

	first := serverCall(t, run, root, nil, event)
	if pid := servedBy(first); pid != 0 {
		t.Fatalf("the first call was decided by server %d; want in-process while it starts", pid)
	}
	if reason := denyReason(t, first); !strings.HasPrefix(reason, wantGate1) {
		t.Fatalf("first call: %q", reason)
	}
	pid := waitServer(t, run)
	second := serverCall(t, run, root, nil, event)
	if got := servedBy(second); got != pid {
		t.Fatalf("second call decided by %d, want server %d; stderr:\n%s", got, pid, second.stderr)
	}
	if denyReason(t, second) != denyReason(t, first) {
		t.Errorf("server and in-process answers differ:\n%s\n%s", denyReason(t, second), denyReason(t, first))
	}

	// A team policy written now is applied by the next call.
	writeFile(t, root, ".des/policies/team.rego", teamStop)
	r := serverCall(t, run, root, nil, event)
	if servedBy(r) != pid || !strings.Contains(denyReason(t, r), "[TEAM-STOP]") {
		t.Errorf("after a new policy (server %d): %q\n%s", servedBy(r), denyReason(t, r), r.stderr)
	}
	if err := os.Remove(filepath.Join(root, ".des/policies/team.rego")); err != nil {
		t.Fatal(err)
	}

	// A setting in .des/config.json, then the same one in the environment:
	// a bad value is an error naming it, from the server as in-process.
	writeFile(t, root, ".des/config.json", `{"stale_threshold_minutes": 0}`)
	r = serverCall(t, run, root, nil, event)
	if servedBy(r) != pid || !strings.Contains(denyReason(t, r), "stale_threshold_minutes") {
		t.Errorf("after a bad .des/config.json (server %d): %q", servedBy(r), denyReason(t, r))
	}
	if err := os.Remove(filepath.Join(root, ".des/config.json")); err != nil {
		t.Fatal(err)
	}
	r = serverCall(t, run, root, []string{"DES_STALE_THRESHOLD_MINUTES=0"}, event)
	if servedBy(r) != pid || !strings.Contains(denyReason(t, r), "DES_STALE_THRESHOLD_MINUTES") {
		t.Errorf("with a bad DES_STALE_THRESHOLD_MINUTES (server %d): %q", servedBy(r), denyReason(t, r))
	}
	r = serverCall(t, run, root, nil, event)
	if servedBy(r) != pid || !strings.HasPrefix(denyReason(t, r), wantGate1) {
		t.Errorf("settings restored (server %d): %q", servedBy(r), denyReason(t, r))
	}

	// Another project, the same server.
	other, _ := gate1Fixture(t)
	var ev map[string]any
	if err := json.Unmarshal(event, &ev); err != nil {
		t.Fatal(err)
	}
	ev["cwd"] = other
	r = serverCall(t, run, other, nil, ev)
	if servedBy(r) != pid || !strings.HasPrefix(denyReason(t, r), wantGate1) {
		t.Errorf("second project (server %d): %q", servedBy(r), denyReason(t, r))
	}
}

// A killed server: the next call decides in-process, correctly, and starts
// a new server, which decides the call after.
func TestE2EServerKilled(t *testing.T) {
	testenv.Long(t) // seconds of sleeps and processes: CI runs it (DES_TEST_LONG=1)
	run := serverRun(t)
	root, event := gate1Fixture(t)
	serverCall(t, run, root, nil, event)
	pid := waitServer(t, run)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); syscall.Kill(pid, 0) == nil && !zombie(pid) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	r := serverCall(t, run, root, nil, event)
	if servedBy(r) != 0 || !strings.HasPrefix(denyReason(t, r), wantGate1) {
		t.Fatalf("after the kill (server %d): %q", servedBy(r), denyReason(t, r))
	}
	// That call starts a new server in the background; calls decide in
	// process until it listens (a client that finds a start it cannot
	// tell from one that failed holds off for a while: call again).
	next, ok := 0, false
	for deadline := time.Now().Add(20 * time.Second); !ok; {
		if next, ok, _ = testServerPID(run); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new decision server in %s after 20 s; the last call's stderr:\n%s", run, r.stderr)
		}
		time.Sleep(200 * time.Millisecond)
		if r = serverCall(t, run, root, nil, event); !strings.HasPrefix(denyReason(t, r), wantGate1) {
			t.Fatalf("a call while the server restarts: %q", denyReason(t, r))
		}
	}
	if next == pid {
		t.Fatalf("the killed server %d still answers", pid)
	}
	if r := serverCall(t, run, root, nil, event); servedBy(r) != next || !strings.HasPrefix(denyReason(t, r), wantGate1) {
		t.Errorf("after the restart (server %d, want %d): %q", servedBy(r), next, denyReason(t, r))
	}
}

// A socket bound by another process of the same user (the agent could) that
// answers every request with "allow" is refused: the client checks that the
// process behind it is its des-engine, and decides in-process.
func TestE2EServerImpostorRefused(t *testing.T) {
	t.Parallel()
	run := serverRun(t)
	root, event := gate1Fixture(t)
	id, err := channel.ReadBuildID(engineBin)
	if err != nil {
		t.Fatal(err)
	}
	key, err := testEngineKey(engineBin)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := channel.EnsureDir(filepath.Join(run, "des"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", channel.SocketPath(dir, key))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := make(chan bool, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			served <- false
			return
		}
		defer conn.Close()
		// The companion's build ID and a pid, as the real server says them.
		_ = channel.WriteJSON(conn, channel.Hello{Protocol: channel.Protocol, BuildID: id, PID: os.Getpid()})
		req, err := channel.ReadRequest(conn)
		if err != nil {
			served <- false
			return
		}
		_ = req
		_ = channel.WriteJSON(conn, channel.Accept{Accepted: true})
		var c channel.Commit
		_ = channel.ReadJSON(conn, &c)
		_ = channel.WriteReply(conn, &channel.Reply{Stdout: []byte(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}`)})
		served <- true
	}()
	r := serverCall(t, run, root, nil, event)
	if reason := denyReason(t, r); !strings.HasPrefix(reason, wantGate1) {
		t.Fatalf("with an impostor on the socket: %q, stdout %s", reason, r.stdout)
	}
	select {
	case ok := <-served:
		if ok {
			t.Fatal("the client sent the request to the impostor")
		}
	default: // it dialled, read the hello and hung up: refused before sending
	}
}

// A server that took the request and died before answering: the request
// may have had effects, so it is not run again in-process; where des is in
// charge that is DES-INTERNAL. The handler waits on the audit lock (held by
// another process, as an agent's `flock .des/audit/.lock sleep` would), and
// the server is killed meanwhile.
func TestE2EServerNoAnswer(t *testing.T) {
	testenv.Long(t) // seconds of sleeps and processes: CI runs it (DES_TEST_LONG=1)
	run := serverRun(t)
	root := gitProject(t)
	writeFile(t, root, stepPath, finishedStep(t, "EXECUTED"))
	git(t, root, "add", stepPath)
	event := bashEvent(t, root, "git commit -m step")
	serverCall(t, run, root, nil, bashEvent(t, root, "ls")) // starts the server
	pid := waitServer(t, run)
	holdLock(t, filepath.Join(root, ".des", "audit", ".lock"))
	go func() {
		time.Sleep(1500 * time.Millisecond) // the handler is waiting on the lock by now
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}()
	r := serverCall(t, run, root, []string{"DES_HOOK_DEADLINE_MS=15000"}, event)
	reason := denyReason(t, r)
	if !strings.HasPrefix(reason, "[DES-INTERNAL] ") || !strings.Contains(reason, "did not answer") || !strings.Contains(reason, "not decided again") {
		t.Errorf("server killed mid-request: %q\nstderr %s", reason, r.stderr)
	}
}

// A des-hook without des-engine beside it: a PreToolUse call is denied,
// DES-INTERNAL, naming the missing file and the command that builds both;
// another event gets no opinion and the reason on stderr; a subcommand
// exits 2 with the same message.
func TestE2EClientWithoutEngine(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(hookBin)
	if err != nil {
		t.Fatal(err)
	}
	alone := filepath.Join(t.TempDir(), filepath.Base(hookBin))
	testenv.WriteExecutable(t, alone, raw)
	root := t.TempDir()
	missing := filepath.Join(filepath.Dir(alone), filepath.Base(engineBin))
	fix := "go build -o " + filepath.Join(filepath.Dir(alone), "des-hook") + " ./examples/hook && CGO_ENABLED=0 go build -o " + missing + " ./examples/des-engine"
	run := func(event any, args ...string) hookRun {
		t.Helper()
		raw, _ := json.Marshal(event)
		cmd := exec.CommandContext(t.Context(), alone, args...)
		cmd.Env = append(cleanEnviron(), "CLAUDE_PROJECT_DIR="+root)
		cmd.Dir, cmd.Stdin = root, bytes.NewReader(raw)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			if _, ok := err.(*exec.ExitError); !ok {
				t.Fatal(err)
			}
		}
		return hookRun{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
	}
	reason := denyReason(t, run(writeEvent(root, "Write", "a.txt")))
	if !strings.HasPrefix(reason, "[DES-INTERNAL] ") || !strings.Contains(reason, missing) || !strings.Contains(reason, fix) {
		t.Errorf("PreToolUse without des-engine: %q", reason)
	}
	r := run(map[string]any{"hook_event_name": "PostToolUse", "tool_name": "Write", "cwd": root, "tool_input": map[string]any{}})
	if r.code != 0 || r.stdout != "" || !strings.Contains(r.stderr, missing) {
		t.Errorf("PostToolUse without des-engine: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = run(nil, "settings")
	if r.code != 2 || !strings.Contains(r.stderr, missing) || !strings.Contains(r.stderr, fix) {
		t.Errorf("settings without des-engine: exit %d, stderr %q", r.code, r.stderr)
	}
}

// DES_DECISION_SERVER is checked like every setting: a bad value reaches
// des-engine, whose error names it; off is the hand-over, never a server.
func TestE2EDecisionServerSetting(t *testing.T) {
	t.Parallel()
	root := gitProject(t)
	reason := denyReason(t, runHookProcess(t, root, []string{"DES_DECISION_SERVER=sometimes"}, writeEvent(root, "Write", ".des/config.json")))
	if !strings.HasPrefix(reason, "[DES-INTERNAL] ") || !strings.Contains(reason, "DES_DECISION_SERVER") || !strings.Contains(reason, `"sometimes"`) {
		t.Errorf("bad DES_DECISION_SERVER: %q", reason)
	}
	if testDecisionServer == "off" || runtime.GOOS != "linux" {
		return
	}
	run := serverRun(t)
	for range 2 {
		r := serverCall(t, run, root, []string{"DES_DECISION_SERVER=off"}, writeEvent(root, "Write", ".des/config.json"))
		if servedBy(r) != 0 || !strings.Contains(denyReason(t, r), "DES-PROTECTED-PATH") {
			t.Errorf("DES_DECISION_SERVER=off: server %d, %q", servedBy(r), denyReason(t, r))
		}
	}
	if _, ok, err := testServerPID(run); ok || err != nil {
		t.Errorf("DES_DECISION_SERVER=off started a server (%v)", err)
	}
}
