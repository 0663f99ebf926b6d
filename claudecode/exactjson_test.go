package claudecode

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeExactNestedAndDuplicates(t *testing.T) {
	t.Parallel()
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

// Random payloads with keys in other cases, escaped and repeated: the hook
// reads tool_name and tool_input.file_path exactly as JavaScript's
// JSON.parse does (node, when installed, is the reference).
func TestExactKeysMatchJSONParse(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: no JSON.parse to compare with")
	}
	rng := rand.New(rand.NewPCG(15, 8))
	spell := func(key string) string {
		switch rng.IntN(4) {
		case 0:
			return strings.ToUpper(key)
		case 1:
			return strings.ToUpper(key[:1]) + key[1:]
		case 2:
			return strings.Replace(key, "_", `\u005f`, 1) // the same key, escaped
		}
		return key
	}
	var payloads []string
	for range 300 {
		var members []string
		for range 1 + rng.IntN(4) {
			members = append(members, fmt.Sprintf(`%q:"f%d"`, "file_path", rng.IntN(100)))
			members = append(members, fmt.Sprintf(`"%s":"g%d"`, spell("file_path"), rng.IntN(100)))
		}
		rng.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
		tool := fmt.Sprintf(`"tool_name":"Write","%s":"Read"`, spell("tool_name"))
		if rng.IntN(2) == 0 {
			tool = fmt.Sprintf(`"%s":"Read","tool_name":"Write"`, spell("tool_name"))
		}
		payloads = append(payloads, `{`+tool+`,"tool_input":{`+strings.Join(members, ",")+`,"content":""}}`)
	}
	script := `const lines=require("fs").readFileSync(0,"utf8").split("\n").filter(Boolean);` +
		`process.stdout.write(JSON.stringify(lines.map(l=>{const e=JSON.parse(l);return e.tool_name+" "+e.tool_input.file_path})))`
	cmd := exec.CommandContext(t.Context(), node, "-e", script)
	cmd.Stdin = strings.NewReader(strings.Join(payloads, "\n"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var want []string
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	for i, p := range payloads {
		ev := mustDecode(t, p)
		var in WriteInput
		if err := ev.toolInput(&in); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if got := ev.ToolName + " " + in.FilePath; got != want[i] {
			t.Errorf("%s: hook reads %q, JSON.parse %q", p, got, want[i])
		}
	}
}
