package main

import (
	"bufio"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/claudecode"
)

// realClientPayloads is what the real Claude Code CLI (the version pinned in
// testdata/realclient/package.json) sent des's hooks during the real-client
// suite, recorded with DES_REALCLIENT_RECORD. The decoder must take each of
// them whole: no field of an unexpected type, every field des reads filled,
// and every top-level key one it knows (a new key is a change of the
// client's to look at).
const realClientPayloads = "testdata/realclient/payloads.jsonl"

func TestRealClientPayloadsDecode(t *testing.T) {
	t.Parallel()
	f, err := os.Open(realClientPayloads)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	known := map[string]bool{}
	et := reflect.TypeFor[claudecode.Event]()
	for i := range et.NumField() {
		if tag, _, _ := strings.Cut(et.Field(i).Tag.Get("json"), ","); tag != "" && tag != "-" {
			known[tag] = true
		}
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	seen := map[string]int{}
	for line := 1; sc.Scan(); line++ {
		var rec struct {
			Test    string          `json:"_test"`
			Payload json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("%s:%d: %v", realClientPayloads, line, err)
		}
		where := realClientPayloads + ":" + itoa(line) + " (" + rec.Test + ")"
		ev, err := claudecode.DecodeEvent(rec.Payload)
		if err != nil {
			t.Errorf("%s: %v", where, err)
			continue
		}
		for _, w := range ev.Mismatches {
			t.Errorf("%s: %s", where, w)
		}
		var generic map[string]any
		_ = json.Unmarshal(rec.Payload, &generic)
		for k := range generic {
			if !known[k] {
				t.Errorf("%s: key %q is unknown to des's Event", where, k)
			}
		}
		seen[ev.HookEventName+" "+ev.ToolName]++
		if ev.SessionID == "" || ev.Cwd == "" || ev.HookEventName == "" {
			t.Errorf("%s: session_id %q, cwd %q, hook_event_name %q: want all set", where, ev.SessionID, ev.Cwd, ev.HookEventName)
		}
		if ev.ToolName == "" {
			continue
		}
		if ev.ToolUseID == "" {
			t.Errorf("%s: no tool_use_id", where)
		}
		var derr error
		switch {
		case ev.ToolName == "Bash":
			var in claudecode.BashInput
			if in, derr = ev.BashInput(); derr == nil && in.Command == "" {
				t.Errorf("%s: Bash input without a command", where)
			}
		case ev.ToolName == "Write":
			var in claudecode.WriteInput
			if in, derr = ev.WriteInput(); derr == nil && in.FilePath == "" {
				t.Errorf("%s: Write input without a file_path", where)
			}
		case ev.ToolName == "Agent" || ev.ToolName == "Task":
			var in claudecode.SubagentInput
			if in, derr = ev.SubagentInput(); derr == nil && in.Prompt == "" {
				t.Errorf("%s: %s input without a prompt", where, ev.ToolName)
			}
			if ev.HookEventName == "PostToolUse" {
				if out, err := ev.SubagentResponse(); err != nil || out.Status == "" {
					t.Errorf("%s: %s response %+v: %v", where, ev.ToolName, out, err)
				}
			}
		}
		if derr != nil {
			t.Errorf("%s: %s input: %v", where, ev.ToolName, derr)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// The subagent tool reaches hooks as Agent, though the model is
	// offered it as Task.
	for _, want := range []string{"PreToolUse Agent", "PostToolUse Agent", "PreToolUse Bash", "PostToolUseFailure Bash", "SubagentStop ", "SubagentStart ", "UserPromptSubmit ", "SessionStart "} {
		if seen[want] == 0 {
			t.Errorf("no %q payload recorded; record again (DES_REALCLIENT_RECORD)", want)
		}
	}
}
