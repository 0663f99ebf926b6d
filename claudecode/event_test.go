package claudecode

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/internal/testenv"
)

// requireCorpus is the shared corpus of real hook payloads, or skips.
func requireCorpus(t *testing.T) string { return testenv.Shared(t, "corpus/claude-code-hooks") }

// curatedRoutes is the route each curated payload must take; "" means no
// opinion without building anything. Every curated file must be listed, so
// a new one gets a decision.
var curatedRoutes = map[string]struct {
	key     routeKey
	handler string
}{
	"Notification.json":                              {},
	"PermissionRequest_Bash.json":                    {},
	"PostToolUseFailure_Bash.json":                   {routeKey{"PostToolUseFailure", "Bash"}, "postToolUseBash"},
	"PostToolUse_Agent_async_launched_windows.json":  {routeKey{"PostToolUse", "Agent"}, "postToolUseSubagent"},
	"PostToolUse_Bash.json":                          {routeKey{"PostToolUse", "Bash"}, "postToolUseBash"},
	"PostToolUse_Edit_subagent.json":                 {routeKey{"PostToolUse", "Edit"}, "postToolUseWrite"},
	"PostToolUse_Task_async_launched.json":           {routeKey{"PostToolUse", "Task"}, "postToolUseSubagent"},
	"PostToolUse_Task_completed.json":                {routeKey{"PostToolUse", "Task"}, "postToolUseSubagent"},
	"PostToolUse_Write.json":                         {routeKey{"PostToolUse", "Write"}, "postToolUseWrite"},
	"PreCompact.json":                                {},
	"PreToolUse_Agent_windows.json":                  {routeKey{"PreToolUse", "Agent"}, "preToolUseSubagent"},
	"PreToolUse_Bash_in_subagent.json":               {routeKey{"PreToolUse", "Bash"}, "preToolUseBash"},
	"PreToolUse_Bash_main.json":                      {routeKey{"PreToolUse", "Bash"}, "preToolUseBash"},
	"PreToolUse_Edit.json":                           {routeKey{"PreToolUse", "Edit"}, "preToolUseWrite"},
	"PreToolUse_Edit_windows.json":                   {routeKey{"PreToolUse", "Edit"}, "preToolUseWrite"},
	"PreToolUse_Task_pre2.1.63.json":                 {routeKey{"PreToolUse", "Task"}, "preToolUseSubagent"},
	"PreToolUse_Write.json":                          {routeKey{"PreToolUse", "Write"}, "preToolUseWrite"},
	"SessionEnd.json":                                {},
	"SessionStart.json":                              {routeKey{"SessionStart", ""}, "sessionStart"},
	"Stop_old_no_last_message.json":                  {},
	"Stop_windows_stop_hook_active_true.json":        {},
	"Stop_with_last_message.json":                    {},
	"SubagentStart.json":                             {routeKey{"SubagentStart", ""}, "subagentStart"},
	"SubagentStop_7char_id_empty_type.json":          {routeKey{"SubagentStop", ""}, "subagentStop"},
	"SubagentStop_with_background_tasks_effort.json": {routeKey{"SubagentStop", ""}, "subagentStop"},
	"SubagentStop_with_last_message.json":            {routeKey{"SubagentStop", ""}, "subagentStop"},
	"UserPromptSubmit.json":                          {routeKey{"UserPromptSubmit", ""}, "userPromptSubmit"},
}

func funcName(fn handlerFunc) string {
	name := runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name()
	return name[strings.LastIndex(name, ".")+1:]
}

// recordingRoutes has the keys of defaultRoutes, each handler recording the
// key it was reached by.
func recordingRoutes(got *[]routeKey) routeTable {
	t := routeTable{}
	for k := range defaultRoutes() {
		t[k] = func(context.Context, *hookEnv, *Event) response {
			*got = append(*got, k)
			return noOpinion()
		}
	}
	return t
}

func TestCuratedPayloadsDecodeAndRoute(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(requireCorpus(t), "curated")
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no curated payloads in %s: %v", dir, err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		name := filepath.Base(f)
		seen[name] = true
		t.Run(name, func(t *testing.T) {
			want, ok := curatedRoutes[name]
			if !ok {
				t.Fatalf("no expected route for %s: add it to curatedRoutes", name)
			}
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			ev, warnings, err := decodeEvent(data)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if len(warnings) > 0 {
				t.Errorf("decode warnings: %v", warnings)
			}
			if ev.HookEventName == "" || ev.SessionID == "" {
				t.Errorf("hook_event_name %q, session_id %q: want both set", ev.HookEventName, ev.SessionID)
			}
			if !bytes.Equal(ev.Raw, bytes.TrimSpace(data)) {
				t.Errorf("Raw does not hold the payload verbatim")
			}

			key, fn, routed := defaultRoutes().lookup(ev)
			if wantRouted := want.handler != ""; routed != wantRouted {
				t.Fatalf("routed = %v (key %v), want %v", routed, key, wantRouted)
			}
			if routed {
				if key != want.key {
					t.Errorf("route key = %v, want %v", key, want.key)
				}
				if got := funcName(fn); got != want.handler {
					t.Errorf("handler = %s, want %s", got, want.handler)
				}
			}

			// The same through runHook: the handler is reached exactly once,
			// and unrouted events reach none.
			var got []routeKey
			var stdout, stderr bytes.Buffer
			code := runHook(context.Background(), bytes.NewReader(data), &stdout, &stderr, envMap{"CLAUDE_PROJECT_DIR": t.TempDir()}.lookup, recordingRoutes(&got))
			if code != 0 || stdout.Len() != 0 || stderr.Len() != 0 {
				t.Errorf("runHook = %d, stdout %q, stderr %q; want 0 and nothing", code, stdout.String(), stderr.String())
			}
			switch {
			case routed && (len(got) != 1 || got[0] != want.key):
				t.Errorf("runHook reached %v, want [%v]", got, want.key)
			case !routed && len(got) != 0:
				t.Errorf("runHook reached %v, want no handler", got)
			}
		})
	}
	for name := range curatedRoutes {
		if !seen[name] {
			t.Errorf("curatedRoutes lists %s, which is not in the corpus", name)
		}
	}
}

func TestDefaultRoutes(t *testing.T) {
	t.Parallel()
	want := map[routeKey]string{
		{"PreToolUse", "Agent"}:            "preToolUseSubagent",
		{"PreToolUse", "Task"}:             "preToolUseSubagent",
		{"PreToolUse", "Skill"}:            "preToolUseSkill",
		{"PreToolUse", "Write"}:            "preToolUseWrite",
		{"PreToolUse", "Edit"}:             "preToolUseWrite",
		{"PreToolUse", "MultiEdit"}:        "preToolUseWrite",
		{"PreToolUse", "Bash"}:             "preToolUseBash",
		{"PostToolUse", "Write"}:           "postToolUseWrite",
		{"PostToolUse", "Edit"}:            "postToolUseWrite",
		{"PostToolUse", "MultiEdit"}:       "postToolUseWrite",
		{"PostToolUse", "Agent"}:           "postToolUseSubagent",
		{"PostToolUse", "Task"}:            "postToolUseSubagent",
		{"PostToolUse", "AskUserQuestion"}: "postToolUseQuestion",
		{"SubagentStop", ""}:               "subagentStop",
		{"SubagentStart", ""}:              "subagentStart",
		{"UserPromptSubmit", ""}:           "userPromptSubmit",
		{"SessionStart", ""}:               "sessionStart",

		{"PreToolUse", "NotebookEdit"}:         "preToolUseNotebook",
		{"PreToolUse", "mcp__*"}:               "preToolUseMCP",
		{"PostToolUse", "Bash"}:                "postToolUseBash",
		{"PostToolUse", "NotebookEdit"}:        "postToolUseEffects",
		{"PostToolUse", "mcp__*"}:              "postToolUseEffects",
		{"PostToolUseFailure", "Bash"}:         "postToolUseBash",
		{"PostToolUseFailure", "NotebookEdit"}: "postToolUseEffects",
		{"PostToolUseFailure", "mcp__*"}:       "postToolUseEffects",
		{"PostToolBatch", ""}:                  "postToolBatch",
	}
	routes := defaultRoutes()
	if len(routes) != len(want) {
		t.Errorf("defaultRoutes has %d routes, want %d", len(routes), len(want))
	}
	for k, name := range want {
		fn, ok := routes[k]
		if !ok {
			t.Errorf("no route for %v", k)
			continue
		}
		if got := funcName(fn); got != name {
			t.Errorf("route %v = %s, want %s", k, got, name)
		}
	}
	// Tools DES ignores, and the events it does not handle, fall through.
	for _, ev := range []Event{
		{HookEventName: "PreToolUse", ToolName: "Read"},
		{HookEventName: "PreToolUse", ToolName: "mcp_github_create_issue"},
		{HookEventName: "PreToolUse"},
		{HookEventName: "PostToolUse", ToolName: "Read"},
		{HookEventName: "PostToolUseFailure", ToolName: "Write"},
		{HookEventName: "PermissionRequest", ToolName: "Agent"},
		{HookEventName: "Stop"},
		{HookEventName: "SomeFutureEvent", ToolName: "Write"},
		{},
	} {
		if k, _, ok := routes.lookup(&ev); ok {
			t.Errorf("lookup(%q, %q) routed to %v, want none", ev.HookEventName, ev.ToolName, k)
		}
	}
	// Every MCP tool shares one route.
	if k, _, ok := routes.lookup(&Event{HookEventName: "PostToolUse", ToolName: "mcp__filesystem__write_file"}); !ok || k.tool != "mcp__*" {
		t.Errorf("an MCP tool routed to %v, %v", k, ok)
	}
	// SubagentStop routes whatever else it carries.
	if _, _, ok := routes.lookup(&Event{HookEventName: "SubagentStop", ToolName: "X"}); !ok {
		t.Error("SubagentStop with a tool_name not routed")
	}
}

func TestIsSubagentTool(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{"Agent": true, "Task": true, "agent": false, "TaskCreate": false, "": false, "Bash": false} {
		if got := isSubagentTool(name); got != want {
			t.Errorf("isSubagentTool(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestDecodeEventErrors(t *testing.T) {
	t.Parallel()
	for name, in := range map[string]string{
		"empty":          "",
		"whitespace":     " \n\t ",
		"truncated":      `{"hook_event_name":"PreToolUse"`,
		"not JSON":       `hook_event_name=PreToolUse`,
		"array":          `[{"hook_event_name":"PreToolUse"}]`,
		"null":           `null`,
		"string":         `"PreToolUse"`,
		"two objects":    `{} {}`,
		"trailing text":  `{"hook_event_name":"Stop"} x`,
		"bad escape":     `{"hook_event_name":"\q"}`,
		"invalid nested": `{"tool_input":{"a":}}`,
	} {
		if ev, _, err := decodeEvent([]byte(in)); err == nil {
			t.Errorf("%s: decodeEvent(%q) = %+v, want an error", name, in, ev)
		}
	}
}

func TestDecodeEventTolerance(t *testing.T) {
	t.Parallel()
	// Unknown fields and events are fine; a mistyped field only reads as
	// absent, with a warning, and the rest of the event is kept.
	ev, warnings, err := decodeEvent([]byte(`{"hook_event_name":"SubagentStop","agent_id":"a1","stop_hook_active":"yes","brand_new":{"x":[1]},"message":{"obj":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	if ev.HookEventName != "SubagentStop" || ev.AgentID != "a1" || ev.StopHookActive {
		t.Errorf("event = %+v", ev)
	}
	if len(warnings) == 0 || !strings.Contains(warnings[0], "stop_hook_active") {
		t.Errorf("warnings = %q, want one naming stop_hook_active", warnings)
	}
	ev, warnings, err = decodeEvent([]byte(`{"hook_event_name":"TotallyNew","tool_name":"Write","custom_instructions":null,"tool_response":[{"type":"text"}]}`))
	if err != nil || len(warnings) != 0 {
		t.Fatalf("err %v, warnings %v", err, warnings)
	}
	if ev.HookEventName != "TotallyNew" || string(ev.ToolResponse) != `[{"type":"text"}]` {
		t.Errorf("event = %+v", ev)
	}
}

func mustDecode(t *testing.T, s string) *Event {
	t.Helper()
	ev, _, err := decodeEvent([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func readCurated(t *testing.T, name string) *Event {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(requireCorpus(t), "curated", name))
	if err != nil {
		t.Fatal(err)
	}
	return mustDecode(t, string(data))
}

func TestToolInputAccessors(t *testing.T) {
	t.Parallel()
	t.Run("Agent", func(t *testing.T) {
		ev := readCurated(t, "PreToolUse_Agent_windows.json")
		in, err := ev.SubagentInput()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(in.Prompt, "Add loading states") || in.Description != "Add loading states+tooltips+keyboard shortcuts" {
			t.Errorf("input = %+v", in)
		}
	})
	t.Run("Task", func(t *testing.T) {
		ev := readCurated(t, "PostToolUse_Task_completed.json")
		in, err := ev.SubagentInput()
		if err != nil {
			t.Fatal(err)
		}
		if in.SubagentType != "builder" || in.Model != "haiku" || in.Prompt == "" {
			t.Errorf("input = %+v", in)
		}
		out, err := ev.SubagentResponse()
		if err != nil {
			t.Fatal(err)
		}
		if out.Status != "completed" || out.AgentID != "a2557a2" || out.IsAsync {
			t.Errorf("response = %+v", out)
		}
	})
	t.Run("Write", func(t *testing.T) {
		ev := readCurated(t, "PreToolUse_Write.json")
		in, err := ev.WriteInput()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(in.FilePath, "/validators/run_tests.py") || !strings.HasPrefix(in.Content, "#!/usr/bin/env python3") {
			t.Errorf("input = %+v", in)
		}
		if f, ok := ev.TargetFile(); !ok || f != in.FilePath {
			t.Errorf("TargetFile = %q, %v", f, ok)
		}
	})
	t.Run("Edit", func(t *testing.T) {
		ev := readCurated(t, "PreToolUse_Edit_windows.json")
		in, err := ev.EditInput()
		if err != nil {
			t.Fatal(err)
		}
		want := EditInput{FilePath: "/c/Users/mrgue/CLAUDE CODE/restaurant-margin/client/src/App.tsx", OldString: "<AlertsBell />", NewString: "{/* <AlertsBell /> */}", ReplaceAll: true}
		if in != want {
			t.Errorf("input = %+v, want %+v", in, want)
		}
	})
	t.Run("MultiEdit", func(t *testing.T) {
		ev := mustDecode(t, `{"hook_event_name":"PreToolUse","tool_name":"MultiEdit","tool_input":{"file_path":"/p/a.json","edits":[{"old_string":"a","new_string":"b"},{"old_string":"c","new_string":"d","replace_all":true}]}}`)
		in, err := ev.MultiEditInput()
		if err != nil {
			t.Fatal(err)
		}
		if in.FilePath != "/p/a.json" || len(in.Edits) != 2 || in.Edits[1] != (EditInput{OldString: "c", NewString: "d", ReplaceAll: true}) {
			t.Errorf("input = %+v", in)
		}
		if f, ok := ev.TargetFile(); !ok || f != "/p/a.json" {
			t.Errorf("TargetFile = %q, %v", f, ok)
		}
	})
	t.Run("Bash", func(t *testing.T) {
		ev := readCurated(t, "PreToolUse_Bash_main.json")
		in, err := ev.BashInput()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(in.Command, "git checkout -b feat/persistent-warm-server") || in.Description == "" {
			t.Errorf("input = %+v", in)
		}
		if _, ok := ev.TargetFile(); ok {
			t.Error("TargetFile ok for Bash")
		}
	})
}

func TestToolInputAccessorErrors(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		payload string
		call    func(*Event) error
	}{
		"wrong tool":        {`{"tool_name":"Bash","tool_input":{"file_path":"x"}}`, func(ev *Event) error { _, err := ev.WriteInput(); return err }},
		"Task is not Write": {`{"tool_name":"Task","tool_input":{"prompt":"x"}}`, func(ev *Event) error { _, err := ev.EditInput(); return err }},
		"absent":            {`{"tool_name":"Agent"}`, func(ev *Event) error { _, err := ev.SubagentInput(); return err }},
		"null":              {`{"tool_name":"Bash","tool_input":null}`, func(ev *Event) error { _, err := ev.BashInput(); return err }},
		"not an object":     {`{"tool_name":"Bash","tool_input":"ls"}`, func(ev *Event) error { _, err := ev.BashInput(); return err }},
		"mistyped field":    {`{"tool_name":"Write","tool_input":{"file_path":7}}`, func(ev *Event) error { _, err := ev.WriteInput(); return err }},
		"edits not a list":  {`{"tool_name":"MultiEdit","tool_input":{"file_path":"a","edits":{}}}`, func(ev *Event) error { _, err := ev.MultiEditInput(); return err }},
		"response absent":   {`{"tool_name":"Agent"}`, func(ev *Event) error { _, err := ev.SubagentResponse(); return err }},
		"response is array": {`{"tool_name":"Task","tool_response":[]}`, func(ev *Event) error { _, err := ev.SubagentResponse(); return err }},
	} {
		ev := mustDecode(t, tc.payload)
		if err := tc.call(ev); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if f, ok := mustDecode(t, `{"tool_name":"Edit","tool_input":{"old_string":"a"}}`).TargetFile(); ok {
		t.Errorf("TargetFile without file_path = %q, true", f)
	}
}

// envMap is a fixed environment for run's lookupEnv.
type envMap map[string]string

func (m envMap) lookup(k string) (string, bool) {
	v, ok := m[k]
	return v, ok
}

func TestEventJSONNamesAreSnakeCase(t *testing.T) {
	t.Parallel()
	// Claude Code's payload keys are snake_case; a camelCase tag would
	// silently never match.
	typ := reflect.TypeOf(Event{})
	for i := range typ.NumField() {
		tag := typ.Field(i).Tag.Get("json")
		if tag == "-" {
			continue
		}
		if tag != strings.ToLower(tag) {
			t.Errorf("field %s has json tag %q", typ.Field(i).Name, tag)
		}
	}
	if _, err := json.Marshal(Event{}); err != nil {
		t.Fatal(err)
	}
}
