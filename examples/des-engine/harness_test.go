package main

// The end-to-end harness shared by the suites (phases, task graph, attack,
// recovery, the gates): one builder per hook event kind, one project
// builder, and the file and git helpers. A suite's own helpers (agentCall,
// newProject, atkProject, tgProject, ...) are thin wrappers over these that
// fill in the fields their suite's scenarios use.
//
// Events are plain maps, as Claude Code sends them: every builder sets
// session_id ("s1" unless evSession says otherwise), cwd and
// hook_event_name, then its kind's fields, then the options in order (a
// later option wins). No field is set that an option did not ask for: no
// tool_use_id, transcript_path or permission_mode by default.

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/internal/testenv"
)

// ---- events ----

// evOpt sets fields of an event.
type evOpt func(ev map[string]any)

// evSession sets session_id.
func evSession(id string) evOpt { return func(ev map[string]any) { ev["session_id"] = id } }

// evToolUseID sets tool_use_id.
func evToolUseID(id string) evOpt { return func(ev map[string]any) { ev["tool_use_id"] = id } }

// evTranscript sets transcript_path (the session's transcript).
func evTranscript(path string) evOpt {
	return func(ev map[string]any) { ev["transcript_path"] = path }
}

// evMode sets permission_mode.
func evMode(mode string) evOpt { return func(ev map[string]any) { ev["permission_mode"] = mode } }

// evAgent makes the event one of a subagent: agent_id and agent_type.
func evAgent(id, typ string) evOpt {
	return func(ev map[string]any) { ev["agent_id"], ev["agent_type"] = id, typ }
}

// evCwd sets cwd (when the call runs elsewhere than the builder's cwd).
func evCwd(cwd string) evOpt { return func(ev map[string]any) { ev["cwd"] = cwd } }

// evResponse sets tool_response; nil leaves it out.
func evResponse(response any) evOpt {
	return func(ev map[string]any) {
		if response != nil {
			ev["tool_response"] = response
		}
	}
}

// evInput adds fields to tool_input.
func evInput(fields map[string]any) evOpt {
	return func(ev map[string]any) {
		in, _ := ev["tool_input"].(map[string]any)
		if in == nil {
			in = map[string]any{}
			ev["tool_input"] = in
		}
		maps.Copy(in, fields)
	}
}

// evFields sets any other fields.
func evFields(fields map[string]any) evOpt {
	return func(ev map[string]any) { maps.Copy(ev, fields) }
}

// hookEvent is an event of any kind: session_id, cwd, hook_event_name, then
// the options.
func hookEvent(event, cwd string, opts ...evOpt) map[string]any {
	ev := map[string]any{"session_id": "s1", "cwd": cwd, "hook_event_name": event}
	for _, o := range opts {
		o(ev)
	}
	return ev
}

// toolEvent is a PreToolUse, PostToolUse or PostToolUseFailure event of
// tool with input (kept, not copied).
func toolEvent(event, tool, cwd string, input map[string]any, opts ...evOpt) map[string]any {
	return hookEvent(event, cwd, append([]evOpt{func(ev map[string]any) { ev["tool_name"], ev["tool_input"] = tool, input }}, opts...)...)
}

// afterEv is the event that follows pre (a PostToolUse or
// PostToolUseFailure of the same call): a copy of pre with event as its
// hook_event_name, then the options.
func afterEv(pre map[string]any, event string, opts ...evOpt) map[string]any {
	ev := maps.Clone(pre)
	ev["hook_event_name"] = event
	for _, o := range opts {
		o(ev)
	}
	return ev
}

// batchEv is the PostToolBatch Claude Code sends once the batch of the
// calls pres has resolved, each with its response (a string, as Claude
// Code gives it: "Permission to use Bash with command ... has been
// denied." for a declined call): the fields common to every event, as
// the first call's, and tool_calls.
func batchEv(responses []string, pres ...map[string]any) map[string]any {
	ev := map[string]any{"hook_event_name": "PostToolBatch"}
	for _, k := range []string{"session_id", "transcript_path", "cwd", "permission_mode", "prompt_id", "agent_id", "agent_type"} {
		if v, ok := pres[0][k]; ok {
			ev[k] = v
		}
	}
	var calls []any
	for i, pre := range pres {
		calls = append(calls, map[string]any{"tool_name": pre["tool_name"], "tool_input": pre["tool_input"], "tool_use_id": pre["tool_use_id"], "tool_response": responses[i]})
	}
	ev["tool_calls"] = calls
	return ev
}

// writtenEv is the PostToolUse that follows pre, a Write or Edit of path
// that landed: Claude Code's "update" response.
func writtenEv(pre map[string]any, path any) map[string]any {
	return afterEv(pre, "PostToolUse", evResponse(map[string]any{"type": "update", "filePath": path}))
}

// bashEv is an event of the Bash tool running command.
func bashEv(event, cwd, command string, opts ...evOpt) map[string]any {
	return toolEvent(event, "Bash", cwd, map[string]any{"command": command}, opts...)
}

// fileEv is an event of a file tool (Write, Edit, MultiEdit) on path, an
// absolute path. input's file_path is set to path (input is kept, not
// copied); a nil input is the tool's smallest: Write "{}" (valid JSON, so
// a guarded document is judged on its path, not its content), Edit and
// MultiEdit "a" to "b".
func fileEv(event, tool, cwd, path string, input map[string]any, opts ...evOpt) map[string]any {
	if input == nil {
		switch input = map[string]any{}; tool {
		case "Write":
			input["content"] = "{}"
		case "Edit":
			input["old_string"], input["new_string"] = "a", "b"
		case "MultiEdit":
			input["edits"] = []any{map[string]any{"old_string": "a", "new_string": "b"}}
		}
	}
	input["file_path"] = path
	return toolEvent(event, tool, cwd, input, opts...)
}

// notebookEv is an event of the NotebookEdit tool on path; a nil input
// replaces cell c1 with print(1).
func notebookEv(event, cwd, path string, input map[string]any, opts ...evOpt) map[string]any {
	if input == nil {
		input = map[string]any{"new_source": "print(1)", "cell_id": "c1", "edit_mode": "replace"}
	}
	input["notebook_path"] = path
	return toolEvent(event, "NotebookEdit", cwd, input, opts...)
}

// agentEv is an event of the Agent or Task tool delegating prompt to
// subagent.
func agentEv(event, tool, cwd, subagent, description, prompt string, opts ...evOpt) map[string]any {
	return toolEvent(event, tool, cwd, map[string]any{"description": description, "prompt": prompt, "subagent_type": subagent}, opts...)
}

// skillEv is an event of the Skill tool.
func skillEv(event, cwd, skill, args string, opts ...evOpt) map[string]any {
	return toolEvent(event, "Skill", cwd, map[string]any{"skill": skill, "args": args}, opts...)
}

// mcpEv is an event of the MCP tool mcp__server__tool.
func mcpEv(event, cwd, server, tool string, input map[string]any, opts ...evOpt) map[string]any {
	return toolEvent(event, "mcp__"+server+"__"+tool, cwd, input, opts...)
}

// subagentStartEv is the SubagentStart of agent id of type typ.
func subagentStartEv(cwd, id, typ string, opts ...evOpt) map[string]any {
	return hookEvent("SubagentStart", cwd, append([]evOpt{evAgent(id, typ)}, opts...)...)
}

// subagentStopEv is the SubagentStop of agent id of type typ, whose
// transcript is at transcript, stop_hook_active false; last is its
// last_assistant_message ("" leaves it out).
func subagentStopEv(cwd, id, typ, transcript, last string, opts ...evOpt) map[string]any {
	return hookEvent("SubagentStop", cwd, append([]evOpt{evAgent(id, typ), func(ev map[string]any) {
		ev["stop_hook_active"], ev["agent_transcript_path"] = false, transcript
		if last != "" {
			ev["last_assistant_message"] = last
		}
	}}, opts...)...)
}

// evStopActive sets a SubagentStop's stop_hook_active.
func evStopActive(active bool) evOpt {
	return func(ev map[string]any) { ev["stop_hook_active"] = active }
}

// userPromptEv is a UserPromptSubmit of prompt.
func userPromptEv(cwd, prompt string, opts ...evOpt) map[string]any {
	return hookEvent("UserPromptSubmit", cwd, append([]evOpt{func(ev map[string]any) { ev["prompt"] = prompt }}, opts...)...)
}

// sessionStartEv is a SessionStart from source (startup, resume, clear,
// compact).
func sessionStartEv(cwd, source string, opts ...evOpt) map[string]any {
	return hookEvent("SessionStart", cwd, append([]evOpt{func(ev map[string]any) { ev["source"] = source }}, opts...)...)
}

// ---- projects ----

// projSpec is what newTestProject makes; projOpt sets part of it.
type projSpec struct {
	git    bool
	branch string
	files  []string // path/content pairs, written in order
}

type projOpt func(t testing.TB, s *projSpec)

// projGit makes the project a git repository (gitInit: branch initial
// unless "", des's identity) with every file of the project in its first
// commit, "init".
func projGit(initial string) projOpt {
	return func(t testing.TB, s *projSpec) { s.git, s.branch = true, initial }
}

// projFiles adds path/content pairs.
func projFiles(pairs ...string) projOpt {
	return func(t testing.TB, s *projSpec) {
		if len(pairs)%2 != 0 {
			t.Fatalf("files must be path/content pairs: %q", pairs)
		}
		s.files = append(s.files, pairs...)
	}
}

// projConfig is des's settings, .des/config.json (a string is written as
// is, anything else as indented JSON).
func projConfig(cfg any) projOpt { return projJSON(".des/config.json", cfg) }

// projSettings is Claude Code's project settings, .claude/settings.json.
func projSettings(settings any) projOpt { return projJSON(".claude/settings.json", settings) }

// projStep is a step file at rel.
func projStep(rel, content string) projOpt { return projFiles(rel, content) }

// projState is the workflow state at .isdlc/state.json.
func projState(state any) projOpt { return projJSON(".isdlc/state.json", state) }

// projPlan is the task plan planV1 at planPath.
func projPlan() projOpt { return projFiles(planPath, planV1) }

// projGraph is a task graph at rel.
func projGraph(rel string, graph any) projOpt { return projJSON(rel, graph) }

// projJSON is a JSON document at rel, as marshalState writes it.
func projJSON(rel string, v any) projOpt {
	return func(t testing.TB, s *projSpec) { s.files = append(s.files, rel, marshalState(t, v)) }
}

// newTestProject is a project at a new directory (symbolic links
// resolved) with the options' files and, with projGit, a git repository.
func newTestProject(t testing.TB, opts ...projOpt) string {
	t.Helper()
	var s projSpec
	for _, o := range opts {
		o(t, &s)
	}
	if s.git {
		if _, err := exec.LookPath("git"); err != nil {
			t.Skip("git is not installed")
		}
	}
	root := tempRoot(t)
	if s.git {
		gitFirstCommit(t, root, s.branch, s.files...)
	} else {
		writeFiles(t, root, s.files...)
	}
	return root
}

// tempRoot is a new temporary directory, symbolic links resolved.
func tempRoot(t testing.TB) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// marshalState is state as a file's content: a string as is, anything
// else as indented JSON with a final newline.
func marshalState(t testing.TB, state any) string {
	t.Helper()
	if s, ok := state.(string); ok {
		return s
	}
	raw, err := json.MarshalIndent(state, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(raw) + "\n"
}

// ---- files ----

// writeFile writes content at rel under root, creating directories
// (testenv.WriteFile).
func writeFile(t testing.TB, root, rel, content string) {
	t.Helper()
	testenv.WriteFile(t, root, rel, content)
}

// writeFiles writes path/content pairs under root.
func writeFiles(t testing.TB, root string, pairs ...string) {
	t.Helper()
	if len(pairs)%2 != 0 {
		t.Fatalf("files must be path/content pairs: %q", pairs)
	}
	for i := 0; i < len(pairs); i += 2 {
		writeFile(t, root, pairs[i], pairs[i+1])
	}
}

// readFileString is the content of rel under root.
func readFileString(t testing.TB, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return string(b)
}

// ---- git ----

// gitInit makes dir a git repository (on branch initial unless "") with
// des's identity and unsigned commits.
func gitInit(t testing.TB, dir, initial string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"init", "-q"}
	if initial != "" {
		args = append(args, "-b", initial)
	}
	git(t, dir, args...)
	gitIdentity(t, dir)
}

// gitFirstCommit is gitInit, then the path/content pairs written and
// committed as "init" (an empty commit when there are none).
func gitFirstCommit(t testing.TB, dir, initial string, pairs ...string) {
	t.Helper()
	gitInit(t, dir, initial)
	writeFiles(t, dir, pairs...)
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-qm", "init", "--allow-empty")
}

// gitIdentity gives the repository at dir des's identity and unsigned
// commits.
func gitIdentity(t testing.TB, dir string) {
	t.Helper()
	git(t, dir, "config", "user.email", "des@example.com")
	git(t, dir, "config", "user.name", "des")
	git(t, dir, "config", "commit.gpgsign", "false")
}

// gitRunEnv runs git in dir with extra environment variables, as a
// committer (or an agent's Bash) would set them; its output and status are
// returned, and only a git that could not run is fatal.
func gitRunEnv(t testing.TB, dir string, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(cleanEnviron(), env...)
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// gitRun is gitRunEnv without extra variables.
func gitRun(t testing.TB, dir string, args ...string) (string, int) {
	t.Helper()
	return gitRunEnv(t, dir, nil, args...)
}

// git is gitRun that fails the test on a non-zero status.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, code := gitRun(t, dir, args...)
	if code != 0 {
		t.Fatalf("git %s: exit %d\n%s", strings.Join(args, " "), code, out)
	}
	return out
}
