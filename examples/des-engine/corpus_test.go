package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/realclient"

	"github.com/deterministic-exec/des/internal/testenv"
)

// hookBin is the hook binary TestMain builds once for the tests that run it
// as Claude Code does: a separate process, the event on stdin.
var hookBin string

func TestMain(m *testing.M) {
	flag.Parse()
	widenParallel()
	// The processes the tests start (des-engine, go test) collect
	// garbage less often too.
	if _, set := os.LookupEnv("GOGC"); !set {
		os.Setenv("GOGC", "400")
	}
	testenv.LessGC()
	code := func() int {
		// Not with the real Claude Code suite: its sandbox (bubblewrap)
		// mounts a /dev of its own, where /dev/shm is empty.
		if os.Getenv(realclient.Var) == "" {
			defer testenv.MemoryTempDir()()
		}
		return buildAndRun(m)
	}()
	os.Exit(code)
}

// widenParallel lets more parallel tests run at once than there are CPUs
// (-parallel's default) unless -parallel was given: these tests mostly wait
// for the processes they start (the hook, git, bash) and for sleeps, so on
// 2 cores the default left one of them idle much of the time.
func widenParallel() {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(4*runtime.GOMAXPROCS(0)))
	}
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "des-hook-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "TestMain:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	exe := ""
	if runtime.GOOS == "windows" {
		exe = ".exe"
	}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if p, err := exec.LookPath("go"); err == nil {
		gobin = p
	}
	// Both binaries into one directory, as the README installs them: the
	// thin client (what Claude Code runs) and des-engine beside it.
	build := exec.Command(gobin, "build", "-o", dir+string(filepath.Separator), "../hook", ".")
	// Static, as the README installs it (no dynamic loader at start-up),
	// when the long tests run; by default as the test binary itself is
	// built, so that the build cache already holds every package: a static
	// build compiles OPA again, about a minute of CPU on a fresh clone.
	build.Env = os.Environ()
	if testenv.IsLong() {
		build.Env = append(build.Env, "CGO_ENABLED=0")
	}
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "TestMain: go build:", err)
		return 1
	}
	hookBin = filepath.Join(dir, "hook"+exe)
	engineBin = filepath.Join(dir, "des-engine"+exe)
	switch testDecisionServer = os.Getenv("DES_TEST_DECISION_SERVER"); testDecisionServer {
	case "":
		testDecisionServer = "auto"
	case "auto", "off":
	default:
		fmt.Fprintf(os.Stderr, "TestMain: DES_TEST_DECISION_SERVER=%q: want auto or off\n", testDecisionServer)
		return 1
	}
	// The built hook keeps its per-user state (the effect check's
	// baseline) here, not in the home directory of whoever runs the tests.
	testStateDir = filepath.Join(dir, "state")
	// The decision servers the tests start listen in a runtime directory
	// of this run's own, and are stopped before it goes.
	run := filepath.Join(dir, "run")
	if err := os.Mkdir(run, 0o700); err != nil {
		fmt.Fprintln(os.Stderr, "TestMain:", err)
		return 1
	}
	os.Setenv("XDG_RUNTIME_DIR", run)
	defer stopTestServers(run)
	stop, err := setUpHookPath(testenv.IsLong())
	if err != nil {
		fmt.Fprintln(os.Stderr, "TestMain:", err)
		return 1
	}
	defer stop()
	return m.Run()
}

// engineBin is des-engine, built beside hookBin.
var engineBin string

// testDecisionServer is the path the tests' hook calls take
// (DES_TEST_DECISION_SERVER): "auto", through the warm decision server, or
// "off", each event decided by des-engine in a process of its own.
var testDecisionServer string

// payload is one hook event of the corpus and where it came from.
type payload struct {
	source string // file, or file:line
	data   []byte
}

// loadCorpus reads every payload of the shared corpus: curated/*.json,
// each line's "payload" of real_logs_clean/*/*.jsonl, and each line (a bare
// payload) of shepherd_v2.1.270/*.payloads.jsonl.
func loadCorpus(t *testing.T, dir string) []payload {
	t.Helper()
	var out []payload
	glob := func(pattern string) []string {
		files, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil || len(files) == 0 {
			t.Fatalf("no corpus files match %s (%v)", pattern, err)
		}
		return files
	}
	rel := func(f string) string {
		if r, err := filepath.Rel(dir, f); err == nil {
			return r
		}
		return f
	}
	for _, f := range glob("curated/*.json") {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, payload{rel(f), data})
	}
	lines := func(f string, each func(source string, line []byte)) {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 0, 1<<20), maxInput*2)
		for n := 1; sc.Scan(); n++ {
			if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
				each(fmt.Sprintf("%s:%d", rel(f), n), bytes.Clone(line))
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	for _, f := range glob("real_logs_clean/*/*.jsonl") {
		lines(f, func(source string, line []byte) {
			var rec struct {
				Payload json.RawMessage `json:"payload"`
			}
			if err := json.Unmarshal(line, &rec); err != nil || len(rec.Payload) == 0 {
				t.Errorf("%s: not a {\"_source\", \"payload\"} line: %v", source, err)
				return
			}
			out = append(out, payload{source, rec.Payload})
		})
	}
	for _, f := range glob("shepherd_v2.1.270/*.payloads.jsonl") {
		lines(f, func(source string, line []byte) { out = append(out, payload{source, line}) })
	}
	return out
}

// cleanEnviron is this process's environment without DES's settings and
// CLAUDE_PROJECT_DIR, so a developer's shell cannot change the outcome.
func cleanEnviron() []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		// CLAUDECODE, CLAUDE_CODE_ENTRYPOINT and CLAUDE_CODE_CHILD_SESSION:
		// tests run from Claude Code's Bash would have a person's commands
		// refused.
		return strings.HasPrefix(kv, "DES_") || strings.HasPrefix(kv, "CLAUDE_PROJECT_DIR=") ||
			strings.HasPrefix(kv, "CLAUDECODE=") || strings.HasPrefix(kv, "CLAUDE_CODE_ENTRYPOINT=") || strings.HasPrefix(kv, "CLAUDE_CODE_CHILD_SESSION=")
	})
	// des's per-user state (audit witnesses, ...) goes to the test's own
	// directory, never the user's; a test may set its own after this.
	env = append(env, "DES_STATE_DIR="+testStateDir)
	if testDecisionServer == "off" {
		env = append(env, "DES_DECISION_SERVER=off")
	}
	return env
}

// testStateDir is the per-user state directory of the hook processes the
// tests run, below TestMain's temporary directory.
var testStateDir string

// checkHookOutput applies the corpus README's rule: exit 0, stdout empty or
// exactly one JSON object, no deny or block, no panic.
func checkHookOutput(code int, runErr error, stdout, stderr []byte) error {
	var problems []string
	if runErr != nil {
		problems = append(problems, fmt.Sprintf("run: %v", runErr))
	}
	if code != 0 {
		problems = append(problems, fmt.Sprintf("exit status %d", code))
	}
	if len(bytes.TrimSpace(stdout)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(stdout))
		var obj map[string]json.RawMessage
		if err := dec.Decode(&obj); err != nil {
			problems = append(problems, fmt.Sprintf("stdout is not a JSON object: %v", err))
		} else if _, err := dec.Token(); err != io.EOF {
			problems = append(problems, "stdout holds more than one JSON value")
		}
		compact := new(bytes.Buffer)
		if json.Compact(compact, stdout) == nil {
			s := compact.String()
			if strings.Contains(s, `"permissionDecision":"deny"`) || strings.Contains(s, `"decision":"block"`) {
				problems = append(problems, "deny or block")
			}
		}
	}
	if bytes.Contains(bytes.ToLower(stderr), []byte("panic")) {
		problems = append(problems, "stderr mentions a panic")
	}
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("%s\nstdout: %.400s\nstderr: %.800s", strings.Join(problems, "; "), stdout, stderr)
}

// TestCorpus runs real payloads through the built binary with a project
// that holds no DES document: none may be denied, blocked or crash. By
// default a sample (corpusSample); DES_TEST_LONG=1 runs every payload.
func TestCorpus(t *testing.T) {
	t.Parallel()
	dir := requireCorpus(t)
	payloads := loadCorpus(t, dir)
	if len(payloads) < 3800 {
		t.Errorf("loaded %d payloads, want the 3,800+ of the corpus", len(payloads))
	}
	if !testenv.IsLong() {
		payloads = corpusSample(payloads, 50)
	}
	t.Logf("running %d payloads through %s", len(payloads), hookBin)

	base := t.TempDir()
	environ := cleanEnviron()
	type failure struct {
		source string
		err    error
	}
	var (
		mu       sync.Mutex
		failures []failure
		wg       sync.WaitGroup
	)
	jobs := make(chan payload)
	for range runtime.GOMAXPROCS(0) * 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range jobs {
				if err := runPayload(base, environ, p.data); err != nil {
					mu.Lock()
					failures = append(failures, failure{p.source, err})
					mu.Unlock()
				}
			}
		}()
	}
	start := time.Now()
	for _, p := range payloads {
		jobs <- p
	}
	close(jobs)
	wg.Wait()
	t.Logf("%d payloads in %v", len(payloads), time.Since(start).Round(time.Millisecond))

	slices.SortFunc(failures, func(a, b failure) int { return strings.Compare(a.source, b.source) })
	const maxReported = 30
	for i, f := range failures {
		if i == maxReported {
			t.Errorf("... and %d more failures", len(failures)-maxReported)
			break
		}
		t.Errorf("%s: %v", f.source, f.err)
	}
}

// corpusSample is the default run's share of the corpus: every curated
// payload, the first payload of each event and tool (so each kind the logs
// hold is run), and one in every payloads besides.
func corpusSample(payloads []payload, every int) []payload {
	seen := map[string]bool{}
	var out []payload
	for i, p := range payloads {
		var kind struct {
			Event string `json:"hook_event_name"`
			Tool  string `json:"tool_name"`
		}
		_ = json.Unmarshal(p.data, &kind) // a payload that is not JSON is a kind of its own
		key := kind.Event + "/" + kind.Tool
		if strings.HasPrefix(p.source, "curated"+string(filepath.Separator)) || !seen[key] || i%every == 0 {
			out = append(out, p)
		}
		seen[key] = true
	}
	return out
}

// runPayload runs the binary on one payload, in a fresh empty project.
func runPayload(base string, environ []string, data []byte) error {
	root, err := os.MkdirTemp(base, "p")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, hookBin)
	cmd.Env = append(slices.Clip(environ), "CLAUDE_PROJECT_DIR="+root)
	cmd.Dir = root
	cmd.Stdin = bytes.NewReader(data)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	code := cmd.ProcessState.ExitCode()
	var exitErr *exec.ExitError
	if errors.As(runErr, &exitErr) {
		runErr = nil // reported as the exit status
	}
	return checkHookOutput(code, runErr, stdout.Bytes(), stderr.Bytes())
}

// TestBinary checks, as a separate process, what only a real process shows:
// exit statuses and the fail-safe paths of hook mode.
func TestBinary(t *testing.T) {
	environ := cleanEnviron()
	runBin := func(stdin []byte, args ...string) (int, string, string) {
		cmd := exec.Command(hookBin, args...)
		cmd.Env = append(slices.Clip(environ), "CLAUDE_PROJECT_DIR="+t.TempDir())
		cmd.Stdin = bytes.NewReader(stdin)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exitErr *exec.ExitError
		if err != nil && !errors.As(err, &exitErr) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
	}

	for name, stdin := range map[string][]byte{
		"empty":     nil,
		"malformed": []byte(`{"hook_event_name":`),
		"too large": sizedEvent(t, maxInput+1),
	} {
		code, stdout, stderr := runBin(stdin)
		if code != 0 || stdout != "" || stderr == "" {
			t.Errorf("hook mode, %s input: exit %d, stdout %q, stderr %q; want 0, nothing, a message", name, code, stdout, stderr)
		}
	}
	if code, _, stderr := runBin(nil, "bogus"); code != 2 || !strings.Contains(stderr, "usage:") {
		t.Errorf("unknown subcommand: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := runBin(nil, "policies", "--nope"); code != 2 || !strings.Contains(stderr, "usage: des-hook policies") {
		t.Errorf("bad flag: exit %d, stderr %q", code, stderr)
	}
	if code, stdout, _ := runBin(nil, "version"); code != 0 || !strings.HasPrefix(stdout, "des ") {
		t.Errorf("version: exit %d, stdout %q", code, stdout)
	}
}

func TestCheckHookOutput(t *testing.T) {
	t.Parallel()
	// The corpus assertion itself must catch what it is there to catch.
	for name, tc := range map[string]struct {
		code           int
		stdout, stderr string
		ok             bool
	}{
		"nothing":     {0, "", "", true},
		"empty obj":   {0, "{}\n", "", true},
		"warning":     {0, `{"systemMessage":"w"}`, "", true},
		"exit 2":      {2, "", "", false},
		"two objects": {0, "{}{}", "", false},
		"array":       {0, "[]", "", false},
		"deny":        {0, `{"hookSpecificOutput":{"hookEventName":"PreToolUse", "permissionDecision": "deny"}}`, "", false},
		"block":       {0, `{"decision":"block","reason":"r"}`, "", false},
		"panic":       {0, "", "goroutine 1 [running]:\npanic: x", false},
	} {
		err := checkHookOutput(tc.code, nil, []byte(tc.stdout), []byte(tc.stderr))
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok=%v", name, err, tc.ok)
		}
	}
}
