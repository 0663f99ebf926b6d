package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/modelserver"
	"github.com/deterministic-exec/des/internal/proctree"
)

// A Bash call of the real client leaves a job that writes des's settings
// two seconds after the call has ended, while the model is still thinking:
// the process tree keeps the call in flight, so the next call's check
// finds the write, restores the file, and tells the model; the job's own
// call was told nothing.
func TestRealClientBackgroundWriterAfterItsCall(t *testing.T) {
	// Not parallel: its calls' jobs are told from other tests' processes
	// by parent, and every test's processes share this one.
	if !(proctree.Tree{}).Supported() {
		t.Skip("no Linux /proc: calls that leave jobs count for 11 minutes")
	}
	c := realClient(t)
	root := t.TempDir()
	const good = `{"stale_threshold_minutes": 45}`
	writeFile(t, root, ".des/config.json", good)
	bg := `(sleep 2; python3 -c 'open(".des/"+"config.json","w").write("{}")') >/dev/null 2>&1 &`
	s := runReal(t, c, root, conversation("background",
		scripted("bg", "Bash", map[string]any{"command": bg, "description": "start a job"}),
		modelserver.Reply{Later: func() modelserver.Reply {
			time.Sleep(4 * time.Second) // the job writes and ends between calls
			return scripted("next", "Bash", map[string]any{"command": "ls", "description": "list"})
		}},
	), realOpts{via: viaSettings, prompt: "background", noSandbox: true})
	if got := readFileString(t, root, ".des/config.json"); got != good {
		t.Errorf(".des/config.json: %q; want it restored to %q", got, good)
	}
	afterNext := s.laterText(toolID("next"))
	if !strings.Contains(afterNext, "DES-INTEGRITY") || !strings.Contains(afterNext, filepath.Join(".des", "config.json")) {
		t.Errorf("after the next call the model was shown %q; want DES-INTEGRITY naming .des/config.json", afterNext)
	}
	// What came after the job's call and before the next call's result.
	if between, _ := strings.CutSuffix(s.laterText(toolID("bg")), afterNext); strings.Contains(between, "DES-INTEGRITY") {
		t.Errorf("the job's own call was blamed before the job wrote: %q", between)
	}
}

// A real "&" whose job has ended by the call's end leaves nothing running:
// the person's edit made right after the call, before the next one, is
// theirs and stays.
func TestRealClientFinishedJobOpensNoWindow(t *testing.T) {
	// Not parallel: its calls' jobs are told from other tests' processes
	// by parent, and every test's processes share this one.
	if !(proctree.Tree{}).Supported() {
		t.Skip("no Linux /proc: calls that read as leaving jobs count for 11 minutes")
	}
	c := realClient(t)
	root := t.TempDir()
	writeFile(t, root, ".des/config.json", `{"stale_threshold_minutes": 45}`)
	const edited = `{"stale_threshold_minutes": 30}`
	s := runReal(t, c, root, conversation("quick job",
		scripted("job", "Bash", map[string]any{"command": "sleep 0.2 & wait", "description": "a quick job"}),
		modelserver.Reply{Later: func() modelserver.Reply {
			writeFile(t, root, ".des/config.json", edited) // the person, between calls
			return scripted("next", "Bash", map[string]any{"command": "ls", "description": "list"})
		}},
	), realOpts{via: viaSettings, prompt: "quick job", noSandbox: true})
	if got := readFileString(t, root, ".des/config.json"); got != edited {
		t.Errorf(".des/config.json: %q; want the person's edit %q", got, edited)
	}
	if told := s.laterText(toolID("job")); strings.Contains(told, "DES-INTEGRITY") {
		t.Errorf("the person's edit was reported: %q", told)
	}
}

// A Bash call the user declines (here a permission rule denies it: print
// mode has no one to ask) has a PreToolUse and no PostToolUse; Claude Code
// lists it in the PostToolBatch it sends once the batch has resolved, and
// des ends the call there. The person's edit made before the next call is
// theirs and stays: without the PostToolBatch the declined call counted as
// running for its timeout and a minute, and the next call undid the edit.
func TestRealClientDeclinedCallOpensNoWindow(t *testing.T) {
	t.Parallel()
	c := realClient(t)
	root := t.TempDir()
	writeFile(t, root, ".des/config.json", `{"stale_threshold_minutes": 45}`)
	const edited = `{"stale_threshold_minutes": 30}`
	s := runReal(t, c, root, conversation("declined",
		scripted("declined", "Bash", map[string]any{"command": "rm -rf node_modules", "description": "clean"}),
		modelserver.Reply{Later: func() modelserver.Reply {
			writeFile(t, root, ".des/config.json", edited) // the person, between calls
			return scripted("next", "Bash", map[string]any{"command": "ls", "description": "list"})
		}},
	), realOpts{via: viaSettings, prompt: "declined", noSandbox: true,
		settings: map[string]any{"permissions": map[string]any{"deny": []any{"Bash(rm:*)"}}}})
	var pre, post, batch bool
	for _, e := range s.events {
		switch e["hook_event_name"] {
		case "PreToolUse":
			pre = pre || e["tool_use_id"] == toolID("declined")
		case "PostToolUse", "PostToolUseFailure":
			post = post || e["tool_use_id"] == toolID("declined")
		case "PostToolBatch":
			calls, _ := e["tool_calls"].([]any)
			for _, c := range calls {
				if m, _ := c.(map[string]any); m["tool_use_id"] == toolID("declined") {
					batch = true
				}
			}
		}
	}
	if !pre || post || !batch {
		t.Fatalf("the declined call's events: PreToolUse %v, PostToolUse %v, PostToolBatch %v; want a PreToolUse and a PostToolBatch only", pre, post, batch)
	}
	if got := readFileString(t, root, ".des/config.json"); got != edited {
		t.Errorf(".des/config.json: %q; want the person's edit %q", got, edited)
	}
	if told := s.laterText(toolID("declined")); strings.Contains(told, "DES-") {
		t.Errorf("the model was told %q after the declined call", told)
	}
}
