package main

import (
	"encoding/json"
	"testing"
)

func TestMayName(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{`{"hook_event_name":"SubagentStop"}`, true},
		{`{"hook_event_name":"\u0053ubagentStop"}`, true},
		{`{"hook_event_name":"Subagent\u0053top"}`, true},
		{`{"hook_event_name":"PreToolUse","prompt":"\u003cb\u003e \u0026"}`, false},
		{`{"hook_event_name":"PreToolUse"}`, false},
		{`{"x":"\u00`, false},
		{`{"x":"\u004`, false},
	} {
		if got := mayName([]byte(tc.in), "SubagentStop"); got != tc.want {
			t.Errorf("mayName(%s) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// Whatever the encoding, an event whose name decodes to SubagentStop is
// never missed.
func FuzzMayName(f *testing.F) {
	f.Add(`{"hook_event_name":"\u0053ubagent\u0053top"}`)
	f.Add(`{"hook_event_name":"SubagentStop"}`)
	f.Add(`{"a":"\u003c","hook_event_name":"Sub\u0061gentStop"}`)
	f.Fuzz(func(t *testing.T, s string) {
		if eventName([]byte(s)) == "SubagentStop" && !mayName([]byte(s), "SubagentStop") {
			t.Fatalf("%q decodes to SubagentStop but mayName says no", s)
		}
		if raw, err := json.Marshal(map[string]string{"hook_event_name": s}); err == nil && s == "SubagentStop" && !mayName(raw, s) {
			t.Fatalf("%s missed", raw)
		}
	})
}
