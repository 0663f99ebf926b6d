package statemachine_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deterministic-exec/des/statemachine"
)

// The process tests re-run this test binary as a writer: TestMain turns it
// into one when stateHelperEnv names a role.
const (
	stateHelperEnv     = "DES_STATEMACHINE_STATE_HELPER" // "race" or "loop"
	stateHelperPathEnv = "DES_STATEMACHINE_STATE_PATH"
)

func TestMain(m *testing.M) {
	switch os.Getenv(stateHelperEnv) {
	case "":
		os.Exit(m.Run())
	case "race":
		os.Exit(raceWriter(os.Getenv(stateHelperPathEnv)))
	case "loop":
		os.Exit(loopWriter(os.Getenv(stateHelperPathEnv)))
	default:
		fmt.Fprintln(os.Stderr, "unknown helper role", os.Getenv(stateHelperEnv))
		os.Exit(2)
	}
}

// raceWriter waits for path+".go", then makes raceAttempts attempts to
// write the next version, each based on a fresh read, and prints
// "ok <version>" for each write that succeeded and "stale" for each refused.
func raceWriter(path string) int {
	for {
		if _, err := os.Stat(path + ".go"); err == nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for range raceAttempts {
		s, _, err := statemachine.ReadState(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		// A pause between read and write lets other writers in, so that
		// many writes are based on a version that is no longer current.
		time.Sleep(time.Duration(rand.N(2000)) * time.Microsecond)
		v, err := statemachine.WriteState(path, s, statemachine.WithLockTimeout(30*time.Second))
		switch {
		case err == nil:
			fmt.Fprintln(out, "ok", v)
		case errors.Is(err, statemachine.ErrStaleState):
			fmt.Fprintln(out, "stale")
		default:
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

const raceAttempts = 12

// loopWriter waits for a line on its standard input (it is started ahead
// of time, as process start-up is slow), then rewrites path as fast as it
// can until it is killed, printing "ready" after its first write. It exits
// without writing if its input closes first.
func loopWriter(path string) int {
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return 0
	}
	for n := 0; ; n++ {
		s, _, err := statemachine.ReadState(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if _, err := statemachine.WriteState(path, s); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if n == 0 {
			fmt.Println("ready")
		}
	}
}

// helperCommand runs this test binary as a writer in role on path.
func helperCommand(exe, role, path string) *exec.Cmd {
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), stateHelperEnv+"="+role, stateHelperPathEnv+"="+path)
	return cmd
}

func testExecutable(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func skipProcessTests(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("process tests skipped with -short")
	}
	// Platforms without flock or LockFileEx use an O_EXCL lock file that a
	// killed writer leaves held (internal/filelock); CI runs on Linux.
}

// Separate processes race on one file: each version is written by at most
// one of them, and the final version is the number of writes that
// succeeded.
func TestWriteStateConcurrentProcesses(t *testing.T) {
	t.Parallel()
	skipProcessTests(t)
	const procs = 4
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := os.WriteFile(path, stateDoc(t, 4<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	before := mustReadState(t, path).StateVersion // 41
	exe := testExecutable(t)

	var wg sync.WaitGroup
	outs := make([]bytes.Buffer, procs)
	errs := make([]error, procs)
	for p := range procs {
		cmd := helperCommand(exe, "race", path)
		cmd.Stdout = &outs[p]
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			if err := cmd.Wait(); err != nil {
				errs[p] = fmt.Errorf("writer %d: %v: %s", p, err, stderr.String())
			}
		})
	}
	if err := os.WriteFile(path+".go", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}

	var written []int64
	stale := 0
	for _, o := range outs {
		for line := range strings.Lines(o.String()) {
			switch f := strings.Fields(line); {
			case len(f) == 2 && f[0] == "ok":
				v, err := strconv.ParseInt(f[1], 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				written = append(written, v)
			case len(f) == 1 && f[0] == "stale":
				stale++
			default:
				t.Fatalf("unexpected output %q", line)
			}
		}
	}
	if len(written)+stale != procs*raceAttempts {
		t.Fatalf("%d writes and %d refusals, want %d attempts", len(written), stale, procs*raceAttempts)
	}
	slices.Sort(written)
	for i, v := range written {
		if want := *before + int64(i) + 1; v != want {
			t.Fatalf("versions written %v: want each of %d..%d exactly once", written, *before+1, *before+int64(len(written)))
		}
	}
	if got := mustReadState(t, path).StateVersion; *got != *before+int64(len(written)) {
		t.Errorf("final version %d, want %d (%d successful writes from %d)", *got, *before+int64(len(written)), len(written), *before)
	}
	t.Logf("%d processes: %d writes succeeded, %d refused as stale", procs, len(written), stale)
	noTempFiles(t, dir)
}

// loopProcess is a loopWriter process, started and waiting for its go.
type loopProcess struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *bytes.Buffer
	err    error // the start failed
}

// A writer killed (SIGKILL on Unix) at random instants leaves the previous
// or the next complete document, never a torn one, and the lock free.
func TestWriteStateCrashSafety(t *testing.T) {
	t.Parallel()
	skipProcessTests(t)
	const kills = 30
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	template := stateDoc(t, 16<<10)
	if err := os.WriteFile(path, template, 0o644); err != nil {
		t.Fatal(err)
	}
	want := withoutVersion(t, template)
	last := *mustReadState(t, path).StateVersion
	exe := testExecutable(t)

	// Writers are started a few ahead: starting a process costs more than
	// everything else the test does with it.
	warm := make(chan *loopProcess, 3)
	done := make(chan struct{})
	go func() {
		defer close(warm)
		for range kills {
			p := &loopProcess{cmd: helperCommand(exe, "loop", path), stderr: &bytes.Buffer{}}
			p.cmd.Stderr = p.stderr
			var out io.ReadCloser
			if p.stdin, p.err = p.cmd.StdinPipe(); p.err == nil {
				if out, p.err = p.cmd.StdoutPipe(); p.err == nil {
					p.stdout = bufio.NewReader(out)
					p.err = p.cmd.Start()
				}
			}
			select {
			case warm <- p:
			case <-done:
				if p.err == nil {
					p.stdin.Close() // it exits without writing
					_ = p.cmd.Wait()
				}
				return
			}
		}
	}()
	t.Cleanup(func() {
		close(done)
		for p := range warm {
			if p.err == nil {
				p.stdin.Close()
				_ = p.cmd.Wait()
			}
		}
	})

	leftovers := 0
	for k := range kills {
		p := <-warm
		if p.err != nil {
			t.Fatal(p.err)
		}
		stop := func() {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
		if _, err := io.WriteString(p.stdin, "go\n"); err != nil {
			stop()
			t.Fatal(err)
		}
		ready := make(chan error, 1)
		go func() {
			line, err := p.stdout.ReadString('\n')
			if err == nil && line != "ready\n" {
				err = fmt.Errorf("writer said %q", line)
			}
			ready <- err
		}()
		select {
		case err := <-ready:
			if err != nil {
				stop()
				t.Fatalf("kill %d: writer did not start: %v: %s", k, err, p.stderr)
			}
		case <-time.After(20 * time.Second):
			stop()
			t.Fatalf("kill %d: writer did not start in time: %s", k, p.stderr)
		}
		time.Sleep(time.Duration(rand.N(15000)) * time.Microsecond)
		if err := p.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := p.cmd.Wait(); err == nil {
			t.Fatalf("kill %d: the writer exited by itself: %s", k, p.stderr)
		} else if p.stderr.Len() > 0 {
			t.Fatalf("kill %d: the writer failed: %s", k, p.stderr)
		}

		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("kill %d: %v", k, err)
		}
		s, err := statemachine.ParseState(data)
		if err != nil {
			t.Fatalf("kill %d: torn document: %v", k, err)
		}
		if got := withoutVersion(t, data); got != want {
			t.Fatalf("kill %d: the document changed beyond its version", k)
		}
		if s.StateVersion == nil || *s.StateVersion <= last {
			t.Fatalf("kill %d: version %v after %d: the writer made no progress or went back", k, s.StateVersion, last)
		}
		last = *s.StateVersion
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.Contains(e.Name(), ".tmp-") {
				leftovers++
			}
		}
	}
	t.Logf("%d kills; the file reached version %d; %d temporary files seen after kills", kills, last, leftovers)

	// The next write cleans up what the killed writers left.
	if _, err := statemachine.WriteState(path, mustReadState(t, path), statemachine.WithLockTimeout(time.Second)); err != nil {
		t.Fatalf("write after the kills (is the lock still held?): %v", err)
	}
	noTempFiles(t, dir)
}
