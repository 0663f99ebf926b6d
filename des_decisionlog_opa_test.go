package des

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/deterministic-exec/des/internal/testenv"
	"github.com/deterministic-exec/des/policy"
)

// syncBuffer collects a process's output while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A real OPA server, loaded with des's built-in bundle, logs the same
// decision as des: the same fields (OPA's console logger adds its own:
// level, msg, time, type; its server adds req_id), and the same deny and
// warn sets in the result.
func TestDecisionLogMatchesOPAServer(t *testing.T) {
	t.Parallel()
	testenv.Long(t)
	out, err := exec.Command("go", "tool", "-n", "opa").Output()
	if err != nil {
		t.Fatalf("go tool -n opa: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	// OPA's own mask policy erases what des's mask erases: the privacy
	// list des pushes with, set as the kept log's mask here.
	mask := DefaultConfig().DecisionLogPushMask
	maskDir := t.TempDir()
	var rules strings.Builder
	rules.WriteString("package system.log\n\n")
	for _, p := range mask {
		fmt.Fprintf(&rules, "mask contains %q\n", p)
	}
	if err := os.WriteFile(filepath.Join(maskDir, "mask.rego"), []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	opa := exec.Command(strings.TrimSpace(string(out)), "run", "--server", "--addr", addr,
		"--set", "decision_logs.console=true", "--ignore", "*_test.rego", "rego", maskDir)
	opa.Stdout, opa.Stderr = &logs, &logs
	if err := opa.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { opa.Process.Kill(); opa.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/health")
		if err == nil && resp.StatusCode == http.StatusOK {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("OPA server not ready: %v\n%s", err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}

	in := map[string]any{
		"tool":   "Write",
		"writes": []any{map[string]any{"path": ".des/config.json", "tool": "Write"}},
		"call":   map[string]any{"prompt": "the plan", "description": "step 1", "subagent_type": "coder"},
		"step":   map[string]any{"path": "s.json", "document": map[string]any{"task_id": "01"}},
	}
	body, _ := json.Marshal(map[string]any{"input": in})
	resp, err := http.Post("http://"+addr+"/v1/data/des/gates/tool_use", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var opaEvent map[string]any
	for opaEvent == nil {
		sc := bufio.NewScanner(strings.NewReader(logs.String()))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == "Decision Log" {
				opaEvent = m
			}
		}
		if opaEvent == nil && time.Now().After(deadline) {
			t.Fatalf("no decision logged by OPA:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	root := t.TempDir()
	e, err := New(t.Context(), WithRoot(root), WithEnv(env(map[string]string{"DES_DECISION_LOG_MASK": strings.Join(mask, ","), "DES_STATE_DIR": t.TempDir()})))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Evaluate(t.Context(), policy.ToolUse, in); err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(loggedEvents(t, root)[0])
	var desEvent map[string]any
	json.Unmarshal(raw, &desEvent)

	keys := func(m map[string]any, drop ...string) []string {
		var ks []string
		for k := range m {
			if !slices.Contains(drop, k) {
				ks = append(ks, k)
			}
		}
		slices.Sort(ks)
		return ks
	}
	// des adds bundles (OPA adds them when it runs bundles from a bundle
	// server, not files named on its command line); OPA's console logger
	// and server add theirs.
	if diff := cmp.Diff(keys(opaEvent, "level", "msg", "time", "type", "req_id"), keys(desEvent, "bundles")); diff != "" {
		t.Errorf("event fields (-opa +des):\n%s", diff)
	}
	for _, k := range []string{"id", "version"} {
		if _, ok := desEvent["labels"].(map[string]any)[k]; !ok {
			t.Errorf("des labels %v lack OPA's %q", desEvent["labels"], k)
		}
	}
	if _, ok := desEvent["metrics"].(map[string]any)["timer_rego_query_eval_ns"]; !ok {
		t.Errorf("des metrics %v lack OPA's timer_rego_query_eval_ns", desEvent["metrics"])
	}
	opaResult, desResult := opaEvent["result"].(map[string]any), desEvent["result"].(map[string]any)
	for _, k := range []string{"deny", "warn"} {
		if diff := cmp.Diff(opaResult[k], desResult[k]); diff != "" {
			t.Errorf("result %s (-opa +des):\n%s", k, diff)
		}
	}
	if diff := cmp.Diff(opaEvent["input"], desEvent["input"]); diff != "" {
		t.Errorf("masked input (-opa +des):\n%s", diff)
	}
	sortedAny := func(x any) []string {
		var out []string
		for _, v := range x.([]any) {
			out = append(out, v.(string))
		}
		slices.Sort(out)
		return out
	}
	if diff := cmp.Diff(sortedAny(opaEvent["erased"]), sortedAny(desEvent["erased"])); diff != "" {
		t.Errorf("erased (-opa +des):\n%s", diff)
	}
}
