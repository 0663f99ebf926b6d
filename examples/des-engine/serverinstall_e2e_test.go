package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/channel"
	"github.com/deterministic-exec/des/internal/testenv"
)

// install copies the built client and des-engine into a directory of their
// own, as a second `go install` or a project-local build of the same source
// would be: the same build, other files. extra is appended to des-engine (a
// modified copy: the same build ID, other bytes).
func install(t *testing.T, extra []byte) (hook, engine string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bin")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	hook, engine = filepath.Join(dir, "des-hook"), filepath.Join(dir, "des-engine")
	for src, dst := range map[string]string{hookBin: hook, engineBin: engine} {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if dst == engine {
			data = append(data, extra...)
		}
		testenv.WriteExecutable(t, dst, data)
	}
	return hook, engine
}

// installServer waits for the server of the install of engine in run, and
// stops it at the end of the test.
func installServer(t *testing.T, run, engine string) int {
	t.Helper()
	pid, ok, err := testServerPIDOf(run, engine)
	if err != nil || !ok {
		t.Fatalf("no decision server of %s in %s: %v", engine, run, err)
	}
	t.Cleanup(func() { _ = stopTestServer(pid) })
	return pid
}

// runStatus runs `des-hook status` (JSON when asJSON) through the client at
// hook, with the runtime directory run.
func runStatusOf(t *testing.T, hook, run, root string, asJSON bool) string {
	t.Helper()
	args := []string{"status"}
	if asJSON {
		args = append(args, "--json")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, hook, args...)
	cmd.Env = append(cleanEnviron(), "CLAUDE_PROJECT_DIR="+root, "XDG_RUNTIME_DIR="+run)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s status: %v\n%s", hook, err, stderr.String())
	}
	return string(out)
}

// Issue 24, item 4: a second install of the same build (another directory)
// used to find the first install's server on the socket named by the build
// ID alone, refuse it (its executable is another file) and decide every event
// in process. Each install now has a socket and a server of its own, every
// event after the first is decided warm, and `des-hook status` says which
// server answers. A server whose executable is not this install's des-engine
// (here a modified copy: the same build ID, other bytes) reached through this
// install's socket is still refused, the event decided in process, and status
// says why and what to do.
func TestE2EServerSecondInstall(t *testing.T) {
	t.Parallel()
	testenv.Long(t) // seconds of sleeps and processes: CI runs it (DES_TEST_LONG=1)
	run := serverRun(t)
	root, event := gate1Fixture(t)
	hook1, engine1 := install(t, nil)
	hook2, engine2 := install(t, nil)
	call := func(hook string) hookRun {
		t.Helper()
		r := runHookBinary(t, hook, root, []string{"XDG_RUNTIME_DIR=" + run, "DES_LOG_LEVEL=debug"}, event)
		if reason := denyReason(t, r); !strings.HasPrefix(reason, wantGate1) {
			t.Fatalf("%s: %q\n%s", hook, reason, r.stderr)
		}
		return r
	}

	call(hook1) // starts the first install's server
	pid1 := installServer(t, run, engine1)
	if got := servedBy(call(hook1)); got != pid1 {
		t.Fatalf("first install: decided by %d, want its server %d", got, pid1)
	}

	// The second install, while the first one's server is warm: its first
	// event starts its own server, the next ones are decided there.
	if got := servedBy(call(hook2)); got != 0 {
		t.Fatalf("second install's first event decided by server %d; want in process while its own starts", got)
	}
	pid2 := installServer(t, run, engine2)
	if pid2 == pid1 {
		t.Fatalf("both installs share server %d", pid1)
	}
	for range 3 {
		if got := servedBy(call(hook2)); got != pid2 {
			t.Fatalf("second install: decided by %d, want its server %d", got, pid2)
		}
	}
	if got := servedBy(call(hook1)); got != pid1 {
		t.Errorf("first install after the second started: decided by %d, want %d", got, pid1)
	}
	out := runStatusOf(t, hook2, run, root, false)
	if !strings.Contains(out, "decision server: warm (pid "+strconv.Itoa(pid2)+", ") || strings.Contains(out, "decided in process") {
		t.Errorf("status of the warm second install:\n%s", out)
	}

	// A modified copy of des-engine (same build ID, other bytes) behind the
	// second install's socket: refused before anything is sent, the event
	// decided in process, and status names the process and the fix.
	hook3, engine3 := install(t, []byte("not the same bytes"))
	call(hook3)
	pid3 := installServer(t, run, engine3)
	if err := stopTestServer(pid2); err != nil {
		t.Fatal(err)
	}
	key2, err := testEngineKey(engine2)
	if err != nil {
		t.Fatal(err)
	}
	key3, err := testEngineKey(engine3)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(run, "des")
	sock2 := channel.SocketPath(dir, key2)
	if err := os.Remove(sock2); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if err := os.Symlink(channel.SocketPath(dir, key3), sock2); err != nil {
		t.Fatal(err)
	}
	if got := servedBy(call(hook2)); got != 0 {
		t.Fatalf("the second install's event was decided by %d, the modified copy's server being %d", got, pid3)
	}
	out = runStatusOf(t, hook2, run, root, false)
	for _, want := range []string{
		"decision server: not used: ",
		"pid " + strconv.Itoa(pid3) + " runs " + engine3 + ", not " + engine2,
		"the last hook event (",
		") was decided in process: ",
		"fix: another process holds this des-engine's socket",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status with a modified copy behind the socket lacks %q:\n%s", want, out)
		}
	}
	var st struct {
		DecisionServer serverStatus `json:"decision_server"`
	}
	if err := json.Unmarshal([]byte(runStatusOf(t, hook2, run, root, true)), &st); err != nil {
		t.Fatal(err)
	}
	ds := st.DecisionServer
	if ds.Warm || ds.Mode != "auto" || ds.Socket != sock2 || ds.LastFallback == nil ||
		ds.LastFallback.Cause != channel.CausePeerMismatch || !strings.Contains(ds.LastFallback.Why, engine3) {
		t.Errorf("status --json decision_server = %+v, last fall-back %+v", ds, ds.LastFallback)
	}

	// The modified copy's own client is served by its own server: each
	// install, whatever its bytes, gets the server of its own file.
	if got := servedBy(call(hook3)); got != pid3 {
		t.Errorf("the modified copy's event: decided by %d, want its server %d", got, pid3)
	}
}

// With decision_server off, status says the server is not used and why.
func TestE2EStatusDecisionServerOff(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, root, ".des/config.json", `{"decision_server": "off"}`)
	out := runStatusOf(t, hookBin, filepath.Join(t.TempDir()), root, false)
	if !strings.Contains(out, "decision server: not used: decision_server is off") || !strings.Contains(out, `fix: unset DES_DECISION_SERVER`) {
		t.Errorf("status with decision_server off:\n%s", out)
	}
}
