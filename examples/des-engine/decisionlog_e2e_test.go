package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/decisionlog"
)

// logCollector is a collector of OPA decision logs on loopback: it takes
// gzipped JSON arrays of events, with the bearer token it expects, and
// answers 500 while down.
type logCollector struct {
	t      *testing.T
	mu     sync.Mutex
	down   bool
	events []decisionlog.Event
}

func (c *logCollector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.down {
		http.Error(w, "collector down", http.StatusInternalServerError)
		return
	}
	if r.Method != http.MethodPost || r.URL.Path != "/logs" || r.Header.Get("Authorization") != "Bearer org-token" ||
		r.Header.Get("Content-Encoding") != "gzip" || r.Header.Get("Content-Type") != "application/json" {
		c.t.Errorf("upload %s %s with headers %v", r.Method, r.URL.Path, r.Header)
		http.Error(w, "bad upload", http.StatusBadRequest)
		return
	}
	zr, err := gzip.NewReader(r.Body)
	if err != nil {
		c.t.Errorf("body not gzipped: %v", err)
		return
	}
	var events []decisionlog.Event
	if err := json.NewDecoder(zr).Decode(&events); err != nil {
		c.t.Errorf("body not a JSON array of events: %v", err)
		return
	}
	c.events = append(c.events, events...)
}

// End to end: decision_log on in the team's settings, hook events through
// the built binaries, then `des-hook logs push` to a collector that is
// down, then up.
func TestE2EDecisionLogPush(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/gate1-incomplete-prompt.json")
	if err != nil {
		t.Fatal(err)
	}
	c := &logCollector{t: t, down: true}
	srv := httptest.NewServer(c)
	defer srv.Close()
	root := gate1Project(t, "TODO")
	writeFile(t, root, ".des/config.json", `{"decision_log": "on", "decision_log_url": "`+srv.URL+`/logs", "decision_log_token_env": "DES_ORG_LOG_TOKEN"}`)

	if reason := denyReason(t, runHookProcess(t, root, nil, raw)); !strings.Contains(reason, "DES-PHASE-MISSING") {
		t.Fatalf("Gate 1: reason %q", reason)
	}
	if reason := denyReason(t, runHookProcess(t, root, nil, writeEvent(root, "Edit", ".des/config.json"))); !strings.Contains(reason, "DES-PROTECTED-PATH") {
		t.Fatalf("tool_use: reason %q", reason)
	}
	if reason := denyReason(t, runHookProcess(t, root, nil, writeEvent(root, "Write", "src/main.go"))); reason != "" {
		t.Fatalf("a plain write: reason %q", reason)
	}
	if ignore, err := os.ReadFile(root + "/.des/decisions/.gitignore"); err != nil || !strings.Contains(string(ignore), "\n*\n") {
		t.Errorf(".des/decisions/.gitignore: %q, %v", ignore, err)
	}

	tokenEnv := []string{"CLAUDE_PROJECT_DIR=" + root, "DES_ORG_LOG_TOKEN=org-token"}
	r := runIn(t, root, tokenEnv, "logs", "push")
	if r.code != 1 || !strings.Contains(r.stderr, "500") || !strings.Contains(r.stderr, "left for the next push") {
		t.Fatalf("push to a collector that is down: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	c.mu.Lock()
	c.down = false
	c.mu.Unlock()
	r = runIn(t, root, tokenEnv, "logs", "push")
	if r.code != 0 || !strings.Contains(r.stdout, "pushed 2 decision(s)") {
		t.Fatalf("push: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	c.mu.Lock()
	events := slices.Clone(c.events)
	c.mu.Unlock()
	paths := map[string]decisionlog.Event{}
	for _, ev := range events {
		paths[ev.Path] = ev
		if len(ev.DecisionID) != 36 || ev.Labels["id"] == "" || ev.Labels["app"] != "des" || ev.Bundles["des"].Revision == "" || ev.Timestamp.IsZero() || ev.Result == nil {
			t.Errorf("event %+v", ev)
		}
	}
	gate1, ok := paths["des/gates/pre_invocation"]
	if !ok || paths["des/gates/tool_use"].Path == "" {
		t.Fatalf("events for %v, want pre_invocation and tool_use", slices.Collect(maps.Keys(paths)))
	}
	call := (*gate1.Input).(map[string]any)["call"].(map[string]any)
	if _, ok := call["prompt"]; ok || !slices.Contains(gate1.Erased, "/input/call/prompt") || call["subagent_type"] != "software-crafter" {
		t.Errorf("Gate 1 input not masked as the defaults say: call %v, erased %v", call, gate1.Erased)
	}
	deny, _ := json.Marshal((*gate1.Result).(map[string]any)["deny"])
	if !strings.Contains(string(deny), `"code":"DES-PHASE-MISSING"`) {
		t.Errorf("Gate 1 result deny %s", deny)
	}

	if !strings.Contains(r.stdout, "with the bearer token of $DES_ORG_LOG_TOKEN") || strings.Contains(r.stdout+r.stderr, "org-token") {
		t.Errorf("push: the credentials not named, or the token printed:\n%s%s", r.stdout, r.stderr)
	}

	// Nothing new: nothing sent, and what was pushed already, when, by
	// whom, with which credentials (never the token); no collector set:
	// exit 2 with the fix.
	r = runIn(t, root, tokenEnv, "logs", "push")
	if r.code != 0 || !strings.Contains(r.stdout, "no decisions to push") {
		t.Errorf("second push: exit %d, %s %s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"the last push to it: 2 decision(s) in 1 upload(s) at ", "ago) by `des-hook logs push` (pid ", "with the bearer token of $DES_ORG_LOG_TOKEN (setting decision_log_token_env) from its environment"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("second push: stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout+r.stderr, "org-token") {
		t.Errorf("second push printed the token:\n%s%s", r.stdout, r.stderr)
	}
	writeFile(t, root, ".des/config.json", `{"decision_log": "on"}`)
	if r := runIn(t, root, tokenEnv, "logs", "push"); r.code != 2 || !strings.Contains(r.stderr, "decision_log_url") {
		t.Errorf("no collector: exit %d, %s", r.code, r.stderr)
	}
}

// BenchmarkProcessDecisionLog times the hook process of one decision
// (Gate 1 on a complete execute-step prompt, decided in the process) with
// decision_log off and on, interleaved so that machine drift hits both
// alike: on-off-µs is what logging adds to a hook event (the installation
// id read once, the event masked, encoded and appended).
func BenchmarkProcessDecisionLog(b *testing.B) {
	root := b.TempDir()
	writeFile(b, root, e2eStep, `{"task_id": "01-01", "state": {"status": "TODO"}, "tdd_cycle": {"phase_execution_log": []}}`)
	event, _ := json.Marshal(agentEvent(root, "Agent", renderPrompt(b, "execute-step")))
	run := func(mode string) time.Duration {
		cmd := exec.Command(hookBin)
		cmd.Env = append(cleanEnviron(), "CLAUDE_PROJECT_DIR="+root, "DES_DECISION_SERVER=off", "DES_DECISION_LOG="+mode)
		cmd.Dir, cmd.Stdin = root, bytes.NewReader(event)
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("hook: %v\n%s", err, out)
		}
		return time.Since(start)
	}
	var off, on []time.Duration
	for b.Loop() {
		off = append(off, run("off"))
		on = append(on, run("on"))
	}
	mOff, mOn := median(off), median(on)
	b.ReportMetric(float64(mOff.Microseconds()), "off-µs")
	b.ReportMetric(float64(mOn.Microseconds()), "on-µs")
	b.ReportMetric(float64((mOn - mOff).Microseconds()), "on-off-µs")
	if logged, _ := filepath.Glob(filepath.Join(root, ".des", "decisions", "*.jsonl")); len(logged) == 0 {
		b.Error("decision_log on logged nothing")
	}
}

// The warm decision server pushes a project's decision logs by itself, in
// the background, at most once per delay (DES_SERVER_LOG_PUSH_SECONDS), with
// the token of the request's environment.
func TestE2EDecisionLogPushedByServer(t *testing.T) {
	t.Parallel()
	if testDecisionServer == "off" {
		t.Skip("DES_TEST_DECISION_SERVER=off: the decision server is not used")
	}
	c := &logCollector{t: t}
	srv := httptest.NewServer(c)
	defer srv.Close()
	root := t.TempDir()
	writeFile(t, root, ".des/config.json", `{"decision_log": "on", "decision_log_url": "`+srv.URL+`/logs", "decision_log_token_env": "DES_ORG_LOG_TOKEN"}`)
	env := []string{"DES_ORG_LOG_TOKEN=org-token", "DES_SERVER_LOG_PUSH_SECONDS=1"}
	received := func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.events)
	}
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; received() == 0; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("after %d hook events, the collector received nothing", i)
		}
		if reason := denyReason(t, runHookBinary(t, hookBin, root, env, writeEvent(root, "Edit", ".des/config.json"))); !strings.Contains(reason, "DES-PROTECTED-PATH") {
			t.Fatalf("reason %q", reason)
		}
		time.Sleep(300 * time.Millisecond)
	}
	c.mu.Lock()
	ev := c.events[0]
	c.mu.Unlock()
	if ev.Path != "des/gates/tool_use" || ev.Labels["app"] != "des" {
		t.Errorf("pushed event %+v", ev)
	}
}

// The case: the warm server pushed in the background without the
// token (Claude Code was started without it; the person set it in their
// terminal afterwards), to a collector that accepts uploads without one.
// `des-hook logs push` in the terminal then finds nothing to send, and says
// what went, when, by whom, with which credentials, and where the token
// must be set for the background push.
func TestE2ELogsPushReportsBackgroundPush(t *testing.T) {
	t.Parallel()
	if testDecisionServer == "off" {
		t.Skip("DES_TEST_DECISION_SERVER=off: the decision server is not used")
	}
	var mu sync.Mutex
	var auths []string
	received := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		zr, err := gzip.NewReader(r.Body)
		var events []decisionlog.Event
		if err == nil {
			err = json.NewDecoder(zr).Decode(&events)
		}
		if err != nil {
			http.Error(w, "not a gzipped array of events", http.StatusBadRequest)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		auths = append(auths, r.Header.Get("Authorization"))
		received += len(events)
	}))
	defer srv.Close()
	count := func() int { mu.Lock(); defer mu.Unlock(); return received }
	root := t.TempDir()
	writeFile(t, root, ".des/config.json", `{"decision_log": "on", "decision_log_url": "`+srv.URL+`/logs", "decision_log_token_env": "DES_ORG_LOG_TOKEN"}`)
	hookEnv := []string{"DES_SERVER_LOG_PUSH_SECONDS=1"} // Claude Code's environment: no token
	logged := func() int {
		n := 0
		files, _ := filepath.Glob(filepath.Join(root, ".des", "decisions", "*.jsonl"))
		for _, f := range files {
			raw, _ := os.ReadFile(f)
			n += bytes.Count(raw, []byte{'\n'})
		}
		return n
	}
	hookEvent := func() {
		t.Helper()
		if reason := denyReason(t, runHookBinary(t, hookBin, root, hookEnv, writeEvent(root, "Edit", ".des/config.json"))); !strings.Contains(reason, "DES-PROTECTED-PATH") {
			t.Fatalf("reason %q", reason)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for count() == 0 || count() < logged() {
		if time.Now().After(deadline) {
			t.Fatalf("the collector received %d of %d decisions", count(), logged())
		}
		hookEvent()
		time.Sleep(1100 * time.Millisecond) // the next hook event finds a push due
	}
	// The record is written once the push is done.
	var last logPushRecord
	for lookup := (envMap{"DES_STATE_DIR": testStateDir}).lookup; ; {
		if pushes := readLogPushes(root, lookup); len(pushes) > 0 {
			sum := 0
			for _, p := range pushes {
				sum += p.Events
			}
			if sum == count() {
				last = pushes[len(pushes)-1]
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no record of the server's pushes: %+v", readLogPushes(root, lookup))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if last.By != pushedByServer || last.TokenSet || last.TokenEnv != "DES_ORG_LOG_TOKEN" || last.URL != srv.URL+"/logs" {
		t.Errorf("record %+v", last)
	}
	mu.Lock()
	for _, a := range auths {
		if a != "" {
			t.Errorf("the background push sent Authorization %q without a token in the hook's environment", a)
		}
	}
	mu.Unlock()

	r := runIn(t, root, []string{"CLAUDE_PROJECT_DIR=" + root, "DES_ORG_LOG_TOKEN=org-token"}, "logs", "push")
	if r.code != 0 {
		t.Fatalf("logs push: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("logs push:\n%s%s", r.stdout, r.stderr)
	for _, want := range []string{
		"no decisions to push to " + srv.URL + "/logs",
		"the last push to it: ",
		"by the warm decision server (pid ",
		"with no token: $DES_ORG_LOG_TOKEN (setting decision_log_token_env) was not set in the environment Claude Code ran the hook with",
		"set $DES_ORG_LOG_TOKEN in the environment Claude Code starts with",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("logs push: stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout+r.stderr, "org-token") {
		t.Errorf("logs push printed the token:\n%s%s", r.stdout, r.stderr)
	}
}
