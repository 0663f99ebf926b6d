package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A real step file, for the false-deny tests.
const realStep = `{
  "task_id": "01-01",
  "state": {"status": "TODO"},
  "tdd_cycle": {"phase_execution_log": [{"phase_name": "PREPARE", "phase_index": 0, "status": "NOT_EXECUTED"}]}
}
`

// find -delete and find -exec rm with a name test reach only the entries
// the test matches: cleaning .pyc or .log files is allowed beside step
// files and DES's settings, while a test that matches them, a find with no
// test, or one whose -o puts the delete in a branch with no test is still
// denied; a branch (-prune -o ...) is judged by its own tests.
// Each allowed command is then run, and the guarded files are still there.
func TestE2EFindWithANameTest(t *testing.T) {
	t.Parallel()
	cases := []struct {
		command string
		code    string // "" = allowed
	}{
		{`find . -name '*.pyc' -delete`, ""},
		{`find . -name '*.log' -exec rm {} +`, ""},
		{`find . -type f -name '*.log' -exec rm -f {} \;`, ""},
		{`find . -name '__pycache__' -type d -exec rm -rf {} +`, ""},
		{`find docs -iname '*.PYC' -delete`, ""},
		{`find . -path './build/*' -delete`, ""},
		{`find . -name '*.pyc' ! -path './.git/*' -delete`, ""},
		{`find . -name '*.json' -delete`, "DES-STATE-BASH-WRITE"},
		{`find docs -name '01-01.json' -delete`, "DES-STATE-BASH-WRITE"},
		{`find . -name 'config.json' -delete`, "DES-PROTECTED-PATH"},
		{`find . -name 'steps' -exec rm -rf {} +`, "DES-STATE-BASH-WRITE"},
		{`find . -name '.des' -exec rm -rf {} +`, "DES-PROTECTED-PATH"},
		{`find . -name 'pre-commit' -delete`, "DES-PROTECTED-PATH"},
		{`find . -path '*/steps/*' -delete`, "DES-STATE-BASH-WRITE"},
		{`find .des -delete`, "DES-PROTECTED-PATH"},
		{`find . -delete`, "DES-PROTECTED-PATH"},
		{`find . -delete -name '*.pyc'`, "DES-PROTECTED-PATH"},
		{`find . -name x -o -name y -delete`, ""},
		{`find . -path ./node_modules -prune -o -name '*.pyc' -delete`, ""},
		{`find . -path ./.git -prune -o -name '*.log' -exec rm {} +`, ""},
		{`find . -name '*.pyc' , -name '*.log' -delete`, ""},
		{`find . -path ./node_modules -prune -o -name '*.json' -delete`, "DES-STATE-BASH-WRITE"},
		{`find . -name '*.pyc' -o -delete`, "DES-PROTECTED-PATH"},
		{`find . \( -name x -o -name y \) -delete`, "DES-PROTECTED-PATH"},
		{`find . ! -name '*.pyc' -delete`, "DES-PROTECTED-PATH"},
		{`find . -name "$P" -delete`, "DES-PROTECTED-PATH"},
		{`find -L . -name '*.pyc' -delete`, "DES-PROTECTED-PATH"},
		{`find . -name '*.log' -exec sh -c 'rm "$1"' _ {} \;`, "DES-PROTECTED-PATH"},
	}
	for _, c := range cases {
		t.Run(c.command, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			writeFile(t, root, e2eStep, realStep)
			writeFile(t, root, ".des/config.json", `{"validation_timeout_ms": 5000}`)
			writeFile(t, root, ".git/hooks/pre-commit", "#!/bin/sh\n")
			writeFile(t, root, "src/app.pyc", "x")
			writeFile(t, root, "src/__pycache__/m.pyc", "x")
			writeFile(t, root, "docs/old.PYC", "x")
			writeFile(t, root, "logs/run.log", "x")
			writeFile(t, root, "build/out.o", "x")
			reason := denyReason(t, runHookProcess(t, root, nil, bashEvent(t, root, c.command)))
			if c.code == "" {
				if reason != "" {
					t.Fatalf("denied: %s", reason)
				}
				runBash(t, root, c.command)
				for _, f := range []string{e2eStep, ".des/config.json", ".git/hooks/pre-commit"} {
					if _, err := os.Stat(filepath.Join(root, f)); err != nil {
						t.Errorf("%s: %v", f, err)
					}
				}
				return
			}
			if !strings.Contains(reason, "["+c.code+"]") {
				t.Errorf("want %s, got %q", c.code, reason)
			}
		})
	}
}

// JSON files under a steps folder that are not shaped like DES's step files
// (a test fixture, a wizard's steps) are nobody's business: a Write, an
// Edit, a Bash write and a commit of them are allowed, through the hook and
// `des-hook precommit`, while a real step file beside them is still judged.
func TestE2EStepLookAlikesAreNotStepFiles(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	initRepo(t, root, "main")
	fixture := "test/fixtures/steps/01-01.json"
	wizard := "src/wizard/steps/02-03.json"
	writeFile(t, root, wizard, `{"task_id": "02-03", "title": "Pick a plan", "state": {"status": "TODO"}}`)
	writeFile(t, root, e2eStep, realStep)
	allowed := []struct {
		name  string
		event map[string]any
	}{
		{"Write a fixture", writeToolEvent(root, "Write", fixture, map[string]any{"content": `{"task_id": "x", "fixture": true}`})},
		{"Write a wizard step", writeToolEvent(root, "Write", wizard, map[string]any{"content": `{"task_id": "02-03", "title": "Pick a plan", "state": {"status": "DONE"}}`})},
		{"Edit a wizard step", writeToolEvent(root, "Edit", wizard, map[string]any{"old_string": `"TODO"`, "new_string": `"DONE"`})},
		{"Bash rewrites a wizard step", bashEvent(t, root, `echo '{"task_id": "02-03"}' > `+wizard)},
	}
	for _, c := range allowed {
		if reason := denyReason(t, runHookProcess(t, root, nil, c.event)); reason != "" {
			t.Errorf("%s: denied: %s", c.name, reason)
		}
	}
	// A real step file is still judged, and so is a new file named as a
	// step that Bash writes (DES cannot see what it holds).
	denied := []struct {
		name  string
		event map[string]any
		code  string
	}{
		{"Write junk to a real step", writeToolEvent(root, "Write", e2eStep, map[string]any{"content": `not json`}), "DES-STEPFILE-SCHEMA"},
		{"Write a new step with an unknown phase status", writeToolEvent(root, "Write", "docs/feature/shop/steps/01-02.json", map[string]any{"content": `{"task_id": "01-02", "tdd_cycle": {"phase_execution_log": [{"phase_name": "PREPARE", "status": "BOGUS"}]}}`}), "DES-STEPFILE-SCHEMA"},
		{"Bash creates a file named as a step", bashEvent(t, root, `cp /dev/null docs/feature/shop/steps/01-03.json`), "DES-STATE-BASH-WRITE"},
	}
	for _, c := range denied {
		if reason := denyReason(t, runHookProcess(t, root, nil, c.event)); !strings.Contains(reason, "["+c.code+"]") {
			t.Errorf("%s: want %s, got %q", c.name, c.code, reason)
		}
	}
	// Gate 3: a commit of the fixture and the wizard step passes.
	writeFile(t, root, fixture, `{"task_id": "x", "fixture": true}`)
	writeFile(t, root, wizard, `{"task_id": "02-03", "title": "Pick a plan", "state": {"status": "DONE"}}`)
	git(t, root, "add", fixture, wizard)
	if r := runBinCLI(t, root, "precommit"); r.code != 0 {
		t.Errorf("precommit of the look-alikes: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The real step file staged beside them is still judged.
	git(t, root, "add", e2eStep)
	if r := runBinCLI(t, root, "precommit"); r.code != 1 || !strings.Contains(r.stdout, e2eStep) || strings.Contains(r.stdout, fixture) {
		t.Errorf("precommit with the real step: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// A formatter hook that rewrites the step file after the write guard's
// Write (another indentation, a trailing newline) keeps the write
// confirmed: PostToolUse compares JSON values, and Gate 2 at the stop finds
// PREPARE started through the guard. A rewrite that changes a value is
// said at once, to the agent and the user, and audited.
func TestE2EFormatterHookKeepsTheWriteConfirmed(t *testing.T) {
	t.Parallel()
	root, transcript, env := gate2Project(t)
	write := func(i, phase int, set map[string]any, format func(doc map[string]any) string) hookRun {
		t.Helper()
		doc := readStep(t, root)
		prepare := stepPhases(doc)[phase].(map[string]any)
		for k, v := range set {
			prepare[k] = v
		}
		next, _ := json.MarshalIndent(doc, "", "  ")
		ev := writeToolEvent(root, "Write", e2eStep, map[string]any{"content": string(next)}, evToolUseID("toolu_f"+itoa(i)))
		if reason := denyReason(t, runHookProcess(t, root, env, ev)); reason != "" {
			t.Fatalf("write %d denied: %s", i, reason)
		}
		writeFile(t, root, e2eStep, format(doc)) // Claude Code writes, then the formatter hook rewrites
		ev = writtenEv(ev, filepath.Join(root, e2eStep))
		return runHookProcess(t, root, env, ev)
	}
	reindent := func(doc map[string]any) string {
		out, _ := json.MarshalIndent(doc, "", "\t")
		return string(out) + "\n"
	}
	for i, set := range []map[string]any{
		{"status": "IN_PROGRESS", "started_at": "2026-11-22T12:00:00Z"},
		{"status": "EXECUTED", "outcome": "PASS", "outcome_details": "ok", "ended_at": "2026-11-22T12:05:00Z"},
	} {
		if r := write(i, 0, set, reindent); r.code != 0 || r.stdout != "" {
			t.Fatalf("PostToolUse %d after a reformat: %+v; want it confirmed silently", i, r)
		}
	}
	if out := decodeStop(t, runHookProcess(t, root, env, stopEvent(root, transcript, false))); out != (stopOutput{}) {
		t.Fatalf("stop after reformatted writes: %+v; want no opinion", out)
	}

	// A hook that changes a value: the write is not confirmed, and the
	// agent and the user are told which file and what differs.
	r := write(2, 1, map[string]any{"status": "IN_PROGRESS"}, func(doc map[string]any) string {
		stepPhases(doc)[1].(map[string]any)["status"] = "NOT_EXECUTED"
		out, _ := json.MarshalIndent(doc, "", "  ")
		return string(out)
	})
	if !strings.Contains(r.stdout, "DES could not confirm the write to "+e2eStep) || !strings.Contains(r.stdout, `at /tdd_cycle/phase_execution_log/1/status the write allowed \"IN_PROGRESS\", the file holds \"NOT_EXECUTED\"`) ||
		!strings.Contains(r.stdout, "systemMessage") || !strings.Contains(r.stdout, "additionalContext") {
		t.Errorf("PostToolUse after a value changed: %+v", r)
	}
	if got := auditLines(t, root, "WRITE_NOT_CONFIRMED"); len(got) != 1 || got[0]["step_file"] != e2eStep || got[0]["tool_use_id"] != "toolu_f2" {
		t.Errorf("WRITE_NOT_CONFIRMED in the trail: %v", got)
	}
}

// Gate 2's scope check lists the files the subagent changed: the lock files
// des itself leaves beside the task graph and the workflow states, and
// des's own directory, are never among them.
func TestE2EGate2ScopeLeavesDESFilesOut(t *testing.T) {
	t.Parallel()
	root, transcript, env := gate2Project(t)
	doc := readStep(t, root)
	doc["allowed_file_patterns"] = []any{"src/**"}
	raw, _ := json.MarshalIndent(doc, "", "  ")
	writeFile(t, root, e2eStep, string(raw))
	git(t, root, "init", "-q")
	git(t, root, "config", "user.email", "des@example.com")
	git(t, root, "config", "user.name", "des")
	git(t, root, "add", "-A")
	git(t, root, "commit", "-qm", "base")
	prepareThroughTheGuard(t, root, env)
	for _, f := range []string{".claude/state/active_task_graph.json.lock", ".isdlc/state.json.lock", ".des/runs/x.json", "src/cart.js", "notes.md"} {
		writeFile(t, root, f, "")
	}
	decodeStop(t, runHookProcess(t, root, env, stopEvent(root, transcript, false)))
	got := auditLines(t, root, "SCOPE_VIOLATION")
	if len(got) != 1 {
		t.Fatalf("SCOPE_VIOLATION entries: %v", got)
	}
	if files, _ := json.Marshal(got[0]["files"]); string(files) != `["notes.md"]` {
		t.Errorf("out of scope: %s, want only notes.md", files)
	}
}

// The same for a workflow state: a formatter's reformat confirms the write
// (des's memory of the phases moves on, silently); a hook that changes a
// value is said at once and audited.
func TestE2EFormatterHookKeepsTheStateWriteConfirmed(t *testing.T) {
	t.Parallel()
	root := isdlcProject(t)
	st := isdlcState()
	post := func(id string, st map[string]any, landed string) hookRun {
		t.Helper()
		ev := stateWriteEvent(t, root, st)
		ev["tool_use_id"] = id
		if reason := denyReason(t, runHookProcess(t, root, nil, ev)); reason != "" {
			t.Fatalf("%s denied: %s", id, reason)
		}
		writeFile(t, root, ".isdlc/state.json", landed) // Claude Code writes, then the formatter hook rewrites
		ev = writtenEv(ev, filepath.Join(root, ".isdlc", "state.json"))
		return runHookProcess(t, root, nil, ev)
	}
	st["last_updated"] = "2026-11-29T10:00:00Z"
	tabs, _ := json.MarshalIndent(st, "", "\t")
	if r := post("toolu_s1", st, string(tabs)+"\n"); r.code != 0 || r.stdout != "" {
		t.Fatalf("a reformatted state write: %+v; want it confirmed silently", r)
	}
	changed := isdlcState()
	changed["current_phase"] = "08-code-review"
	other, _ := json.Marshal(changed)
	r := post("toolu_s2", st, string(other))
	if !strings.Contains(r.stdout, "DES could not confirm the write to .isdlc/state.json") {
		t.Errorf("a state write a hook changed: %+v", r)
	}
	if lines := auditLines(t, root, "WRITE_NOT_CONFIRMED"); len(lines) != 1 || lines[0]["state_file"] != ".isdlc/state.json" {
		t.Errorf("the unconfirmed state write is not audited: %v", lines)
	}
}

// Found by TestE2EHonestWorkProperty: an "&" in a quoted argument made des count the
// call as leaving a job running for eleven minutes, so a hand edit made
// after it was undone at the next call as that call's doing.
func TestE2EHandEditAfterQuotedAmpersand(t *testing.T) {
	t.Parallel()
	for _, command := range []string{`echo "Tom & Jerry"`, `git commit -qm 'cart & checkout' --allow-empty --no-verify`, `grep -c nohup README.md || true`} {
		t.Run(command, func(t *testing.T) {
			root := effProject(t)
			git(t, root, "config", "user.email", "des@example.com")
			git(t, root, "config", "user.name", "des")
			begin(t, root)
			if _, post := bashToolCall(t, root, "toolu_amp", command); post.Decision != "" {
				t.Fatalf("%s was reported: %+v", command, post)
			}
			edited := `{"stale_threshold_minutes": 30, "audit_log_retention_days": 60}` + "\n"
			writeFile(t, root, ".des/config.json", edited)
			_, post := bashToolCall(t, root, "toolu_ls", "ls")
			noIntegrity(t, "the call after a hand edit", post)
			if got := fileText(t, root, ".des/config.json"); got != edited {
				t.Errorf("the hand edit was undone: %s", got)
			}
		})
	}
}

// Found by TestE2EHonestWorkProperty: a formatter hook's rewrite of a
// step the write guard allowed is the allowed write, also while another
// call runs (a subagent's command beside it, a call the user declined):
// that call's check finds the formatted content, which the baseline must
// hold, not the bytes the guard judged.
func TestE2EFormattedWriteWhileACallRuns(t *testing.T) {
	t.Parallel()
	root, _, env := gate2Project(t)
	git(t, root, "init", "-q")
	bash := func(event, id, command string) hookRun {
		return runHookProcess(t, root, env, effBashEvent(root, event, id, command))
	}
	if r := bash("PreToolUse", "toolu_first", "true"); denyReason(t, r) != "" {
		t.Fatal("true was denied")
	}
	bash("PostToolUse", "toolu_first", "true")
	// A command starts (its PostToolUse comes later, or never).
	if r := bash("PreToolUse", "toolu_long", "sleep 1"); denyReason(t, r) != "" {
		t.Fatal("sleep was denied")
	}
	doc := readStep(t, root)
	stepPhases(doc)[0].(map[string]any)["status"] = "IN_PROGRESS"
	stepPhases(doc)[0].(map[string]any)["started_at"] = "2026-11-22T12:00:00Z"
	next, _ := json.MarshalIndent(doc, "", "  ")
	ev := writeToolEvent(root, "Write", e2eStep, map[string]any{"content": string(next)}, evToolUseID("toolu_fw"))
	if reason := denyReason(t, runHookProcess(t, root, env, ev)); reason != "" {
		t.Fatalf("the write was denied: %s", reason)
	}
	formatted, _ := json.MarshalIndent(doc, "", "\t")
	writeFile(t, root, e2eStep, string(formatted)) // Claude Code writes, the formatter rewrites
	ev = writtenEv(ev, filepath.Join(root, e2eStep))
	if r := runHookProcess(t, root, env, ev); r.stdout != "" {
		t.Fatalf("PostToolUse of the formatted write: %+v", r)
	}
	post := readAfter(t, bash("PostToolUse", "toolu_long", "sleep 1"))
	noIntegrity(t, "the command that ran beside the write", post)
	if got := fileText(t, root, e2eStep); got != string(formatted) {
		t.Errorf("the formatted step was undone:\n%s", got)
	}
}

// A call whose PostToolUse never came (its hook killed at the timeout; a
// call the user declined, found by TestE2EHonestWorkProperty) is checked
// at the end of its batch, as its PostToolUse would have checked it: what
// changed while it was open is restored and told to the model as
// additionalContext, never as a block, which on PostToolBatch would end the
// agent's turn. A second PostToolBatch, or one for a call that ended, does
// nothing; a person's edit after the batch stays.
func TestE2EPostToolBatchEndsACallLeftOpen(t *testing.T) {
	t.Parallel()
	root := effProject(t)
	begin(t, root)
	good := fileText(t, root, ".des/config.json")
	// A script the guard cannot read ahead writes des's settings; the
	// call's PostToolUse hook never finishes.
	writeFile(t, root, "tools/gen.sh", "printf '{}' > .des/config.json\n")
	const command = "sh tools/gen.sh"
	pre := effBashEvent(root, "PreToolUse", "toolu_open", command)
	if reason := denyReason(t, runHookProcess(t, root, nil, pre)); reason != "" {
		t.Fatalf("PreToolUse denied %s: %s", command, reason)
	}
	sh(t, root, command)
	batch := batchEv([]string{"(Bash completed with no output)"}, pre)
	out := readAfter(t, runHookProcess(t, root, nil, batch))
	if out.Decision != "" || out.Specific.HookEventName != "PostToolBatch" || !strings.Contains(out.Specific.AdditionalContext, "[DES-INTEGRITY]") || !strings.Contains(out.SystemMessage, ".des/config.json") {
		t.Fatalf("PostToolBatch = %+v; want DES-INTEGRITY as additionalContext, no decision", out)
	}
	if got := fileText(t, root, ".des/config.json"); got != good {
		t.Errorf(".des/config.json after the batch: %q; want it restored to %q", got, good)
	}
	// The ref snapshot PreToolUse kept for the call is gone with it.
	if snaps, _ := filepath.Glob(filepath.Join(filepath.Dir(evidenceDir(root)), "refs", "*.json")); len(snaps) != 0 {
		t.Errorf("ref snapshots left after the batch: %v", snaps)
	}
	if again := readAfter(t, runHookProcess(t, root, nil, batch)); again != (afterTool{}) {
		t.Errorf("a second PostToolBatch: %+v; want nothing", again)
	}
	edited := `{"stale_threshold_minutes": 30}` + "\n"
	writeFile(t, root, ".des/config.json", edited)
	_, post := bashToolCall(t, root, "toolu_ls", "ls")
	noIntegrity(t, "the call after the batch and a hand edit", post)
	if got := fileText(t, root, ".des/config.json"); got != edited {
		t.Errorf("the hand edit was undone: %s", got)
	}
	if again := readAfter(t, runHookProcess(t, root, nil, batchEv([]string{"file"}, effBashEvent(root, "PreToolUse", "toolu_ls", "ls")))); again != (afterTool{}) {
		t.Errorf("PostToolBatch of a call whose PostToolUse came: %+v; want nothing", again)
	}
}
