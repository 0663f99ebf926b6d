package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// jsParse reads tool_input.<field> of payload with JavaScript's JSON.parse,
// as Claude Code does, using node when it is installed.
func jsParse(t *testing.T, payload, field string) (string, bool) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		return "", false
	}
	script := `let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{const e=JSON.parse(s);process.stdout.write(JSON.stringify([e.tool_name, e.tool_input[process.argv[1]]]))})`
	cmd := exec.CommandContext(t.Context(), node, "-e", script, field)
	cmd.Stdin = strings.NewReader(payload)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var got []string
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node output %q: %v", out, err)
	}
	return got[0] + " " + got[1], true
}

// Keys differing only in case, and duplicated keys, are read as Claude Code
// reads them: exactly, the last duplicate winning. The file judged is the
// file Claude Code would write, and the command judged the one it would run.
func TestE2EExactKeysAsClaudeCodeReadsThem(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	cfg := root + "/.des/config.json"
	cases := []struct {
		name, field, payload string
		deny                 bool
		js                   string // what JSON.parse reads: tool_name and the field
	}{
		{"case-variant key after the real one", "file_path",
			`{"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"` + cfg + `","FILE_PATH":"a.txt","content":"{}"}}`, true, "Write " + cfg},
		{"case-variant key before the real one", "file_path",
			`{"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"File_Path":"` + cfg + `","file_path":"a.txt","content":"{}"}}`, false, "Write a.txt"},
		{"duplicate key, last wins", "file_path",
			`{"hook_event_name":"PreToolUse","tool_name":"Edit","tool_input":{"file_path":"a.txt","file_path":"` + cfg + `","old_string":"a","new_string":"b"}}`, true, "Edit " + cfg},
		{"duplicate key, the safe one last", "file_path",
			`{"hook_event_name":"PreToolUse","tool_name":"Edit","tool_input":{"file_path":"` + cfg + `","file_path":"a.txt","old_string":"a","new_string":"b"}}`, false, "Edit a.txt"},
		{"case-variant tool_name", "command",
			`{"hook_event_name":"PreToolUse","tool_name":"Bash","Tool_Name":"Read","tool_input":{"command":"echo {} > .des/config.json"}}`, true, "Bash echo {} > .des/config.json"},
		{"case-variant command", "command",
			`{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"echo {} > .des/config.json","Command":"echo ok"}}`, true, "Bash echo {} > .des/config.json"},
		{"escaped key", "file_path",
			`{"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"a.txt","file\u005fpath":"` + cfg + `","content":"{}"}}`, true, "Write " + cfg},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got, ok := jsParse(t, c.payload, c.field); ok && got != c.js {
				t.Fatalf("JSON.parse reads %q, the test expects %q", got, c.js)
			}
			reason := denyReason(t, runHookProcess(t, root, nil, []byte(c.payload)))
			if (reason != "") != c.deny {
				t.Fatalf("deny = %v, want %v: %q", reason != "", c.deny, reason)
			}
			if c.deny && !strings.Contains(reason, "DES-PROTECTED-PATH") {
				t.Errorf("reason = %q, want DES-PROTECTED-PATH", reason)
			}
		})
	}
}
