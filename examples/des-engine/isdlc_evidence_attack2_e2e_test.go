package main

// More attacks on iSDLC test iterations from des's evidence (second
// review): state documents that parse differently, the state written by
// other tools, the approval run by the agent, races with des's own write,
// runs attributed to another phase, and the honest writes that must still
// pass.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// stateDeny is the deny reason of a PreToolUse of ev in root, "" when it
// was allowed.
func stateDeny(t *testing.T, root string, ev map[string]any) string {
	t.Helper()
	ev["tool_use_id"] = fmt.Sprintf("toolu_atk2_%06d", callSeq.Add(1))
	return denyReason(t, runHookProcess(t, root, nil, ev))
}

// stateText is the state file of root.
func stateText(t *testing.T, root string) string {
	t.Helper()
	return readFileString(t, root, ".isdlc/state.json")
}

// movedText is the project's state moved on to 16-quality-loop, as text.
func movedText(t *testing.T, root string) string {
	t.Helper()
	var d doc
	if err := json.Unmarshal([]byte(stateText(t, root)), &d); err != nil {
		t.Fatal(err)
	}
	set(d, "active_workflow.current_phase", "16-quality-loop")
	set(d, "active_workflow.current_phase_index", 6)
	set(d, "current_phase", "16-quality-loop")
	return marshalState(t, d)
}

// A state write judged as iSDLC reads it (JSON.parse: the last of
// duplicate keys, escapes decoded): a move past 06-implementation however
// the document spells it is DES-GATE-BLOCKED; a document JSON.parse would
// refuse (a byte order mark, a comment, a trailing comma) is not a state;
// an index past the end of the phases, however large, leaves every phase
// behind (regression: 1e308 was no integer to the progress rules, so a
// write setting it passed).
func TestE2EISDLCStateSpelledOtherwise(t *testing.T) {
	t.Parallel()
	root := attackProject(t)
	base := stateText(t, root)
	moved := movedText(t, root)
	const blocked = `moves the workflow past phase "06-implementation", but des has not seen its tests pass`
	cur := `"current_phase": "06-implementation",`
	for _, c := range []struct{ name, content, want string }{
		{"duplicate key, the last moves", strings.ReplaceAll(base, cur, cur+` "current_phase": "16-quality-loop",`), blocked},
		{"escaped phase", strings.ReplaceAll(moved, `"16-quality-loop"`, `"16-quality-lo\u006fp"`), blocked},
		{"phase with spaces", strings.ReplaceAll(moved, `"16-quality-loop"`, `" 16-quality-loop "`), blocked},
		{"phase in capitals", strings.ReplaceAll(moved, `"16-quality-loop"`, `"16-QUALITY-LOOP"`), blocked},
		{"index 6.0", strings.Replace(base, `"current_phase_index": 5`, `"current_phase_index": 6.0`, 1), blocked},
		{"index 1e20", strings.Replace(base, `"current_phase_index": 5`, `"current_phase_index": 1e20`, 1), blocked},
		{"index 1e308", strings.Replace(base, `"current_phase_index": 5`, `"current_phase_index": 1e308`, 1), blocked},
		{"index 1e400", strings.Replace(base, `"current_phase_index": 5`, `"current_phase_index": 1e400`, 1), blocked},
		{"index as a string", strings.Replace(base, `"current_phase_index": 5`, `"current_phase_index": "6"`, 1), "DES-STATE-INVALID"},
		{"claim under an escaped key", strings.Replace(base, `"06-implementation": {`, `"06-implement\u0061tion": {"iteration_requirements": {"test_iteration": {"completed": true, "current_iteration": 1, "last_test_result": "passed"}}}, "x": {`, 1), "DES-EVIDENCE-MISMATCH"},
		{"byte order mark", "\ufeff" + base, "DES-STATE-INVALID"},
		{"comment", "// moved on\n" + moved, "DES-STATE-INVALID"},
		{"trailing comma", strings.Replace(moved, "\n}", ",\n}", 1), "DES-STATE-INVALID"},
	} {
		t.Run(c.name, func(t *testing.T) {
			reason := stateDeny(t, root, writeToolEvent(root, "Write", ".isdlc/state.json", map[string]any{"content": c.content}))
			if !strings.Contains(reason, c.want) {
				t.Errorf("deny = %q, want %q in it", reason, c.want)
			}
		})
	}
	// The first of duplicate keys says 16, the last (what JSON.parse and
	// des read) 06: the workflow stays where it is.
	if reason := stateDeny(t, root, writeToolEvent(root, "Write", ".isdlc/state.json", map[string]any{"content": strings.ReplaceAll(base, cur, `"current_phase": "16-quality-loop", `+cur)})); strings.Contains(reason, "DES-GATE-BLOCKED") {
		t.Errorf("a write whose last current_phase keeps the phase: %s", reason)
	}
}

// The state moved on by tools other than Write and Edit: MultiEdit is
// judged as Edit; Bash's writes of the state (sed, cp, mv, a hard or
// symbolic link, .des/state.json, which would take precedence) are
// refused; an MCP tool's or NotebookEdit's write is undone after the call.
func TestE2EISDLCStateThroughOtherTools(t *testing.T) {
	t.Parallel()
	root := attackProject(t)
	agentBash(t, root, root, "true") // a baseline for the effect check
	base := stateText(t, root)
	moved := movedText(t, root)
	abs := filepath.Join(root, ".isdlc/state.json")
	multi := writeToolEvent(root, "MultiEdit", ".isdlc/state.json", map[string]any{"edits": []any{
		map[string]any{"old_string": `"current_phase": "06-implementation"`, "new_string": `"current_phase": "16-quality-loop"`, "replace_all": true},
		map[string]any{"old_string": `"current_phase_index": 5`, "new_string": `"current_phase_index": 6`},
	}})
	if reason := stateDeny(t, root, multi); !strings.Contains(reason, "[DES-GATE-BLOCKED]") {
		t.Errorf("MultiEdit: %q", reason)
	}
	writeFile(t, root, "prepared.json", moved)
	for _, cmd := range []string{
		`sed -i 's/"current_phase": "06-implementation"/"current_phase": "16-quality-loop"/g' .isdlc/state.json`,
		`cp prepared.json .isdlc/state.json`,
		`mv prepared.json .isdlc/state.json`,
		`ln -f prepared.json .isdlc/state.json`,
		`ln -sf ../prepared.json .isdlc/state.json`,
		`mkdir -p .des && cp prepared.json .des/state.json`,
		`python3 -c 'import shutil; shutil.copy("prepared.json", ".isdlc/state.json")'`,
	} {
		if a := agentBash(t, root, root, cmd); !strings.Contains(a.deny, "[DES-STATE-BASH-WRITE]") {
			t.Errorf("%s: deny %q, post %q", cmd, a.deny, a.reason)
		}
	}
	for i, c := range []struct {
		tool string
		in   map[string]any
	}{
		{"mcp__filesystem__write_file", map[string]any{"path": abs, "content": moved}},
		{"NotebookEdit", map[string]any{"notebook_path": abs, "new_source": moved, "cell_id": "c1"}},
	} {
		ev := map[string]any{"session_id": "s1", "cwd": root, "hook_event_name": "PreToolUse", "tool_name": c.tool, "tool_use_id": fmt.Sprintf("toolu_atk2_tool%d", i), "tool_input": c.in, "tool_response": map[string]any{}}
		runHookProcess(t, root, nil, ev)
		writeFile(t, root, ".isdlc/state.json", moved) // what the tool did
		ev["hook_event_name"] = "PostToolUse"
		if post := runHookProcess(t, root, nil, ev); !strings.Contains(post.stdout, "DES-INTEGRITY") {
			t.Errorf("%s: after the call %+v", c.tool, post)
		}
		if got := stateText(t, root); got != base {
			t.Errorf("%s's write of the state was not undone:\n%s", c.tool, got)
		}
	}
	if _, err := os.Lstat(filepath.Join(root, ".des/state.json")); err == nil {
		t.Error(".des/state.json was created")
	}
	check(t, root, nil, advanceCall(root, "Agent"), want{deny: []string{"DES-GATE-BLOCKED"}, has: []string{"des has not seen its tests pass"}})
}

// The agent approves its own escalation from inside a call with Claude
// Code's variables unset, or from a job it leaves behind in a session of
// its own: refused both ways (the call is in flight), and the gate stays
// shut.
func TestE2EISDLCEscalationApprovedByTheAgentRefused(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not installed: no real test runner to run")
	}
	root := attackProject(t)
	for i := 0; i < 3; i++ {
		testRunBashNote(t, root, nil, "cd shop && go test ./...", nil)
	}
	unapproved := "nobody approved the escalation"
	if reason := stateDeny(t, root, advanceCall(root, "Agent")); !strings.Contains(reason, unapproved) {
		t.Fatalf("not escalated: %s", reason)
	}
	a := agentBash(t, root, root, "env -u CLAUDECODE -u CLAUDE_CODE_ENTRYPOINT -u CLAUDE_CODE_CHILD_SESSION "+hookBin+" escalations approve --reason x 2>&1; echo exit $?")
	if a.deny == "" && (!strings.Contains(a.out, "refused inside an agent's tool call") || !strings.Contains(a.out, "exit 2")) {
		t.Errorf("approve with Claude Code's variables unset: %q", a.out)
	}
	writeFile(t, root, "approve.out", "")
	if a := agentBash(t, root, root, "setsid nohup sh -c 'sleep 1; "+hookBin+" escalations approve --reason y > approve.out 2>&1; echo exit $? >> approve.out' >/dev/null 2>&1 &"); a.deny == "" {
		var got string
		for range 200 {
			if got = readFileString(t, root, "approve.out"); strings.Contains(got, "exit ") {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !strings.Contains(got, "refused inside an agent's tool call") || !strings.Contains(got, "exit 2") {
			t.Errorf("approve from a job left in a session of its own: %q", got)
		}
	}
	if reason := stateDeny(t, root, advanceCall(root, "Agent")); !strings.Contains(reason, unapproved) {
		t.Errorf("the gate after the agent's approvals: %s", reason)
	}
}

// A Write of the whole state read before des wrote its test iterations:
// with an older test_iteration it is DES-EVIDENCE-MISMATCH, and the
// message's fix (re-read, write again) passes; without one (the copy was
// read before the first run) the write lands, and des writes its values
// back after it (they were lost until the next test run).
func TestE2EISDLCStaleStateWrite(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not installed: no real test runner to run")
	}
	root := attackProject(t)
	stateNow := func() doc {
		t.Helper()
		var d doc
		if err := json.Unmarshal([]byte(stateText(t, root)), &d); err != nil {
			t.Fatal(err)
		}
		return d
	}
	// write runs a Write through the hook, and when allowed lands it and
	// runs its PostToolUse; it returns the deny and the note after.
	write := func(d doc) (string, string) {
		t.Helper()
		content := marshalState(t, d)
		ev := writeToolEvent(root, "Write", ".isdlc/state.json", map[string]any{"content": content}, evToolUseID(fmt.Sprintf("toolu_atk2_w%06d", callSeq.Add(1))))
		if reason := denyReason(t, runHookProcess(t, root, nil, ev)); reason != "" {
			return reason, ""
		}
		writeFile(t, root, ".isdlc/state.json", content)
		ev = writtenEv(ev, filepath.Join(root, ".isdlc/state.json"))
		r := runHookProcess(t, root, nil, ev)
		if r.code != 0 {
			t.Fatalf("PostToolUse: %+v", r)
		}
		return "", r.stdout
	}
	ti := func(d doc) doc {
		ph, _ := d["phases"].(doc)["06-implementation"].(doc)
		reqs, _ := ph["iteration_requirements"].(doc)
		v, _ := reqs["test_iteration"].(doc)
		return v
	}

	before := stateNow()
	testRunBashNote(t, root, nil, "cd shop && go test ./...", nil)
	first := stateNow()
	testRunBashNote(t, root, nil, "cd shop && go test ./...", nil)

	stale := cloneDoc(t, first)
	set(stale, "phases.06-implementation.notes", "fixing Total")
	reason, _ := write(stale)
	if !strings.Contains(reason, "[DES-EVIDENCE-MISMATCH]") || !strings.Contains(reason, "current_iteration is 1 in this write, but des's evidence says 2") || !strings.Contains(reason, "re-read .isdlc/state.json") {
		t.Fatalf("a write of the state read before des's last write: %q", reason)
	}
	fresh := stateNow() // the fix: re-read, write again
	set(fresh, "phases.06-implementation.notes", "fixing Total")
	if reason, note := write(fresh); reason != "" || strings.TrimSpace(note) != "" {
		t.Fatalf("the re-read write: deny %q, note %q", reason, note)
	}

	older := cloneDoc(t, before) // read before the first run: no test_iteration
	set(older, "phases.06-implementation.notes", "fixing Total")
	reason, note := write(older)
	if reason != "" {
		t.Fatalf("a write without test_iteration: %s", reason)
	}
	if got := ti(stateNow()); got["current_iteration"] != 2.0 || got["last_test_result"] != "failed" {
		t.Errorf("des's test_iteration after a write that left it out: %v", got)
	}
	if !strings.Contains(note, "des wrote it back into .isdlc/state.json") {
		t.Errorf("the note after the write = %q", note)
	}
	if n, _ := stateNow()["phases"].(doc)["06-implementation"].(doc)["notes"].(string); n != "fixing Total" {
		t.Errorf("the write's own change was lost: %q", n)
	}
	if a := agentBash(t, root, root, "ls shop"); strings.Contains(a.reason, "DES-INTEGRITY") {
		t.Errorf("des's write-back undone by the next check: %s", a.reason)
	}
}

// A pass of tests that are not the project's (a module elsewhere on the
// machine, reached with cd, go test -C or go -C) is no pass of the phase.
func TestE2EISDLCTestsRunOutsideTheProject(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not installed: no real test runner to run")
	}
	other := t.TempDir()
	writeFile(t, other, "go.mod", "module example.com/other\n\ngo 1.22\n")
	writeFile(t, other, "ok_test.go", "package other\n\nimport \"testing\"\n\nfunc TestOK(t *testing.T) {}\n")
	for _, cmd := range []string{"cd " + other + " && go test ./...", "go test -C " + other + " ./...", "cd shop && cd " + other + " && go test ./...", "go -C " + other + " test -v ./..."} {
		root := attackProject(t)
		testRunBashNote(t, root, nil, cmd, nil)
		if got := lastRun(t, root); got == "passed" {
			t.Errorf("%s: des took a pass of tests outside the project", cmd)
		}
	}
}

// The orchestrator's own writes during a phase, as iSDLC makes them: the
// test_iteration it initialises for the phase it enters (the peer's
// initial object), the index moved alone, a workflow without started_at, a
// legacy phase key. None is denied once des saw the tests pass.
func TestE2EISDLCHonestOrchestratorWrites(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not installed: no real test runner to run")
	}
	initial := func(started string) doc {
		return doc{"required": true, "completed": false, "current_iteration": 0, "max_iterations": 10,
			"failures_count": 0, "identical_failure_count": 0, "history": []any{}, "started_at": started}
	}
	for _, c := range []struct {
		name  string
		setup func(st doc)
		move  func(d doc)
		warn  []string
	}{
		{"next phase initialised", nil, func(d doc) {
			set(d, "current_phase", "16-quality-loop")
			set(d, "active_workflow.current_phase", "16-quality-loop")
			set(d, "active_workflow.current_phase_index", 6)
			set(d, "active_workflow.phase_status.06-implementation", "completed")
			set(d, "active_workflow.phase_status.16-quality-loop", "in_progress")
			set(d, "phases.06-implementation.status", "completed")
			set(d, "phases.16-quality-loop", doc{"status": "in_progress", "iteration_requirements": doc{"test_iteration": initial("2026-11-29T11:00:00.000Z")}})
		}, nil},
		{"index alone", nil, func(d doc) { set(d, "active_workflow.current_phase_index", 6) }, []string{"DES-STATE-V9"}},
		{"no started_at", func(st doc) { delete(st["active_workflow"].(doc), "started_at") }, func(d doc) {
			set(d, "current_phase", "16-quality-loop")
			set(d, "active_workflow.current_phase", "16-quality-loop")
			set(d, "active_workflow.current_phase_index", 6)
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := attackProject(t)
			// The orchestrator initialises the phase's test_iteration before
			// any run.
			var st doc
			if err := json.Unmarshal([]byte(stateText(t, root)), &st); err != nil {
				t.Fatal(err)
			}
			if c.setup != nil {
				c.setup(st)
				writeFile(t, root, ".isdlc/state.json", marshalState(t, st))
			}
			set(st, "phases.06-implementation.iteration_requirements.test_iteration", initial("2026-11-29T09:10:00.000Z"))
			check(t, root, nil, writeToolEvent(root, "Write", ".isdlc/state.json", map[string]any{"content": marshalState(t, st)}), allow)
			writeFile(t, root, ".isdlc/state.json", marshalState(t, st))
			writeFile(t, root, "shop/cart.go", "package shop\n\nfunc Total(a, b int) int { return a + b }\n")
			if _, code, note := testRunBashNote(t, root, nil, "cd shop && go test ./...", nil); code != 0 || !strings.Contains(note, "requirement is met") {
				t.Fatalf("passing run: code %d, note %q", code, note)
			}
			var d doc
			if err := json.Unmarshal([]byte(stateText(t, root)), &d); err != nil {
				t.Fatal(err)
			}
			c.move(d)
			check(t, root, nil, writeToolEvent(root, "Write", ".isdlc/state.json", map[string]any{"content": marshalState(t, d)}), want{warn: c.warn})
		})
	}
}

// A new workflow started under an old one's identity (its type and
// started_at) would inherit the old workflow's test runs and pass its
// phases on them: the write that starts it is DES-WORKFLOW-REUSED, and the
// time its recovery gives as started_at is accepted, after which the
// phase needs its own runs. A workflow brought back exactly as des saw it
// (ended by mistake and written back) resumes.
func TestE2EISDLCWorkflowIdentityReused(t *testing.T) {
	t.Parallel()
	root, _ := reuseProject(t, false)
	if out, code, _ := testRunBashNote(t, root, nil, "cd shop && go test ./...", nil); code != 0 {
		t.Fatalf("go test: %s", out)
	}
	writeState := func(d doc, w want) outcome { t.Helper(); return writeStateCall(t, root, d, w) }
	var disk doc
	if err := json.Unmarshal([]byte(readFileString(t, root, ".isdlc/state.json")), &disk); err != nil {
		t.Fatal(err)
	}
	// The workflow ends, by mistake, and is written back as it was: des
	// saw it so, and it resumes.
	ended := cloneDoc(t, disk)
	ended["active_workflow"] = nil
	writeState(ended, allow)
	writeState(disk, allow)

	// Another workflow follows, then ends; a workflow then started with
	// the first one's started_at would inherit its passing run. The first
	// workflow brought back exactly as des saw it resumes.
	other := cloneDoc(t, disk)
	set(other, "active_workflow.started_at", "2026-11-25T09:00:00Z")
	set(other, "active_workflow.description", "checkout flow")
	writeState(other, allow)
	writeState(ended, allow)
	reused := cloneDoc(t, other)
	set(reused, "active_workflow.started_at", "2026-11-20T09:00:00Z")
	o := writeState(reused, denies("DES-WORKFLOW-REUSED").with(
		"this write starts workflow feature@2026-11-20T09:00:00Z, but des already holds records of a workflow of that type and started_at (1, the first from ",
		"active_workflow.started_at set to the time it starts (now: "))
	writeState(disk, allow) // the first workflow, as des saw it
	now := o.deny[strings.Index(o.deny, "(now: ")+len("(now: "):]
	now = now[:strings.Index(now, ")")]
	if _, err := time.Parse(time.RFC3339, now); err != nil {
		t.Fatalf("the recovery's time %q: %v", now, err)
	}
	// The recovery's started_at is accepted; the new workflow has no runs.
	fresh := cloneDoc(t, disk)
	set(fresh, "active_workflow.started_at", now)
	set(fresh, "phases.06-implementation.iteration_requirements", doc{})
	writeState(fresh, allow)
	moved := cloneDoc(t, fresh)
	set(moved, "active_workflow.current_phase", "16-quality-loop")
	set(moved, "active_workflow.current_phase_index", 6)
	set(moved, "current_phase", "16-quality-loop")
	writeState(moved, denies("DES-GATE-BLOCKED").with("des has not seen its tests pass: 0/10"))
}

// The same through git: a branch whose state carries an old workflow's
// started_at with another content, checked out by the agent's command, is
// undone by the check after the call (kept), as a Write of it is refused;
// switching back to a branch whose workflow des saw is taken.
func TestE2EISDLCWorkflowIdentityReusedThroughGit(t *testing.T) {
	t.Parallel()
	root, _ := reuseProject(t, true)
	if out, code, _ := testRunBashNote(t, root, nil, "cd shop && go test ./...", nil); code != 0 {
		t.Fatalf("go test: %s", out)
	}
	var disk doc
	if err := json.Unmarshal([]byte(readFileString(t, root, ".isdlc/state.json")), &disk); err != nil {
		t.Fatal(err)
	}
	// The orchestrator starts a second workflow (a Write des allows).
	second := cloneDoc(t, disk)
	set(second, "active_workflow.started_at", "2026-11-25T09:00:00Z")
	set(second, "active_workflow.description", "checkout flow")
	writeStateCall(t, root, second, allow)
	// The agent's script: a branch whose state is the second workflow under
	// the first one's started_at.
	writeFile(t, root, "reuse.sh", `git checkout -q -b reuse
sed -i 's/2026-11-25T09:00:00Z/2026-11-20T09:00:00Z/' .isdlc/state.json
git -c user.name=a -c user.email=a@example.com commit -q --no-verify -am reuse
`)
	a := agentBash(t, root, root, "sh reuse.sh")
	if a.deny != "" {
		t.Fatalf("the call was denied before it ran: %s", a.deny)
	}
	if got := readFileString(t, root, ".isdlc/state.json"); strings.Contains(got, "2026-11-20T09:00:00Z") {
		t.Fatalf("git brought the first workflow's identity with another content, and it was taken (after the call: %q)", a.reason)
	}
	if !strings.Contains(a.reason, "DES-INTEGRITY") || !strings.Contains(a.reason, ".isdlc/state.json") {
		t.Errorf("the check after the call said %q; want the state restored", a.reason)
	}
	// Back to main, whose state is the first workflow as des saw it.
	if b := agentBash(t, root, root, "git checkout -q -f main"); b.deny != "" || strings.Contains(b.reason, "DES-") {
		t.Fatalf("switching back to main: %+v", b)
	}
	if got, want := readFileString(t, root, ".isdlc/state.json"), git(t, root, "show", "main:.isdlc/state.json"); got != want {
		t.Errorf("the state after switching back to main: %q; want main's %q", got, want)
	}
}

// An honest branch switch away from a workflow whose state des never saw
// written (des was installed during it; only its test runs were seen) and
// back to it is no reuse: des remembers the workflow as it was when it
// recorded a run of it, and as it was on disk when git replaced it.
func TestE2EISDLCBranchSwitchBackToAWorkflowOnlyItsRunsSaw(t *testing.T) {
	t.Parallel()
	root, st := reuseProject(t, true)
	// Another branch, made before des saw anything, holds another workflow.
	git(t, root, "checkout", "-q", "-b", "side")
	side := cloneDoc(t, st)
	set(side, "active_workflow.started_at", "2026-11-27T09:00:00Z")
	writeFile(t, root, ".isdlc/state.json", marshalState(t, side))
	commitAll(t, root, "side")
	git(t, root, "checkout", "-q", "main")
	if out, code, _ := testRunBashNote(t, root, nil, "cd shop && go test ./...", nil); code != 0 {
		t.Fatalf("go test: %s", out)
	}
	for _, br := range []string{"side", "main"} {
		if b := agentBash(t, root, root, "git checkout -q -f "+br); b.deny != "" || strings.Contains(b.reason, "DES-") {
			t.Fatalf("switching to %s: %+v", br, b)
		}
		if got, want := readFileString(t, root, ".isdlc/state.json"), git(t, root, "show", br+":.isdlc/state.json"); got != want {
			t.Errorf("the state after switching to %s: %.200q; want the branch's", br, got)
		}
	}
}

// reuseProject is a project at 06-implementation of a workflow started at
// 2026-11-20T09:00:00Z, with a Go module whose test passes; with git, a
// repository whose first commit holds it (des's own files ignored).
func reuseProject(t *testing.T, withGit bool) (string, doc) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not installed: no real test runner to run")
	}
	st := workflowState(featurePhases, 5) // 06-implementation
	set(st, "active_workflow.started_at", "2026-11-20T09:00:00Z")
	root := newProject(t, st, ".des/config.json", `{"phase_evidence": "des"}`)
	writeFile(t, root, "shop/go.mod", "module example.com/shop\n\ngo 1.22\n")
	writeFile(t, root, "shop/cart_test.go", "package shop\n\nimport \"testing\"\n\nfunc TestTotal(t *testing.T) {}\n")
	if withGit {
		writeFile(t, root, ".gitignore", ".des/runs/\n.des/sessions/\n.des/decisions/\n.des/audit/\n")
		git(t, root, "init", "-q", "-b", "main")
		commitAll(t, root, "start")
	}
	return root, st
}

func commitAll(t *testing.T, root, msg string) {
	t.Helper()
	git(t, root, "add", "-A")
	git(t, root, "-c", "user.name=des", "-c", "user.email=des@example.com", "commit", "-q", "--no-verify", "-m", msg)
}

// writeStateCall is a Write of the state through the hook, judged as w
// wants; an allowed one lands and its PostToolUse confirms it.
func writeStateCall(t *testing.T, root string, d doc, w want) outcome {
	t.Helper()
	content := marshalState(t, d)
	ev := writeToolEvent(root, "Write", ".isdlc/state.json", map[string]any{"content": content})
	o := check(t, root, nil, ev, w)
	if w.deny == nil {
		writeFile(t, root, ".isdlc/state.json", content)
		ev["tool_use_id"] = o.id
		if r := runHookProcess(t, root, nil, writtenEv(ev, filepath.Join(root, ".isdlc/state.json"))); r.code != 0 || r.stdout != "" {
			t.Fatalf("PostToolUse of the state write: %+v", r)
		}
	}
	return o
}
