package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeExactNestedAndDuplicates(t *testing.T) {
	ev := mustDecode(t, `{"tool_name":"MultiEdit","tool_input":{"file_path":"a","FILE_PATH":"b","edits":[
		{"old_string":"x","OLD_STRING":"y","new_string":"1","new_string":"2","Replace_All":true}]}}`)
	in, err := ev.MultiEditInput()
	if err != nil {
		t.Fatal(err)
	}
	want := MultiEditInput{FilePath: "a", Edits: []EditInput{{OldString: "x", NewString: "2"}}}
	if diff := cmp.Diff(want, in); diff != "" {
		t.Errorf("MultiEditInput (-want +got):\n%s", diff)
	}
	// A mistyped edit fails the list: a list with a hole is not what Claude Code acts on.
	ev = mustDecode(t, `{"tool_name":"MultiEdit","tool_input":{"file_path":"a","edits":[{"old_string":7}]}}`)
	if _, err := ev.MultiEditInput(); err == nil {
		t.Error("mistyped edit: no error")
	}
	// Top-level fields: exact, last wins.
	ev = mustDecode(t, `{"hook_event_name":"PreToolUse","Hook_Event_Name":"Stop","tool_name":"Read","tool_name":"Bash"}`)
	if ev.HookEventName != "PreToolUse" || ev.ToolName != "Bash" {
		t.Errorf("event = %q %q", ev.HookEventName, ev.ToolName)
	}
}
