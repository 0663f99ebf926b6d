package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Every recovery instruction des gives must be one its guards accept. Each
// case below produces a violation through the built hook, reads the
// recovery lines from the hook's own output, and does what they say, step
// by step: writes through the write guard (PreToolUse, the file written,
// PostToolUse), the commands they name in backticks, a subagent started
// again through Gate 1. Each step must be accepted, and at the end the
// violation must be gone.
//
// Codes whose recovery is a person's decision, not something to follow
// mechanically, are marked so in recoveryTable, with the reason.

// follower is one project being put right by following des's recovery.
type follower struct {
	t          *testing.T
	root       string
	transcript string
	env        []string
	writes     int
	lines      []string // the recovery lines of the last output read
}

// recoveryLines collects the "- " lines under "Recovery:" of a hook text.
func recoveryLines(text string) []string {
	_, after, ok := strings.Cut(text, "\nRecovery:")
	if !ok {
		return nil
	}
	var out []string
	for _, l := range strings.Split(after, "\n") {
		switch {
		case strings.HasPrefix(l, "- "):
			out = append(out, strings.TrimPrefix(l, "- "))
		case strings.HasPrefix(l, "  ") && len(out) > 0:
			out[len(out)-1] += "\n" + strings.TrimPrefix(l, "  ")
		}
	}
	return out
}

// read takes the recovery lines of text; there must be some.
func (f *follower) read(text string) {
	f.t.Helper()
	f.lines = recoveryLines(text)
	if len(f.lines) == 0 {
		f.t.Fatalf("no recovery lines in:\n%s", text)
	}
	for i, l := range f.lines {
		for j := range i {
			if f.lines[j] == l {
				f.t.Errorf("recovery line repeated: %q", l)
			}
		}
	}
}

// line returns the recovery line that matches pattern (a regular
// expression), failing the test when none does.
func (f *follower) line(pattern string) string {
	f.t.Helper()
	re := regexp.MustCompile(pattern)
	for _, l := range f.lines {
		if re.MatchString(l) {
			return l
		}
	}
	f.t.Fatalf("no recovery line matches %q in:\n- %s", pattern, strings.Join(f.lines, "\n- "))
	return ""
}

// phasesIn are the phase names a line gives after prefix: "phase A" or
// "phases A, B, C".
func phasesIn(t *testing.T, line, prefix string) []string {
	t.Helper()
	re := regexp.MustCompile(regexp.QuoteMeta(prefix) + ` phases? ([A-Z0-9_]+(?:, [A-Z0-9_]+)*)`)
	m := re.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("line %q names no phases after %q", line, prefix)
	}
	return strings.Split(m[1], ", ")
}

// command runs the des-hook command a line gives in backticks, as the user
// would type it, and returns its output; it must succeed.
func (f *follower) command(line string) string {
	f.t.Helper()
	m := regexp.MustCompile("`des-hook ([^`]+)`").FindStringSubmatch(line)
	if m == nil {
		f.t.Fatalf("line %q names no des-hook command", line)
	}
	r := runBinCLI(f.t, f.root, strings.Fields(m[1])...)
	if r.code != 0 {
		f.t.Fatalf("des-hook %s: exit %d\n%s%s", m[1], r.code, r.stdout, r.stderr)
	}
	return r.stdout
}

// write changes the step file with a Write through the hook: the guard must
// allow it; the file is then written and PostToolUse confirms it.
func (f *follower) write(change func(doc map[string]any)) {
	f.t.Helper()
	if reason := f.tryWrite(change); reason != "" {
		f.t.Fatalf("the write guard refused a write the recovery asked for:\n%s", reason)
	}
}

// tryWrite is write that returns the deny reason instead of failing; the
// file is written only when allowed.
func (f *follower) tryWrite(change func(doc map[string]any)) string {
	f.t.Helper()
	doc := readStep(f.t, f.root)
	change(doc)
	next, _ := json.MarshalIndent(doc, "", "  ")
	f.writes++
	ev := writeToolEvent(f.root, "Write", e2eStep, map[string]any{"content": string(next)}, evToolUseID(fmt.Sprintf("toolu_rw%d", f.writes)))
	if reason := denyReason(f.t, runHookProcess(f.t, f.root, f.env, ev)); reason != "" {
		return reason
	}
	writeFile(f.t, f.root, e2eStep, string(next))
	post := writtenEv(ev, filepath.Join(f.root, e2eStep))
	if r := runHookProcess(f.t, f.root, f.env, post); r.code != 0 || r.stdout != "" {
		f.t.Fatalf("PostToolUse after an allowed write: %+v", r)
	}
	return ""
}

// phase returns the log entry of the named phase in doc.
func logEntry(t *testing.T, doc map[string]any, name string) map[string]any {
	t.Helper()
	for _, p := range stepPhases(doc) {
		if p := p.(map[string]any); p["phase_name"] == name {
			return p
		}
	}
	t.Fatalf("no phase %s in the step", name)
	return nil
}

func withPhase(t *testing.T, name string, fields map[string]any) func(map[string]any) {
	return func(doc map[string]any) {
		for k, v := range fields {
			logEntry(t, doc, name)[k] = v
		}
	}
}

func withTask(status string) func(map[string]any) {
	return func(doc map[string]any) { doc["state"].(map[string]any)["status"] = status }
}

var (
	phaseStarted  = map[string]any{"status": "IN_PROGRESS", "started_at": "2026-11-22T12:00:00Z"}
	phaseExecuted = map[string]any{"status": "EXECUTED", "outcome": "PASS", "outcome_details": "tests green", "ended_at": "2026-11-22T12:05:00Z"}
)

// redo walks each phase honestly, one write per move: IN_PROGRESS, then
// EXECUTED with an outcome.
func (f *follower) redo(names []string) {
	f.t.Helper()
	for _, n := range names {
		f.write(withPhase(f.t, n, phaseStarted))
		f.write(withPhase(f.t, n, phaseExecuted))
	}
}

// redoAll is redo in two writes: every phase named IN_PROGRESS, then every
// one EXECUTED. Each phase still makes only the moves the table allows;
// it keeps the cases that walk all 14 phases quick.
func (f *follower) redoAll(names []string) {
	f.t.Helper()
	for _, fields := range []map[string]any{phaseStarted, phaseExecuted} {
		f.write(func(doc map[string]any) {
			for _, n := range names {
				withPhase(f.t, n, fields)(doc)
			}
		})
	}
}

// aroundTheGuard changes the step file as a script would, unseen by the
// write guard.
func (f *follower) aroundTheGuard(change func(doc map[string]any)) {
	f.t.Helper()
	doc := readStep(f.t, f.root)
	change(doc)
	next, _ := json.MarshalIndent(doc, "", "  ")
	writeFile(f.t, f.root, e2eStep, string(next))
}

// stop runs SubagentStop; active is stop_hook_active.
func (f *follower) stop(active bool) stopOutput {
	f.t.Helper()
	return decodeStop(f.t, runHookProcess(f.t, f.root, f.env, stopEvent(f.root, f.transcript, active)))
}

// resume starts the subagent again on the step through Gate 1, which must
// allow it.
func (f *follower) resume() {
	f.t.Helper()
	if reason := denyReason(f.t, runHookProcess(f.t, f.root, f.env, agentEvent(f.root, "Agent", renderPrompt(f.t, "execute-step")))); reason != "" {
		f.t.Fatalf("Gate 1 refused to start the subagent again:\n%s", reason)
	}
}

func (f *follower) task() string { return readStepState(f.t, f.root)["status"].(string) }

// newFollower is gate2Project's step, started by Gate 1.
func newFollower(t *testing.T, env ...string) *follower {
	root, transcript, hookEnv := gate2Project(t, env...)
	return &follower{t: t, root: root, transcript: transcript, env: hookEnv}
}

// passes asserts that a stop is judged clean (no opinion).
func (f *follower) passes(active bool) {
	f.t.Helper()
	if out := f.stop(active); out != (stopOutput{}) {
		f.t.Fatalf("after following the recovery the stop still fails: %+v", out)
	}
}

// recoveryTable is, for every code with a recovery in the rule packages
// below, the test that follows it, or why following it is a person's
// decision. TestRecoveryTable keeps it complete.
var recoveryTable = []struct{ pkg, code, followedBy, human string }{
	{pkg: "stop", code: "DES-PHASE-ABANDONED", followedBy: "TestRecoveryGate2RecordMode, TestRecoveryGate2BlockMode"},
	{pkg: "stop", code: "DES-PHASE-INVALID-SKIP", followedBy: "TestRecoveryGate2BlockMode"},
	{pkg: "stop", code: "DES-PHASE-JUMP", followedBy: "TestRecoveryGate2RecordMode, TestRecoveryGate2BlockMode"},
	{pkg: "stop", code: "DES-PHASE-NO-OUTCOME", followedBy: "TestRecoveryGate2BlockMode"},
	{pkg: "stop", code: "DES-PREMATURE-COMPLETION", followedBy: "TestRecoveryGate2BlockMode"},
	{pkg: "stop", code: "DES-SILENT-COMPLETION", followedBy: "TestRecoveryGate2RecordMode, TestRecoveryGate2BlockMode"},
	{pkg: "stop", code: "DES-TASK-TRANSITION", followedBy: "TestRecoveryGate2BlockMode"},
	{pkg: "stop", code: "DES-VERIFY-EVIDENCE", followedBy: "TestRecoveryConfigurationSetup"},
	{pkg: "stop", code: "DES-VERIFY-DOCS", followedBy: "TestRecoveryConfigurationSetup"},
	{pkg: "stop", code: "DES-VERIFY-ROLLBACK", followedBy: "TestRecoveryConfigurationSetup"},
	{pkg: "stop", code: "DES-STEPFILE-MISSING", human: "the file comes back from where the user keeps it (git, a backup); the reset after it is the stale --resolve path TestRecoveryGate2RecordMode follows"},
	{pkg: "stop", code: "DES-TRANSCRIPT-TAMPERED", human: "someone must find what changed the transcript; the reset is the stale --resolve path TestRecoveryGate2RecordMode follows"},
	{pkg: "stop", code: "DES-TURN-LIMIT", human: "splitting the step or raising its budget is the user's call; the reset is the tested stale --resolve path"},
	{pkg: "stop", code: "DES-TIMEOUT", human: "an extension of the time budget is the user's call; the reset is the tested stale --resolve path"},
	{pkg: "stop", code: "DES-SCOPE-VIOLATION", human: "a warning: whether a change outside the scope was meant is the user's call (revert it, or widen allowed_file_patterns)"},
	{pkg: "stop", code: "DES-SCOPE-UNCHECKED", human: "a warning: install git, or waive it for a project without git"},
	{pkg: "stepwrite", code: "DES-PHASE-JUMP", followedBy: "TestRecoveryWriteGuard"},
	{pkg: "stepwrite", code: "DES-PHASE-NO-OUTCOME", followedBy: "TestRecoveryWriteGuard"},
	{pkg: "stepwrite", code: "DES-PHASE-INVALID-SKIP", followedBy: "TestRecoveryWriteGuard"},
	{pkg: "stepwrite", code: "DES-TASK-TRANSITION", followedBy: "TestRecoveryWriteGuard"},
	{pkg: "invocation", code: "DES-MARKER-INVALID", followedBy: "TestRecoveryGate1"},
	{pkg: "invocation", code: "DES-STEPFILE-MISSING", followedBy: "TestRecoveryGate1"},
	{pkg: "invocation", code: "DES-STALE-WORK", followedBy: "TestRecoveryStaleWork"},
	{pkg: "invocation", code: "DES-TASK-TERMINAL", human: "a DONE task stays done: choosing the next step or writing a new one is the orchestrator's decision"},
	{pkg: "invocation", code: "DES-TASK-TRANSITION", human: "no status of the built-in task table gives it (TODO, FAILED and PARTIAL may start, DONE is DES-TASK-TERMINAL); only a team's own table can"},
	{pkg: "stepfile", code: "DES-STEPFILE-OBSOLETE", followedBy: "TestRecoveryObsoleteStepFile"},
	{pkg: "stepfile", code: "DES-STEPFILE-OUTSIDE", followedBy: "TestRecoveryGate1"},
	{pkg: "stepfile", code: "DES-STEPFILE-SCHEMA", followedBy: "TestRecoveryGate1"},
	{pkg: "commit", code: "DES-COMMIT-DEFERRED", followedBy: "TestRecoveryGate3 (the user's approval, recorded as the line says)"},
	{pkg: "commit", code: "DES-COMMIT-GAP", followedBy: "TestRecoveryGate3"},
	{pkg: "commit", code: "DES-COMMIT-GATE2", followedBy: "TestRecoveryGate3"},
	{pkg: "commit", code: "DES-COMMIT-TASK-STATUS", followedBy: "TestRecoveryGate3"},
	{pkg: "commit", code: "DES-COMMIT-INCOMPLETE", followedBy: "TestRecoveryGate3"},
	{pkg: "commit", code: "DES-COMMIT-OUTCOME", followedBy: "TestRecoveryGate3"},
	{pkg: "commit", code: "DES-COMMIT-PHASE-OPEN", followedBy: "TestRecoveryGate3"},
	{pkg: "commit", code: "DES-COMMIT-SKIP-REASON", followedBy: "TestRecoveryGate3"},
	{pkg: "commit", code: "DES-COMMIT-STATUS", followedBy: "TestRecoveryGate3"},
	{pkg: "statewrite", code: "DES-STATE-V7-STALE", followedBy: "TestRecoveryWorkflowState"},
	{pkg: "statewrite", code: "DES-STATE-V7-UNVERSIONED", followedBy: "TestRecoveryWorkflowState"},
	{pkg: "statewrite", code: "DES-STATE-V8-INDEX", followedBy: "TestRecoveryWorkflowState"},
	{pkg: "statewrite", code: "DES-STATE-V8-STATUS", followedBy: "TestRecoveryWorkflowState"},
}

// The table names every code of the step-file and commit rules, and only
// codes that exist; the workflow state's V7 and V8 are listed, not all of
// its codes.
func TestRecoveryTable(t *testing.T) {
	t.Parallel()
	listed := map[string]bool{}
	for _, r := range recoveryTable {
		if (r.followedBy == "") == (r.human == "") {
			t.Errorf("%s %s: give either the test that follows it or why a person decides", r.pkg, r.code)
		}
		listed[r.pkg+" "+r.code] = true
	}
	codeRe := regexp.MustCompile(`(?m)^#\s+code: (DES-[A-Z0-9-]+)$`)
	for _, pkg := range []string{"stop", "stepwrite", "invocation", "stepfile", "commit", "statewrite"} {
		raw, err := os.ReadFile(filepath.Join("..", "..", "rego", "des", pkg, pkg+".rego"))
		if err != nil {
			t.Fatal(err)
		}
		found := map[string]bool{}
		for _, m := range codeRe.FindAllStringSubmatch(string(raw), -1) {
			found[m[1]] = true
			if pkg != "statewrite" && !listed[pkg+" "+m[1]] {
				t.Errorf("rego/des/%s: %s has a recovery nobody follows: add a case, or a row saying why a person decides", pkg, m[1])
			}
		}
		for _, r := range recoveryTable {
			if r.pkg == pkg && !found[r.code] {
				t.Errorf("row %s %s: no such code in rego/des/%s", r.pkg, r.code, pkg)
			}
		}
	}
}

// Gate 2 in record mode: DES marks the step FAILED; the user runs the
// command given, starts the subagent again, and the subagent redoes the
// named phases through the guard.
func TestRecoveryGate2RecordMode(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		produce func(f *follower)
		code    string
		redo    string // the recovery line naming the phases to redo
	}{
		{"phases finished around the guard", func(f *follower) { completeAroundTheGuard(f.t, f.root) }, "DES-PHASE-JUMP", `^Redo phases? `},
		{"phase abandoned", func(f *follower) { f.write(withPhase(f.t, "PREPARE", phaseStarted)) }, "DES-PHASE-ABANDONED", ""},
		{"silent completion", func(*follower) {}, "DES-SILENT-COMPLETION", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFollower(t)
			c.produce(f)
			out := f.stop(false)
			if !strings.Contains(out.SystemMessage, "["+c.code+"]") {
				t.Fatalf("stop: %+v; want %s", out, c.code)
			}
			t.Logf("the user is told:\n%s", out.SystemMessage)
			f.read(out.SystemMessage)
			if f.task() != "FAILED" {
				t.Fatalf("task %s after a recorded failure", f.task())
			}
			f.command(f.line("^Make the step resumable|^Reset "))
			f.line("^Resume: start the subagent again")
			f.resume()
			if f.task() != "IN_PROGRESS" {
				t.Fatalf("task %s after the resume", f.task())
			}
			// Whatever the rules asked, the honest walk of every phase
			// left to do is what "redo"/"record each phase"/"finish" means.
			var todo []string
			if c.redo != "" {
				todo = phasesIn(t, f.line(c.redo), "Redo")
			}
			for _, p := range stepPhases(readStep(t, f.root)) {
				p := p.(map[string]any)
				if p["status"] != "NOT_EXECUTED" {
					continue
				}
				if n := p["phase_name"].(string); !slices.Contains(todo, n) {
					todo = append(todo, n)
				}
			}
			f.redoAll(todo)
			f.write(withTask("DONE"))
			f.passes(false)
		})
	}
}

// Gate 2 in block mode: the subagent is sent back with instructions, and
// DES has made the step such that they are legal writes.
func TestRecoveryGate2BlockMode(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		produce func(f *follower)
		code    string
		follow  func(f *follower)
	}{
		{"phases finished around the guard", func(f *follower) { completeAroundTheGuard(f.t, f.root) }, "DES-PHASE-JUMP", func(f *follower) {
			f.line(`^DES set phases? .* back to NOT_EXECUTED and the task back to IN_PROGRESS`)
			// What des says it did, it did, and the trail says so.
			for _, p := range stepPhases(readStep(f.t, f.root)) {
				if p := p.(map[string]any); p["status"] != "NOT_EXECUTED" {
					f.t.Errorf("reopened step: phase %v is %v", p["phase_name"], p["status"])
				}
			}
			moves := auditLines(f.t, f.root, "TASK_STATE_CHANGED")
			if last := moves[len(moves)-1]; last["by"] != "gate2" || last["from"] != "DONE" || last["to"] != "IN_PROGRESS" {
				f.t.Errorf("last task move in the trail: %v; want DONE→IN_PROGRESS by gate2", last)
			}
			verdicts := auditLines(f.t, f.root, "SUBAGENT_STOP_VALIDATION")
			if v := verdicts[len(verdicts)-1]; v["action"] != "block" || len(v["reopened_phases"].([]any)) != len(canonicalPhases) {
				f.t.Errorf("verdict: %v; want a block with every phase reopened", v)
			}
			names := phasesIn(f.t, f.line(`^Redo phases? `), "Redo")
			if len(names) != len(canonicalPhases) {
				f.t.Errorf("redo names %v; want all %d phases", names, len(canonicalPhases))
			}
			f.redo(names)
			f.line(`write state.status DONE again once every phase is finished`)
			f.write(withTask("DONE"))
		}},
		{"phase abandoned", func(f *follower) { f.write(withPhase(f.t, "PREPARE", phaseStarted)) }, "DES-PHASE-ABANDONED", func(f *follower) {
			names := phasesIn(f.t, f.line(`^Finish phases? `), "Finish")
			for _, n := range names {
				f.write(withPhase(f.t, n, phaseExecuted))
			}
		}},
		{"silent completion, work recorded", func(*follower) {}, "DES-SILENT-COMPLETION", func(f *follower) {
			f.line(`^Record each phase as it is done: write it IN_PROGRESS first, then EXECUTED`)
			f.redoAll(canonicalPhases)
			f.write(withTask("DONE"))
		}},
		{"silent completion, work given up", func(*follower) {}, "DES-SILENT-COMPLETION", func(f *follower) {
			f.line(`^If the work was not done, write state.status FAILED with state.failure_reason`)
			f.write(func(doc map[string]any) {
				doc["state"].(map[string]any)["status"] = "FAILED"
				doc["state"].(map[string]any)["failure_reason"] = "the cart module is missing"
			})
		}},
		// Outcome and reason lost around the guard after an honest walk: the
		// phases keep their status and get the missing field back.
		{"phaseExecuted phase without outcome", func(f *follower) {
			f.redo([]string{"PREPARE"})
			f.aroundTheGuard(withPhase(f.t, "PREPARE", map[string]any{"outcome": ""}))
		}, "DES-PHASE-NO-OUTCOME", func(f *follower) {
			for _, n := range phasesIn(f.t, f.line(`^Set the outcome of phases? `), "outcome of") {
				f.write(withPhase(f.t, n, map[string]any{"outcome": "PASS"}))
			}
		}},
		{"skipped phase without reason", func(f *follower) {
			f.write(withPhase(f.t, "PREPARE", phaseStarted))
			f.write(withPhase(f.t, "PREPARE", map[string]any{"status": "SKIPPED", "blocked_by": "NOT_APPLICABLE: nothing to prepare"}))
			f.aroundTheGuard(withPhase(f.t, "PREPARE", map[string]any{"blocked_by": ""}))
		}, "DES-PHASE-INVALID-SKIP", func(f *follower) {
			for _, n := range phasesIn(f.t, f.line(`^Set blocked_by on phases? `), "blocked_by on") {
				f.write(withPhase(f.t, n, map[string]any{"blocked_by": "NOT_APPLICABLE: nothing to prepare"}))
			}
		}},
		{"task moved around the guard", func(f *follower) { f.aroundTheGuard(withTask("TODO")) }, "DES-TASK-TRANSITION", func(f *follower) {
			f.line(`^Change state.status only along the table: TODO→IN_PROGRESS; IN_PROGRESS→DONE\|FAILED\|PARTIAL; .*one move at a time`)
			f.write(withTask("IN_PROGRESS"))
			f.write(withTask("PARTIAL")) // the work stops here, by a move of the table
		}},
		{"premature completion", func(f *follower) {
			f.write(withPhase(f.t, "PREPARE", phaseStarted))
			f.write(withPhase(f.t, "PREPARE", phaseExecuted))
			f.write(withTask("DONE"))
		}, "DES-PREMATURE-COMPLETION", func(f *follower) {
			f.line(`^DES set the task of .* back to IN_PROGRESS`)
			open := regexp.MustCompile(`^Finish the open phases \(([A-Z0-9_, ]+)\)`).FindStringSubmatch(f.line(`^Finish the open phases`))
			f.redoAll(strings.Split(open[1], ", "))
			f.write(withTask("DONE"))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFollower(t, "DES_GATE2_ON_FAILURE=block")
			c.produce(f)
			out := f.stop(false)
			if out.Decision != "block" || !strings.Contains(out.Reason, "["+c.code+"]") {
				t.Fatalf("stop: %+v; want a block for %s", out, c.code)
			}
			t.Logf("the subagent is told:\n%s", out.Reason)
			f.read(out.Reason)
			for _, l := range f.lines {
				if strings.Contains(l, "stale --resolve") {
					t.Errorf("a subagent sent back is told to resolve: %q", l)
				}
			}
			c.follow(f)
			f.passes(true)
		})
	}
}

// The write guard's refusals: following the recovery reaches what the
// refused write wanted by moves the guard accepts.
func TestRecoveryWriteGuard(t *testing.T) {
	t.Parallel()
	t.Run("phase jump", func(t *testing.T) {
		f := newFollower(t)
		reason := f.tryWrite(withPhase(t, "PREPARE", phaseExecuted))
		if !strings.Contains(reason, "[DES-PHASE-JUMP]") {
			t.Fatalf("jump allowed or refused otherwise: %q", reason)
		}
		f.read(reason)
		names := phasesIn(t, f.line(`^Write phase [A-Z_]+ as IN_PROGRESS first`), "Write")
		f.redo(names)
		if p := logEntry(t, readStep(t, f.root), "PREPARE"); p["status"] != "EXECUTED" {
			t.Errorf("PREPARE is %v", p["status"])
		}
	})
	t.Run("abandon an in-progress phase", func(t *testing.T) {
		f := newFollower(t)
		f.write(withPhase(t, "PREPARE", phaseStarted))
		reason := f.tryWrite(withPhase(t, "PREPARE", map[string]any{"status": "NOT_EXECUTED"}))
		if !strings.Contains(reason, "[DES-PHASE-JUMP]") {
			t.Fatalf("un-start allowed or refused otherwise: %q", reason)
		}
		f.read(reason)
		line := f.line(`write it FAILED and state.status FAILED, then run`)
		f.write(func(doc map[string]any) {
			withPhase(t, "PREPARE", map[string]any{"status": "FAILED"})(doc)
			withTask("FAILED")(doc)
		})
		f.command(line)
		if p := logEntry(t, readStep(t, f.root), "PREPARE"); p["status"] != "NOT_EXECUTED" || f.task() != "PARTIAL" {
			t.Errorf("after the resolution: PREPARE %v, task %s", p["status"], f.task())
		}
	})
	t.Run("task jump", func(t *testing.T) {
		f := newFollower(t)
		f.redoAll(canonicalPhases)
		f.write(withTask("PARTIAL"))
		reason := f.tryWrite(withTask("DONE"))
		if !strings.Contains(reason, "[DES-TASK-TRANSITION]") {
			t.Fatalf("PARTIAL→DONE allowed or refused otherwise: %q", reason)
		}
		f.read(reason)
		m := regexp.MustCompile(`state\.status ([A-Z_]+) first, then ([A-Z_]+)\.`).FindStringSubmatch(f.line(`one write at a time`))
		f.write(withTask(m[1]))
		f.write(withTask(m[2]))
		if f.task() != "DONE" {
			t.Errorf("task %s", f.task())
		}
	})
	t.Run("phaseExecuted without outcome", func(t *testing.T) {
		f := newFollower(t)
		f.write(withPhase(t, "PREPARE", phaseStarted))
		reason := f.tryWrite(withPhase(t, "PREPARE", map[string]any{"status": "EXECUTED"}))
		if !strings.Contains(reason, "[DES-PHASE-NO-OUTCOME]") {
			t.Fatalf("no outcome allowed or refused otherwise: %q", reason)
		}
		f.read(reason)
		f.line(`^Set outcome to PASS or FAIL`)
		f.write(withPhase(t, "PREPARE", phaseExecuted))
	})
	t.Run("skip without reason", func(t *testing.T) {
		f := newFollower(t)
		f.write(withPhase(t, "PREPARE", phaseStarted))
		reason := f.tryWrite(withPhase(t, "PREPARE", map[string]any{"status": "SKIPPED"}))
		if !strings.Contains(reason, "[DES-PHASE-INVALID-SKIP]") {
			t.Fatalf("skip allowed or refused otherwise: %q", reason)
		}
		f.read(reason)
		f.line(`^Set blocked_by on phase PREPARE with a prefix: .*NOT_APPLICABLE:`)
		f.write(withPhase(t, "PREPARE", map[string]any{"status": "SKIPPED", "blocked_by": "NOT_APPLICABLE: nothing to prepare"}))
	})
}

// Gate 1's DES-STALE-WORK: the command it names clears the way, and the
// subagent then starts.
func TestRecoveryStaleWork(t *testing.T) {
	t.Parallel()
	root := gate1Project(t, "TODO")
	abandoned := "docs/feature/shop/steps/01-02.json"
	writeFile(t, root, abandoned, `{"task_id": "01-02", "state": {"status": "IN_PROGRESS"}, "tdd_cycle": {"phase_execution_log": [
  {"phase_name": "PREPARE", "status": "EXECUTED", "outcome": "PASS"},
  {"phase_name": "RED_ACCEPTANCE", "status": "IN_PROGRESS", "started_at": "2020-01-01T00:00:00Z"}]}}`)
	f := &follower{t: t, root: root}
	event := agentEvent(root, "Agent", renderPrompt(t, "execute-step"))
	reason := denyReason(t, runHookProcess(t, root, nil, event))
	if !strings.Contains(reason, "[DES-STALE-WORK]") {
		t.Fatalf("reason = %q", reason)
	}
	f.read(reason)
	f.command(f.line("^Run `des-hook stale --resolve "))
	if out := f.command(f.line("^Run `des-hook stale` to list")); !strings.Contains(out, "no stale work") {
		t.Errorf("des-hook stale after the resolution: %q", out)
	}
	if r := runHookProcess(t, root, nil, event); denyReason(t, r) != "" {
		t.Errorf("Gate 1 after following the recovery: %s", r.stdout)
	}
}

// The workflow state guard's V7 and V8: re-read, apply the change to the
// current version, write the version given (or the exemption named).
func TestRecoveryWorkflowState(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, code, write string
		follow            func(t *testing.T, f *follower) string // the write the recovery leads to
	}{
		{"V7 stale", "DES-STATE-V7-STALE", versioned(stateV5, 3), func(t *testing.T, f *follower) string {
			v := regexp.MustCompile(`^Write state_version = (\d+)`).FindStringSubmatch(f.line(`^Write state_version = `))
			n := 0
			fmt.Sscan(v[1], &n)
			return versioned(stateV5, n)
		}},
		{"V7 unversioned", "DES-STATE-V7-UNVERSIONED", strings.Replace(stateV5, `"state_version": 5,`, ``, 1), func(t *testing.T, f *follower) string {
			v := regexp.MustCompile(`^Write state_version = (\d+)`).FindStringSubmatch(f.line(`^Write state_version = `))
			n := 0
			fmt.Sscan(v[1], &n)
			return versioned(stateV5, n)
		}},
		{"V8 status goes back, rolled back on purpose", "DES-STATE-V8-STATUS", strings.Replace(versioned(stateV5, 6), `"01-requirements": "completed", "02-design"`, `"01-requirements": "pending", "02-design"`, 1), func(t *testing.T, f *follower) string {
			f.line(`recovery_action.type to "retry" or "rollback" in the same write`)
			doc := strings.Replace(versioned(stateV5, 6), `"01-requirements": "completed", "02-design"`, `"01-requirements": "pending", "02-design"`, 1)
			return strings.Replace(doc, `"type": "feature",`, `"type": "feature", "recovery_action": {"type": "rollback"},`, 1)
		}},
		{"V8 index goes back, rolled back on purpose", "DES-STATE-V8-INDEX", strings.Replace(versioned(stateV5, 6), `"current_phase_index": 1`, `"current_phase_index": 0`, 1), func(t *testing.T, f *follower) string {
			f.line(`set active_workflow.recovery_action.type to "rollback" in the same write`)
			doc := strings.Replace(versioned(stateV5, 6), `"current_phase_index": 1`, `"current_phase_index": 0`, 1)
			return strings.Replace(doc, `"type": "feature",`, `"type": "feature", "recovery_action": {"type": "rollback"},`, 1)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root, env := t.TempDir(), []string{"DES_STATE_DIR=" + t.TempDir()}
			writeFile(t, root, ".isdlc/state.json", stateV5)
			f := &follower{t: t, root: root, env: env}
			reason := stateStep(t, root, env, "toolu_s1", c.write)
			if !strings.Contains(reason, "["+c.code+"]") {
				t.Fatalf("write: %q; want %s", reason, c.code)
			}
			f.read(reason)
			next := c.follow(t, f)
			if reason := stateStep(t, root, env, "toolu_s2", next); reason != "" {
				t.Fatalf("the write the recovery leads to was refused:\n%s", reason)
			}
			if raw, _ := os.ReadFile(filepath.Join(root, ".isdlc", "state.json")); string(raw) != next {
				t.Error("the write did not land")
			}
		})
	}
}

// precommit runs des-hook precommit on the step file and returns its exit
// status and output.
func (f *follower) precommit() hookRun {
	f.t.Helper()
	return runBinCLI(f.t, f.root, "precommit", e2eStep)
}

// Gate 3: each refusal's recovery, followed through the write guard (and the
// commands it names), lets the step file commit.
func TestRecoveryGate3(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		produce func(f *follower)
		code    string
		follow  func(f *follower)
	}{
		{"phases still open", func(f *follower) { f.redo([]string{"PREPARE"}) }, "DES-COMMIT-PHASE-OPEN", func(f *follower) {
			f.line(`^Finish every open phase through the write guard \(a NOT_EXECUTED one goes IN_PROGRESS first\)`)
			f.redoAll(canonicalPhases[1:])
			f.write(withTask("DONE"))
		}},
		// The other line of the same violation: the work is given up and
		// started again, from the IN_PROGRESS task Gate 1 left.
		{"phases still open, work abandoned", func(f *follower) { f.redo([]string{"PREPARE"}) }, "DES-COMMIT-PHASE-OPEN", func(f *follower) {
			l := f.line("^If the work was abandoned, write state.status FAILED, reset it with `des-hook stale --resolve ")
			f.write(withTask("FAILED"))
			f.command(l)
			if got := f.task(); got != "PARTIAL" {
				f.t.Fatalf("after des-hook stale --resolve the task is %s, want PARTIAL", got)
			}
			f.resume()
			f.redoAll(canonicalPhases[1:])
			f.write(withTask("DONE"))
		}},
		// A DONE task cannot be written FAILED: the recovery does not say to,
		// and finishing the phase is what it leaves.
		{"phase still open under a DONE task", func(f *follower) {
			f.redoAll(canonicalPhases[:len(canonicalPhases)-1])
			f.write(withTask("DONE"))
		}, "DES-COMMIT-PHASE-OPEN", func(f *follower) {
			for _, l := range f.lines {
				if strings.Contains(l, "state.status FAILED") {
					f.t.Errorf("recovery for a DONE task says to write FAILED, which the write guard refuses: %q", l)
				}
			}
			f.line(`^Finish every open phase through the write guard`)
			f.redo(canonicalPhases[len(canonicalPhases)-1:])
		}},
		{"gap in the phase order", func(f *follower) { f.redo([]string{"RED_ACCEPTANCE"}) }, "DES-COMMIT-GAP", func(f *follower) {
			f.line(`^Run the phases in canonical order: take every phase before one that is EXECUTED through the write guard`)
			f.redo([]string{"PREPARE"})
			var rest []string
			for _, p := range canonicalPhases {
				if p != "PREPARE" && p != "RED_ACCEPTANCE" {
					rest = append(rest, p)
				}
			}
			f.redoAll(rest)
			f.write(withTask("DONE"))
		}},
		{"skip without an accepted prefix", func(f *follower) {
			f.redoAll(canonicalPhases[:6])
			f.write(withPhase(f.t, "REVIEW", phaseStarted))
			f.write(withPhase(f.t, "REVIEW", map[string]any{"status": "SKIPPED", "blocked_by": "nothing to review"}))
			f.redoAll(canonicalPhases[7:])
			f.write(withTask("DONE"))
		}, "DES-COMMIT-SKIP-REASON", func(f *follower) {
			f.line(`^Write blocked_by of every SKIPPED phase as PREFIX: reason, with PREFIX one of .*NOT_APPLICABLE:`)
			f.write(withPhase(f.t, "REVIEW", map[string]any{"blocked_by": "NOT_APPLICABLE: nothing to review"}))
		}},
		// The user's approval of a deferral is theirs to give; recording it
		// as the recovery says is what the guards must accept.
		{"deferred skip, approved by the user", func(f *follower) {
			f.redoAll(canonicalPhases[:6])
			f.write(withPhase(f.t, "REVIEW", phaseStarted))
			f.write(withPhase(f.t, "REVIEW", map[string]any{"status": "SKIPPED", "blocked_by": "DEFERRED: review next sprint"}))
			f.redoAll(canonicalPhases[7:])
			f.write(withTask("DONE"))
		}, "DES-COMMIT-DEFERRED", func(f *follower) {
			f.line(`^A SKIPPED phase is final: if the skip stands, rewrite its blocked_by with one of .*APPROVED_SKIP: when the user approved it`)
			f.write(withPhase(f.t, "REVIEW", map[string]any{"blocked_by": "APPROVED_SKIP: the user moved the review to the next sprint"}))
		}},
		// Fields lost around the guard after an honest walk.
		{"phaseExecuted phase without outcome", func(f *follower) {
			f.redoAll(canonicalPhases)
			f.write(withTask("DONE"))
			f.aroundTheGuard(withPhase(f.t, "REVIEW", map[string]any{"outcome": nil}))
		}, "DES-COMMIT-OUTCOME", func(f *follower) {
			f.line(`^Set the outcome of every EXECUTED phase to PASS or FAIL`)
			f.write(withPhase(f.t, "REVIEW", map[string]any{"outcome": "PASS"}))
		}},
		{"status that is not a phase status", func(f *follower) {
			f.redoAll(canonicalPhases)
			f.write(withTask("DONE"))
			f.aroundTheGuard(withPhase(f.t, "REVIEW", map[string]any{"status": "COMPLETED"}))
		}, "DES-COMMIT-STATUS", func(f *follower) {
			f.line(`^Give every phase a status through the write guard: EXECUTED \(with outcome PASS or FAIL\) or SKIPPED \(with blocked_by starting with one of `)
			f.write(withPhase(f.t, "REVIEW", map[string]any{"status": "EXECUTED"}))
		}},
		{"phase missing from the log", func(f *follower) {
			f.redoAll(canonicalPhases[:len(canonicalPhases)-1])
			f.aroundTheGuard(func(doc map[string]any) {
				log := stepPhases(doc)
				doc["tdd_cycle"].(map[string]any)["phase_execution_log"] = log[:len(log)-1]
			})
		}, "DES-COMMIT-INCOMPLETE", func(f *follower) {
			f.line(`^List every canonical phase in tdd_cycle.phase_execution_log, in order .*a missing one as \{"phase_name": NAME, "phase_index": N, "status": "NOT_EXECUTED"\}; then take each through the write guard`)
			last := canonicalPhases[len(canonicalPhases)-1]
			f.write(func(doc map[string]any) {
				tc := doc["tdd_cycle"].(map[string]any)
				tc["phase_execution_log"] = append(stepPhases(doc), map[string]any{"phase_name": last, "phase_index": len(canonicalPhases) - 1, "status": "NOT_EXECUTED"})
			})
			f.redo([]string{last})
			f.write(withTask("DONE"))
		}},
		{"failed task whose phases all say EXECUTED", func(f *follower) {
			f.redoAll(canonicalPhases)
			f.write(withTask("FAILED"))
		}, "DES-COMMIT-TASK-STATUS", func(f *follower) {
			// Every phase was done: the reset has none to redo, and the
			// run started again finishes at once.
			f.command(f.line("^Reset the step with `des-hook stale --resolve "))
			f.resume()
			f.write(withTask("DONE"))
		}},
		{"unresolved Gate 2 failure", func(f *follower) {
			completeAroundTheGuard(f.t, f.root)
			if out := f.stop(false); !strings.Contains(out.SystemMessage, "[DES-PHASE-JUMP]") {
				f.t.Fatalf("stop: %+v", out)
			}
		}, "DES-COMMIT-GATE2", func(f *follower) {
			f.command(f.line("^Run `des-hook stale --resolve "))
			f.resume()
			f.redoAll(canonicalPhases)
			f.write(withTask("DONE"))
			f.passes(false)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFollower(t)
			c.produce(f)
			r := f.precommit()
			if r.code != 1 || !strings.Contains(r.stdout, "["+c.code+"]") {
				t.Fatalf("precommit: exit %d; want 1 with %s:\n%s%s", r.code, c.code, r.stdout, r.stderr)
			}
			f.read(r.stdout)
			c.follow(f)
			if r := f.precommit(); r.code != 0 {
				t.Fatalf("after following the recovery, precommit: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// DES-STEPFILE-OBSOLETE: the change the recovery names is a write the guard
// accepts, and Gate 1 then starts the subagent.
func TestRecoveryObsoleteStepFile(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, doc string
		follow    func(f *follower)
	}{
		{"step_id", `{"step_id": "01-01", "description": "Add a cart total", "team_notes": {"kept": true}, "state": {"status": "TODO"}, "tdd_cycle": {"phase_execution_log": []}}`, func(f *follower) {
			f.line(`^Rename the top-level field step_id to task_id, keeping its value, with Write or Edit\.`)
			f.write(func(doc map[string]any) { doc["task_id"] = doc["step_id"]; delete(doc, "step_id") })
		}},
		{"tdd_phase", `{"task_id": "01-01", "description": "Add a cart total", "team_notes": {"kept": true}, "state": {"status": "TODO"}, "tdd_phase": "RED_UNIT"}`, func(f *follower) {
			f.line(`^Replace tdd_phase with tdd_cycle.phase_execution_log, with Write or Edit: one entry per phase`)
			f.write(func(doc map[string]any) {
				delete(doc, "tdd_phase")
				var log []any
				for i, n := range canonicalPhases {
					log = append(log, map[string]any{"phase_name": n, "phase_index": i, "status": "NOT_EXECUTED"})
				}
				doc["tdd_cycle"] = map[string]any{"phase_execution_log": log}
			})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			writeFile(t, root, e2eStep, c.doc)
			f := &follower{t: t, root: root, env: []string{"CLAUDE_CONFIG_DIR=" + t.TempDir()}}
			reason := denyReason(t, runHookProcess(t, root, f.env, agentEvent(root, "Agent", renderPrompt(t, "execute-step"))))
			if !strings.Contains(reason, "[DES-STEPFILE-OBSOLETE]") {
				t.Fatalf("Gate 1: %q; want DES-STEPFILE-OBSOLETE", reason)
			}
			f.read(reason)
			c.follow(f)
			f.resume()
		})
	}
}

// Gate 1's refusals: the orchestrator fixes the prompt or the step file as
// the recovery says, and the same Agent call is then allowed.
func TestRecoveryGate1(t *testing.T) {
	t.Parallel()
	prompt := renderPrompt(t, "execute-step")
	cases := []struct {
		name, code string
		setup      func(root string) string // the refused prompt
		follow     func(f *follower) string // the prompt after the recovery
	}{
		{"invalid DES-VALIDATION", "DES-MARKER-INVALID", func(root string) string {
			writeFile(t, root, e2eStep, `{"task_id": "01-01", "state": {"status": "TODO"}, "tdd_cycle": {"phase_execution_log": []}}`)
			return strings.Replace(prompt, "DES-VALIDATION: required", "DES-VALIDATION: maybe", 1)
		}, func(f *follower) string {
			f.line(`^Write <!-- DES-VALIDATION: required --> or remove every DES marker`)
			return prompt // the marker written as the line says
		}},
		{"step file outside the project", "DES-STEPFILE-OUTSIDE", func(root string) string {
			writeFile(t, root, e2eStep, `{"task_id": "01-01", "state": {"status": "TODO"}, "tdd_cycle": {"phase_execution_log": []}}`)
			return strings.ReplaceAll(prompt, e2eStep, "../elsewhere/steps/01-01.json")
		}, func(f *follower) string {
			f.line(`^Point DES-STEP-FILE at a step file inside the project`)
			return prompt
		}},
		{"step file not JSON", "DES-STEPFILE-SCHEMA", func(root string) string {
			writeFile(t, root, e2eStep, `{"task_id": "01-01", "state": {"status": "TODO"},`)
			return prompt
		}, func(f *follower) string {
			f.line(`^Fix the step file at the place named above, with Write or Edit, so that it matches the step schema`)
			doc := `{"task_id": "01-01", "state": {"status": "TODO"}, "tdd_cycle": {"phase_execution_log": []}}`
			ev := writeToolEvent(f.root, "Write", e2eStep, map[string]any{"content": doc})
			if reason := denyReason(f.t, runHookProcess(f.t, f.root, f.env, ev)); reason != "" {
				f.t.Fatalf("the fix was refused:\n%s", reason)
			}
			writeFile(f.t, f.root, e2eStep, doc)
			return prompt
		}},
		{"step file missing", "DES-STEPFILE-MISSING", func(string) string { return prompt }, func(f *follower) string {
			f.line(`^Create ` + regexp.QuoteMeta(e2eStep) + ` \(or fix the DES-STEP-FILE path\) before starting the subagent\.`)
			// A new step file through the write guard: a plan, TODO.
			doc := `{"task_id": "01-01", "description": "Add a cart total", "state": {"status": "TODO"}, "tdd_cycle": {"phase_execution_log": []}}`
			ev := writeToolEvent(f.root, "Write", e2eStep, map[string]any{"content": doc})
			if reason := denyReason(f.t, runHookProcess(f.t, f.root, f.env, ev)); reason != "" {
				f.t.Fatalf("creating the step file was refused:\n%s", reason)
			}
			writeFile(f.t, f.root, e2eStep, doc)
			return prompt
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			f := &follower{t: t, root: root, env: []string{"CLAUDE_CONFIG_DIR=" + t.TempDir()}}
			bad := c.setup(root)
			reason := denyReason(t, runHookProcess(t, root, f.env, agentEvent(root, "Agent", bad)))
			if !strings.Contains(reason, "["+c.code+"]") {
				t.Fatalf("Gate 1: %q; want %s", reason, c.code)
			}
			f.read(reason)
			good := c.follow(f)
			if reason := denyReason(t, runHookProcess(t, root, f.env, agentEvent(root, "Agent", good))); reason != "" {
				t.Fatalf("Gate 1 after following the recovery:\n%s", reason)
			}
		})
	}
}

// configuration_setup steps: the evidence, documentation and rollback the
// recovery asks for are fields written through the guard.
func TestRecoveryConfigurationSetup(t *testing.T) {
	t.Parallel()
	root, transcript, env := gate2Project(t, "DES_GATE2_ON_FAILURE=block")
	f := &follower{t: t, root: root, transcript: transcript, env: env}
	f.write(func(doc map[string]any) {
		doc["workflow_type"] = "configuration_setup"
		doc["safety"] = map[string]any{"is_destructive": true, "rollback_plan": "restore nginx.conf from nginx.conf.bak", "affects_production": false}
		delete(doc, "tdd_cycle")
	})
	out := f.stop(false)
	for _, code := range []string{"DES-VERIFY-EVIDENCE", "DES-VERIFY-DOCS", "DES-VERIFY-ROLLBACK"} {
		if out.Decision != "block" || !strings.Contains(out.Reason, "["+code+"]") {
			t.Fatalf("stop: %+v; want a block with %s", out, code)
		}
	}
	f.read(out.Reason)
	f.line(`^Write validation_output \(or the outcome_details of FINAL_VALIDATE\): the commands run to verify the change and their output, at least 100 characters\.`)
	f.line(`^Write documentation: what was changed, where, why, and how to check it, at least 200 characters\.`)
	f.line(`^Run the rollback plan \(safety.rollback_plan\) against a copy or staging, then record in validation_output what was rolled back`)
	f.write(func(doc map[string]any) {
		doc["validation_output"] = "$ nginx -t\nnginx: configuration file /etc/nginx/nginx.conf test is successful\n$ curl -sI localhost | head -1\nHTTP/1.1 200 OK\n" +
			"Rollback tested on staging: restored nginx.conf from nginx.conf.bak, nginx -t passed and the site answered 200."
		doc["documentation"] = "Changed /etc/nginx/nginx.conf: raised worker_connections from 512 to 2048 because the load test saw refused " +
			"connections at 600 concurrent users. Check with nginx -t and the load test script; roll back by restoring nginx.conf.bak and reloading nginx."
	})
	f.passes(true)
}
