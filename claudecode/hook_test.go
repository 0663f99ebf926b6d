package claudecode

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/internal/hooklog"
)

// sizedEvent returns a valid, routed PreToolUse Write event of exactly n bytes.
func sizedEvent(t *testing.T, n int) []byte {
	t.Helper()
	head := `{"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"a","content":"`
	tail := `"}}`
	pad := n - len(head) - len(tail)
	if pad < 0 {
		t.Fatalf("n = %d too small", n)
	}
	return []byte(head + strings.Repeat("a", pad) + tail)
}

type hookResult struct {
	code           int
	stdout, stderr string
	reached        []routeKey
}

func runHookWith(t *testing.T, stdin []byte, env envMap, routes routeTable) hookResult {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := runHook(context.Background(), bytes.NewReader(stdin), &stdout, &stderr, env.lookup, routes)
	return hookResult{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

func TestStdinBound(t *testing.T) {
	t.Parallel()
	var reached []routeKey
	routes := recordingRoutes(&reached)

	res := runHookWith(t, sizedEvent(t, maxInput), envMap{}, routes)
	if res.code != 0 || res.stdout != "" || res.stderr != "" || len(reached) != 1 {
		t.Errorf("8 MiB event: code %d, stdout %q, stderr %q, reached %v; want it handled", res.code, res.stdout, res.stderr, reached)
	}

	reached = nil
	res = runHookWith(t, sizedEvent(t, maxInput+1), envMap{}, routes)
	if res.code != 0 || res.stdout != "" || len(reached) != 0 {
		t.Errorf("8 MiB + 1 event: code %d, stdout %q, reached %v; want 0, nothing, no handler", res.code, res.stdout, reached)
	}
	if !strings.Contains(res.stderr, "8 MiB") || !strings.Contains(res.stderr, "8388608") {
		t.Errorf("stderr does not name the limit: %q", res.stderr)
	}
}

func TestMalformedInput(t *testing.T) {
	t.Parallel()
	for name, in := range map[string]string{
		"empty":     "",
		"blank":     "\n",
		"truncated": `{"hook_event_name":"PreToolUse","tool_name":"Bash"`,
		"array":     `[]`,
		"garbage":   "\x00\xff",
		"two":       `{"hook_event_name":"SubagentStop"}{"hook_event_name":"SubagentStop"}`,
	} {
		var reached []routeKey
		res := runHookWith(t, []byte(in), envMap{}, recordingRoutes(&reached))
		if res.code != 0 || res.stdout != "" || len(reached) != 0 {
			t.Errorf("%s: code %d, stdout %q, reached %v", name, res.code, res.stdout, reached)
		}
		if !strings.Contains(res.stderr, "no opinion") {
			t.Errorf("%s: stderr %q, want a clear message", name, res.stderr)
		}
	}

	var stdout, stderr bytes.Buffer
	code := runHook(context.Background(), iotest.ErrReader(errors.New("pipe broke")), &stdout, &stderr, envMap{}.lookup, defaultRoutes())
	if code != 0 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "pipe broke") {
		t.Errorf("read error: code %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}

func TestPanicRecovery(t *testing.T) {
	t.Parallel()
	bash := []byte(`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"}}`)

	t.Run("no opinion where validation is not required", func(t *testing.T) {
		routes := routeTable{{"PreToolUse", "Bash"}: func(context.Context, *hookEnv, *Event) response {
			panic("boom in handler")
		}}
		res := runHookWith(t, bash, envMap{}, routes)
		if res.code != 0 || res.stdout != "" {
			t.Errorf("code %d, stdout %q; want 0 and nothing", res.code, res.stdout)
		}
		for _, want := range []string{"panic", "boom in handler", "goroutine"} {
			if !strings.Contains(res.stderr, want) {
				t.Errorf("stderr lacks %q: %s", want, res.stderr)
			}
		}
	})

	t.Run("deny where validation is required", func(t *testing.T) {
		routes := routeTable{{"PreToolUse", "Bash"}: func(_ context.Context, h *hookEnv, _ *Event) response {
			h.requireValidation()
			var m map[string]int
			m["x"] = 1 // a runtime error, not a plain panic value
			return noOpinion()
		}}
		res := runHookWith(t, bash, envMap{}, routes)
		if res.code != 0 || !strings.Contains(res.stdout, `"permissionDecision":"deny"`) || !strings.Contains(res.stdout, "[DES-INTERNAL]") {
			t.Errorf("code %d, stdout %q; want a DES-INTERNAL deny", res.code, res.stdout)
		}
		if !strings.Contains(res.stderr, "assignment to entry in nil map") {
			t.Errorf("stderr lacks the panic: %s", res.stderr)
		}
	})

	t.Run("panic outside the handler", func(t *testing.T) {
		// Writing the response panics: runHook itself must recover.
		routes := routeTable{{"PreToolUse", "Bash"}: func(context.Context, *hookEnv, *Event) response {
			return denyPreToolUse("x")
		}}
		var stderr bytes.Buffer
		code := runHook(context.Background(), bytes.NewReader(bash), panicWriter{}, &stderr, envMap{}.lookup, routes)
		if code != 0 || !strings.Contains(stderr.String(), "panic: stdout exploded") {
			t.Errorf("code %d, stderr %q", code, stderr.String())
		}
	})
}

type panicWriter struct{}

func (panicWriter) Write([]byte) (int, error) { panic("stdout exploded") }

func TestHandlerResponseIsRendered(t *testing.T) {
	t.Parallel()
	routes := routeTable{{"PreToolUse", "Agent"}: func(context.Context, *hookEnv, *Event) response {
		return denyPreToolUse("[DES-X] no")
	}, {"SubagentStop", ""}: func(context.Context, *hookEnv, *Event) response {
		return denyPreToolUse("wrong event") // a handler bug: never reaches stdout
	}}
	res := runHookWith(t, []byte(`{"hook_event_name":"PreToolUse","tool_name":"Agent"}`), envMap{}, routes)
	if res.stdout != `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"[DES-X] no"}}`+"\n" {
		t.Errorf("stdout %q", res.stdout)
	}
	res = runHookWith(t, []byte(`{"hook_event_name":"SubagentStop"}`), envMap{}, routes)
	if res.code != 0 || res.stdout != "" || !strings.Contains(res.stderr, "another event") {
		t.Errorf("wrong-event response: code %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
}

func TestFastPathReadsNoSettings(t *testing.T) {
	t.Parallel()
	// An event DES ignores must not build the engine: it reads no setting
	// (a bad one would be reported otherwise) and not even the root.
	var mu sync.Mutex
	var looked []string
	lookup := func(k string) (string, bool) {
		mu.Lock()
		defer mu.Unlock()
		looked = append(looked, k)
		return map[string]string{"DES_STALE_THRESHOLD_MINUTES": "not a number"}[k], k == "DES_STALE_THRESHOLD_MINUTES"
	}
	for _, payload := range []string{
		`{"hook_event_name":"Notification","message":"hi"}`,
		`{"hook_event_name":"PostToolUse","tool_name":"Read","tool_input":{"file_path":"x"},"tool_response":{}}`,
		`{"hook_event_name":"PreToolUse","tool_name":"Glob","tool_input":{}}`,
		`{"hook_event_name":"NewEvent2027"}`,
	} {
		looked = nil
		var stdout, stderr bytes.Buffer
		code := runHook(context.Background(), strings.NewReader(payload), &stdout, &stderr, lookup, defaultRoutes())
		if code != 0 || stdout.Len() != 0 || stderr.Len() != 0 {
			t.Errorf("%s: code %d, stdout %q, stderr %q", payload, code, stdout.String(), stderr.String())
		}
		// Only the hook process's own variables: its log level and its
		// deadline, which bounds the read of stdin itself.
		if !slices.Equal(looked, []string{"DES_LOG_LEVEL", deadlineEnv}) {
			t.Errorf("%s: looked up %v, want only DES_LOG_LEVEL and %s", payload, looked, deadlineEnv)
		}
	}
}

func TestEngineBuiltOnce(t *testing.T) {
	t.Parallel()
	h, _ := testEnv("PreToolUse")
	calls := 0
	h.newEngine = func(context.Context, ...des.Option) (*des.Engine, error) {
		calls++
		return nil, errors.New("bad setting")
	}
	for range 3 {
		if _, err := h.engine(context.Background()); err == nil || err.Error() != "bad setting" {
			t.Errorf("engine() error = %v", err)
		}
	}
	if calls != 1 {
		t.Errorf("engine built %d times, want once", calls)
	}
}

func TestEngineFromEnv(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	h := newHookEnv(root, "PreToolUse", envMap{}.lookup, testLogger(t), os.Stderr)
	e1, err := h.engine(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	e2, _ := h.engine(context.Background())
	if e1 != e2 || e1.Root() != root {
		t.Errorf("engines %p %p, root %q; want one engine at %q", e1, e2, e1.Root(), root)
	}

	// The environment reaches the settings.
	bad := newHookEnv(root, "PreToolUse", envMap{"DES_GATE2_ON_FAILURE": "explode"}.lookup, testLogger(t), os.Stderr)
	_, err = bad.engine(context.Background())
	var cfgErr *des.ConfigError
	if !errors.As(err, &cfgErr) {
		t.Fatalf("engine with a bad setting: %v, want a *des.ConfigError", err)
	}
	r := bad.internalError(true, err)
	if !strings.Contains(r.decisionReason, "[DES-INTERNAL]") || !strings.Contains(r.decisionReason, "gate2_on_failure") {
		t.Errorf("internal error reason %q", r.decisionReason)
	}
}

func TestHookRoot(t *testing.T) {
	t.Parallel()
	wd, _ := os.Getwd()
	abs := func(p string) string { a, _ := filepath.Abs(p); return a }
	for _, tc := range []struct {
		env  envMap
		cwd  string
		want string
	}{
		{envMap{"CLAUDE_PROJECT_DIR": "/proj"}, "/elsewhere", abs("/proj")},
		{envMap{"CLAUDE_PROJECT_DIR": ""}, "/elsewhere", abs("/elsewhere")},
		{envMap{}, "/elsewhere", abs("/elsewhere")},
		{envMap{}, "", wd},
	} {
		if got := hookRoot(tc.env.lookup, &Event{Cwd: tc.cwd}, ""); got != tc.want {
			t.Errorf("hookRoot(%v, cwd %q) = %q, want %q", tc.env, tc.cwd, got, tc.want)
		}
	}
}

func TestLogLevel(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value     string
		debug     bool
		complaint bool
	}{
		{"", false, false},
		{"debug", true, false},
		{"DEBUG", true, false},
		{"error", false, false},
		{"loud", false, true},
	} {
		var buf bytes.Buffer
		logger := hooklog.New(&buf, envMap{"DES_LOG_LEVEL": tc.value}.lookup)
		logger.Debug("dbg-line")
		if got := strings.Contains(buf.String(), "dbg-line"); got != tc.debug {
			t.Errorf("DES_LOG_LEVEL=%q: debug shown %v, want %v", tc.value, got, tc.debug)
		}
		if got := strings.Contains(buf.String(), "DES_LOG_LEVEL"); got != tc.complaint {
			t.Errorf("DES_LOG_LEVEL=%q: complaint %v, want %v (%q)", tc.value, got, tc.complaint, buf.String())
		}
	}
}
