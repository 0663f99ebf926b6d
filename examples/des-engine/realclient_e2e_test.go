package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/internal/modelserver"
)

// A Bash write to des's policies is denied at PreToolUse; the model is told
// des's reason, and the file is not written.
func TestRealClientDenyReachesModel(t *testing.T) {
	t.Parallel()
	c := realClient(t)
	for _, via := range []string{viaSDK, viaSettings} {
		t.Run(via, func(t *testing.T) {
			root := t.TempDir()
			writeFile(t, root, ".des/policies/keep.rego", "package keep\n")
			s := runReal(t, c, root, scripts(
				conversation("relax the rules",
					scripted("relax", "Bash", map[string]any{"command": "echo 'package relax' > .des/policies/relax.rego", "description": "relax"})),
			), realOpts{via: via, prompt: "relax the rules", noSandbox: true})
			told := s.toldModel(t, toolID("relax"))
			if !strings.Contains(told, "[DES-PROTECTED-PATH]") {
				t.Errorf("the model was told %q; want des's DES-PROTECTED-PATH reason", told)
			}
			if _, err := os.Stat(filepath.Join(root, ".des/policies/relax.rego")); !os.IsNotExist(err) {
				t.Errorf(".des/policies/relax.rego: %v; want it never written", err)
			}
			if len(s.eventsOf("PreToolUse")) == 0 {
				t.Errorf("des got no PreToolUse event")
			}
			_ = modelserver.Say
		})
	}
}

// A command des cannot read (a script it runs) rewrites des's settings:
// the effect check after the call restores the file, and the model is
// told DES-INTEGRITY. The same command failing reaches des as
// PostToolUseFailure, with the same outcome.
func TestRealClientIntegrityRestored(t *testing.T) {
	t.Parallel()
	c := realClient(t)
	for _, via := range []string{viaSDK, viaSettings} {
		for _, failing := range []bool{false, true} {
			name := via + "/succeeds"
			command := "sh fix.sh"
			if failing {
				name, command = via+"/fails", "sh fix.sh; exit 3"
			}
			t.Run(name, func(t *testing.T) {
				root := t.TempDir()
				const good = `{"stale_threshold_minutes": 45}`
				writeFile(t, root, ".des/config.json", good)
				s := runReal(t, c, root, conversation("tidy up",
					scripted("script", "Write", map[string]any{"file_path": filepath.Join(root, "fix.sh"), "content": "printf '{\"stale_threshold_minutes\": 1}' > .des/config.json\n"}),
					scripted("run", "Bash", map[string]any{"command": command, "description": "tidy"}),
				), realOpts{via: via, prompt: "tidy up", noSandbox: true})
				if got := readFileString(t, root, ".des/config.json"); got != good {
					t.Errorf(".des/config.json after the call: %q; want it restored to %q", got, good)
				}
				if told := s.laterText(toolID("run")); !strings.Contains(told, "DES-INTEGRITY") {
					t.Errorf("after the Bash call the model was shown %q; want DES-INTEGRITY", told)
				}
				want := "PostToolUse"
				if failing {
					want = "PostToolUseFailure"
				}
				if len(s.eventsOf(want)) == 0 {
					t.Errorf("des got no %s event", want)
				}
			})
		}
	}
}

// The subagent tool, as the client offers it: its name in the init message
// (the model is offered "Task"), and the name hooks see ("Agent").
func subagentTool(t *testing.T, s *realSession) string {
	t.Helper()
	for _, name := range s.offered() {
		if name == "Agent" || name == "Task" {
			return name
		}
	}
	t.Fatalf("the client offers no subagent tool: %v", s.offered())
	return ""
}

// Gate 1 on a real subagent call: an incomplete DES prompt is denied with
// des's reasons; a complete one starts the step, the subagent's writes go
// through the write guard, and its honest stop passes Gate 2.
func TestRealClientGate1AndHonestSubagent(t *testing.T) {
	t.Parallel()
	c := realClient(t)
	for _, via := range []string{viaSDK, viaSettings} {
		t.Run(via, func(t *testing.T) {
			root, _, _ := gate2ProjectUnstarted(t)
			probe := runReal(t, c, t.TempDir(), conversation("hello"), realOpts{via: viaSDK, prompt: "hello", noSandbox: true})
			tool := subagentTool(t, probe)
			full := renderPrompt(t, "execute-step")
			incomplete := strings.Replace(full, "<!-- DES-SECTION: QUALITY_GATES -->", "", 1)
			stepPath := filepath.Join(root, e2eStep)
			s := runReal(t, c, root, scripts(
				conversation("DES-SECTION: TIMEOUT_INSTRUCTION",
					scripted("read", "Read", map[string]any{"file_path": stepPath}),
					deferred(func() modelserver.Reply {
						return scripted("prepare-start", "Write", map[string]any{"file_path": stepPath, "content": stepWithPhase(t, root, 0, map[string]any{"status": "IN_PROGRESS", "started_at": "2026-11-29T00:00:00Z"})})
					}),
					deferred(func() modelserver.Reply {
						return scripted("prepare-end", "Write", map[string]any{"file_path": stepPath, "content": stepWithPhase(t, root, 0, map[string]any{"status": "EXECUTED", "outcome": "PASS", "outcome_details": "ok", "ended_at": "2026-11-29T00:01:00Z"})})
					}),
				),
				conversation("run step 01-01",
					scripted("incomplete", tool, map[string]any{"description": "step 01-01", "prompt": incomplete, "subagent_type": "general-purpose"}),
					scripted("complete", tool, map[string]any{"description": "step 01-01", "prompt": full, "subagent_type": "general-purpose", "run_in_background": false}),
				),
			), realOpts{via: via, prompt: "run step 01-01", noSandbox: true})
			if told := s.toldModel(t, toolID("incomplete")); !strings.Contains(told, "[DES-SECTION-MISSING]") || !strings.Contains(told, "QUALITY_GATES") {
				t.Errorf("incomplete prompt: the model was told %q; want DES-SECTION-MISSING for QUALITY_GATES", told)
			}
			for _, id := range []string{"prepare-start", "prepare-end"} {
				if told := s.toldModel(t, toolID(id)); strings.Contains(told, "DES-") {
					t.Errorf("honest write %s: the model was told %q", id, told)
				}
			}
			if stops := s.eventsOf("SubagentStop"); len(stops) != 1 {
				t.Errorf("SubagentStop events: %d; want 1", len(stops))
			}
			for _, e := range s.eventsOf("PreToolUse") {
				if e["tool_use_id"] == toolID("complete") && e["tool_name"] != "Agent" && e["tool_name"] != "Task" {
					t.Errorf("the subagent call reached des as %v", e["tool_name"])
				}
			}
			doc := readStep(t, root)
			if st := doc["state"].(map[string]any)["status"]; st != "IN_PROGRESS" {
				t.Errorf("task status %v; want IN_PROGRESS (started by Gate 1, not failed by Gate 2)", st)
			}
			if p := stepPhases(doc)[0].(map[string]any); p["status"] != "EXECUTED" {
				t.Errorf("PREPARE: %v; want EXECUTED", p)
			}
		})
	}
}

// gate2ProjectUnstarted is gate2Project's step, not yet started.
func gate2ProjectUnstarted(t *testing.T) (root, transcript string, env []string) {
	t.Helper()
	root = t.TempDir()
	writeFile(t, root, e2eStep, unstartedStep())
	return root, "", nil
}

// deferred builds a reply when the request comes, from what is on disk
// then.
func deferred(f func() modelserver.Reply) modelserver.Reply {
	return modelserver.Reply{Later: f}
}

// stepWithPhase is the step file as it is now with phase i's fields set.
func stepWithPhase(t *testing.T, root string, i int, set map[string]any) string {
	t.Helper()
	doc := readStep(t, root)
	p := stepPhases(doc)[i].(map[string]any)
	for k, v := range set {
		p[k] = v
	}
	b, _ := json.MarshalIndent(doc, "", "  ")
	return string(b) + "\n"
}

// A subagent the client runs in the background (its default) finishes its
// step around the write guard. PostToolUse for the call comes at the
// launch, so des tells the orchestrator there where Gate 2's verdict will
// come; Gate 2 fails the step at SubagentStop, and the orchestrator reads
// the failure with the subagent's task notification.
func TestRealClientBackgroundSubagentVerdict(t *testing.T) {
	t.Parallel()
	c := realClient(t)
	for _, via := range []string{viaSDK, viaSettings} {
		t.Run(via, func(t *testing.T) {
			root, _, _ := gate2ProjectUnstarted(t)
			full := renderPrompt(t, "execute-step")
			s := runReal(t, c, root, scripts(
				conversation("DES-SECTION: TIMEOUT_INSTRUCTION",
					deferred(func() modelserver.Reply {
						// Another process finishes the step while the
						// subagent works: no tool call des could judge.
						completeAroundTheGuard(t, root)
						return modelserver.Say("All 14 phases done, tests green.")
					}),
				),
				conversation("run step 01-01",
					scripted("launch", "Task", map[string]any{"description": "step 01-01", "prompt": full, "subagent_type": "general-purpose"}),
				),
			), realOpts{via: via, prompt: "run step 01-01", noSandbox: true})
			if told := s.laterText(toolID("launch")); !strings.Contains(told, "runs in the background") {
				t.Errorf("at the launch the orchestrator was shown %q; want where Gate 2's verdict will come", told)
			}
			var notified bool
			for _, e := range s.eventsOf("UserPromptSubmit") {
				notified = notified || strings.Contains(e["prompt"].(string), "<task-notification>")
			}
			if !notified {
				t.Skip("this client ran the subagent in the foreground; the background path is not exercised")
			}
			if told := s.laterText(toolID("launch")); !strings.Contains(told, "DES Gate 2 failed the subagent's work on "+e2eStep) || !strings.Contains(told, "DES-PHASE-JUMP") {
				t.Errorf("after the task notification the orchestrator was shown %q; want Gate 2's failure", told)
			}
			if st := readStepState(t, root)["status"]; st != "FAILED" {
				t.Errorf("task status %v; want FAILED (Gate 2, record mode)", st)
			}
		})
	}
}

// onFailure "block": a des runner whose callback throws, or never answers,
// blocks the call instead of letting it through; the command never runs.
func TestRealClientOnFailureBlocks(t *testing.T) {
	t.Parallel()
	c := realClient(t)
	for _, mode := range []string{"throw", "hang"} {
		t.Run(mode, func(t *testing.T) {
			root := t.TempDir()
			s := runReal(t, c, root, conversation("make a file",
				scripted("touch", "Bash", map[string]any{"command": "touch made.txt", "description": "touch"}),
			), realOpts{via: viaSDK, prompt: "make a file", failure: &realFailure{Event: "PreToolUse", Mode: mode}, hookTimeout: 3})
			if _, err := os.Stat(filepath.Join(root, "made.txt")); !os.IsNotExist(err) {
				t.Errorf("made.txt: %v; want the call blocked, the command never run", err)
			}
			told := s.toldModel(t, toolID("touch"))
			t.Logf("the model was told: %s", told)
			if !strings.Contains(told, "PreToolUse") {
				t.Errorf("the model was told %q; want the hook failure named", told)
			}
		})
	}
}

// The same for des's command hooks: a hook binary that is gone, one that
// fails, or one that runs past its timeout blocks the call (onFailure
// "block" on PreToolUse).
func TestRealClientOnFailureBlocksCommandHook(t *testing.T) {
	t.Parallel()
	c := realClient(t)
	for name, command := range map[string]string{"missing": "/nonexistent/des-hook", "fails": "exit 1", "times-out": "sleep 30"} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			timeout := 0
			if name == "times-out" {
				timeout = 2
			}
			s := runReal(t, c, root, conversation("make a file",
				scripted("touch", "Bash", map[string]any{"command": "touch made.txt", "description": "touch"}),
			), realOpts{via: viaSettings, prompt: "make a file", hookCommand: command, hookTimeout: timeout, noSandbox: true})
			if _, err := os.Stat(filepath.Join(root, "made.txt")); !os.IsNotExist(err) {
				t.Errorf("made.txt: %v; want the call blocked, the command never run", err)
			}
			t.Logf("the model was told: %s", s.toldModel(t, toolID("touch")))
		})
	}
}

// The client takes every key des-hook settings writes: its debug log has
// no error or warning about the settings file. A bad value is what such a
// line looks like (so the check can fail).
func TestRealClientAcceptsDesSettings(t *testing.T) {
	t.Parallel()
	c := realClient(t)
	settingsProblems := func(debug string) []string {
		var out []string
		for _, l := range strings.Split(debug, "\n") {
			if (strings.Contains(l, "[ERROR]") || strings.Contains(l, "[WARN]")) && strings.Contains(l, "settings") {
				out = append(out, l)
			}
		}
		return out
	}
	root := t.TempDir()
	s := runReal(t, c, root, conversation("hello"), realOpts{via: viaSettings, prompt: "hello"})
	if p := settingsProblems(s.debug); len(p) > 0 {
		t.Errorf("the client complained about des's settings:\n%s", strings.Join(p, "\n"))
	}
	// The session reached des: doctor says when it started.
	if len(s.eventsOf("SessionStart")) == 0 {
		t.Fatalf("des got no SessionStart event")
	}
	if _, rep, out := doctorRun(t, root, t.TempDir(), t.TempDir()); rep.LastSession == nil || rep.LastSession.SessionID != s.eventsOf("SessionStart")[0]["session_id"] {
		t.Errorf("doctor after a real session:\n%s", out)
	}
	if !strings.Contains(s.debug, filepath.Join(root, ".claude", "settings.json")) {
		t.Errorf("the debug log never names the project's settings file; is it read?")
	}
	bad := runReal(t, c, t.TempDir(), conversation("hello"), realOpts{via: viaSettings, prompt: "hello", settings: map[string]any{"sandbox": map[string]any{"enabled": "yes"}}})
	if p := settingsProblems(bad.debug); len(p) == 0 {
		t.Errorf("a bad sandbox.enabled left no error in the debug log; the check above proves nothing")
	}
}

// A Write to a path des's permission rules deny (Edit(...) in
// permissions.deny) is refused by the client itself, before any hook:
// the file is unchanged and the model gets the client's message, and des
// sees no event for it (so it writes no audit line; the README says so).
func TestRealClientPermissionRuleComesFirst(t *testing.T) {
	t.Parallel()
	c := realClient(t)
	root := t.TempDir()
	writeFile(t, root, ".des/config.json", `{}`)
	s := runReal(t, c, root, conversation("change config",
		scripted("w", "Write", map[string]any{"file_path": filepath.Join(root, ".des/config.json"), "content": `{"stale_threshold_minutes": 1}`}),
	), realOpts{via: viaSettings, prompt: "change config", noSandbox: true})
	if got := readFileString(t, root, ".des/config.json"); got != "{}" {
		t.Errorf(".des/config.json: %q; want it unchanged", got)
	}
	if told := s.toldModel(t, toolID("w")); !strings.Contains(told, "denied by your permission settings") {
		t.Errorf("the model was told %q; want the client's permission-rule message", told)
	}
	for _, e := range s.eventsOf("PreToolUse") {
		if e["tool_use_id"] == toolID("w") {
			t.Errorf("des got PreToolUse for a call the permission rules refused: the rules no longer come first")
		}
	}
}

// Gate 2 in block mode (gate2_on_failure "block") on a real subagent: its
// stop is refused once with des's reason, the subagent gets that reason as
// its next instructions and works on, and the step is not marked FAILED.
func TestRealClientGate2BlockSendsSubagentBack(t *testing.T) {
	t.Parallel()
	c := realClient(t)
	root, _, _ := gate2ProjectUnstarted(t)
	writeFile(t, root, ".des/config.json", `{"gate2_on_failure": "block"}`)
	full := renderPrompt(t, "execute-step")
	s := runReal(t, c, root, scripts(
		conversation("DES-SECTION: TIMEOUT_INSTRUCTION",
			deferred(func() modelserver.Reply {
				completeAroundTheGuard(t, root)
				return modelserver.Say("All 14 phases done.")
			}),
		),
		conversation("run step 01-01",
			scripted("launch", "Task", map[string]any{"description": "step 01-01", "prompt": full, "subagent_type": "general-purpose", "run_in_background": false}),
		),
	), realOpts{via: viaSettings, prompt: "run step 01-01", noSandbox: true})
	// The stop after the block says so (stop_hook_active). The blocked stop
	// itself may be missing from the record: the recorder runs beside des
	// for every event, and a slow machine can leave its write of an event
	// another hook blocked unfinished; the conversation below shows the
	// block.
	stops := s.eventsOf("SubagentStop")
	var again bool
	for _, e := range stops {
		again = again || e["stop_hook_active"] == true
	}
	if !again {
		var names []string
		for _, e := range s.events {
			names = append(names, fmt.Sprint(e["hook_event_name"]))
		}
		t.Fatalf("no SubagentStop with stop_hook_active among %d recorded; want the stop after the block\nevents: %v\ndebug: %s", len(stops), names, lineWith(s.debug, "SubagentStop"))
	}
	// The subagent's conversation after the block holds des's reason.
	var sentBack bool
	for _, r := range s.model.Requests() {
		if strings.Contains(r.FirstUserText(), "DES-SECTION: TIMEOUT_INSTRUCTION") && r.Turn() >= 1 {
			for _, m := range r.Messages {
				sentBack = sentBack || (m.Role != "assistant" && strings.Contains(m.Text(), "DES-PHASE-JUMP"))
			}
		}
	}
	if !sentBack {
		t.Errorf("the subagent was never shown Gate 2's reason")
	}
}

// A tool input with a key given twice: the client reads it as JavaScript's
// JSON.parse does (the last wins), and des judges the same file the client
// writes, whatever it is sent.
func TestRealClientDuplicateKeysJudgedAsWritten(t *testing.T) {
	t.Parallel()
	c := realClient(t)
	root := t.TempDir()
	writeFile(t, root, ".des/policies/keep.rego", "package keep\n")
	raw := json.RawMessage(`{"file_path": "` + filepath.Join(root, "harmless.txt") + `", "content": "package relax\n", "file_path": "` + filepath.Join(root, ".des/policies/relax.rego") + `"}`)
	s := runReal(t, c, root, conversation("write it",
		scripted("dup", "Write", raw),
	), realOpts{via: viaSDK, prompt: "write it"})
	told := s.toldModel(t, toolID("dup"))
	for _, p := range []string{"harmless.txt", ".des/policies/relax.rego"} {
		if _, err := os.Stat(filepath.Join(root, p)); !os.IsNotExist(err) {
			t.Errorf("%s was written (%v); the model was told %q", p, err, told)
		}
	}
	if !strings.Contains(told, "[DES-PROTECTED-PATH]") {
		t.Errorf("the model was told %q; want des's deny of the file the client would write", told)
	}
	for _, e := range s.eventsOf("PreToolUse") {
		if e["tool_use_id"] == toolID("dup") {
			b, _ := json.Marshal(e["tool_input"])
			t.Logf("des was sent tool_input %s", b)
		}
	}
}
