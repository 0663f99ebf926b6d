package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		if err := os.WriteFile(dst, data, 0o755); err != nil {
			t.Fatal(err)
		}
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

// Issue 24, item 4: a second install of the same build (another directory)
// used to find the first install's server on the socket named by the build
// ID alone, refuse it (its executable is another file) and decide every event
// in process. Each install now has a socket and a server of its own, every
// event after the first is decided warm.
func TestE2EServerSecondInstall(t *testing.T) {
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
}
