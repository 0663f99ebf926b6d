package claudecode

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// The exit status, interruption and output of a Bash call, read from the
// real client's payloads (examples/des-engine/testdata/realclient/payloads.jsonl, recorded by the real client suite): PostToolUse
// carries tool_response and means exit 0; PostToolUseFailure carries
// "Exit code N" and the output in error, and no tool_response.
func TestTestRunResultRealPayloads(t *testing.T) {
	t.Parallel()
	f, err := os.Open("../examples/des-engine/testdata/realclient/payloads.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 8<<20)
	seen := map[string]bool{}
	for sc.Scan() {
		var line struct {
			Payload json.RawMessage `json:"payload"`
		}
		raw := sc.Bytes()
		if json.Unmarshal(raw, &line) == nil && len(line.Payload) > 0 {
			raw = line.Payload
		}
		ev, _, err := decodeEvent(raw)
		if err != nil || ev.ToolName != toolBash || (ev.HookEventName != eventPostToolUse && ev.HookEventName != eventPostToolUseFailure) {
			continue
		}
		exit, interrupted, _ := testRunResult(ev)
		want := 0
		if ev.HookEventName == eventPostToolUseFailure {
			want = 3 // "sh fix.sh; exit 3"
		}
		if exit == nil || *exit != want || interrupted {
			t.Errorf("%s %q: exit %v, interrupted %v; want %d", ev.HookEventName, bashCommand(ev), exit, interrupted, want)
		}
		seen[ev.HookEventName] = true
	}
	if !seen[eventPostToolUse] || !seen[eventPostToolUseFailure] {
		t.Fatalf("payloads seen: %v", seen)
	}

	ev := &Event{HookEventName: eventPostToolUseFailure, Error: "Exit code 1\n--- FAIL: TestTotal (0.00s)\n    cart_test.go:7: Total(2, 3) = -1, want 5\nFAIL\nFAIL\texample.com/shop\t0.002s", IsInterrupt: false}
	exit, interrupted, out := testRunResult(ev)
	if *exit != 1 || interrupted || !strings.HasPrefix(out, "--- FAIL") {
		t.Errorf("failure: %v %q", *exit, out)
	}
	ev = &Event{HookEventName: eventPostToolUse, ToolResponse: json.RawMessage(`{"stdout":"ok\n","stderr":"warn","interrupted":true}`)}
	exit, interrupted, out = testRunResult(ev)
	if *exit != 0 || !interrupted || out != "ok\nwarn" {
		t.Errorf("interrupted: %v %v %q", *exit, interrupted, out)
	}
}
