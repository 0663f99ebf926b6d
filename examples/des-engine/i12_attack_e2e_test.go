package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/audit"
)

// The team's phase requirement files (setting phase_requirements_files)
// decide what the iSDLC phase gates require: an agent that rewrites them
// (Write, Edit, or a Bash redirection) relaxes the rules that judge it, as
// a policy file would. They are DES's to protect, like the policy
// directories.
func TestE2EAttackPhaseRequirementFilesProtected(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	const file = "team/iteration-requirements.json"
	writeFile(t, root, file, `{"phase_requirements": {}}`)
	writeFile(t, root, ".des/config.json", `{"phase_requirements_files": ["./`+file+`"]}`)
	for _, c := range []struct {
		name  string
		event map[string]any
	}{
		{"Write", writeEvent(root, "Write", file)},
		{"Edit", writeEvent(root, "Edit", file)},
		{"Bash", bashEvent(t, root, "echo '{\"phase_requirements\": {}}' > "+file)},
		{"Bash rm of the directory", bashEvent(t, root, "rm -r team")},
	} {
		t.Run(c.name, func(t *testing.T) {
			reason := denyReason(t, runHookProcess(t, root, nil, c.event))
			if !strings.Contains(reason, "[DES-PROTECTED-PATH]") {
				t.Errorf("reason = %q, want DES-PROTECTED-PATH", reason)
			}
		})
	}
	// The setting from the environment is protected the same way.
	env := []string{"DES_PHASE_REQUIREMENTS_FILES=team/artifact-paths.json"}
	writeFile(t, root, "team/artifact-paths.json", `{"phases": {}}`)
	if reason := denyReason(t, runHookProcess(t, root, env, writeEvent(root, "Write", "team/artifact-paths.json"))); !strings.Contains(reason, "[DES-PROTECTED-PATH]") {
		t.Errorf("env setting: reason = %q, want DES-PROTECTED-PATH", reason)
	}
	// A neighbour of the file is not.
	if reason := denyReason(t, runHookProcess(t, root, nil, writeEvent(root, "Write", "team/notes.md"))); reason != "" {
		t.Errorf("unrelated file denied: %q", reason)
	}
}

// A stop that fails because the subagent's transcript was tampered with
// says nothing of the run can be trusted. The resolution des gives (stale
// --resolve, then the step again) must leave the phases that run claimed
// to redo: otherwise the resolution alone settles the failure and Gate 3
// commits the tampered run's claims as they are.
func TestE2EAttackTamperedRunIsNotCommittedByResolvingIt(t *testing.T) {
	t.Parallel()
	f := newFollower(t)
	f.redoAll(canonicalPhases)
	f.write(withTask("DONE"))
	if err := os.Remove(f.transcript); err != nil { // what `rm` in the subagent does
		t.Fatal(err)
	}
	out := f.stop(false)
	if !strings.Contains(out.SystemMessage, "[DES-TRANSCRIPT-TAMPERED]") {
		t.Fatalf("stop: %+v", out)
	}
	f.read(out.SystemMessage)
	f.command(f.line("^Make the step resumable|^Reset "))
	r := f.precommit()
	if r.code == 0 {
		t.Fatalf("the tampered run's phases commit after stale --resolve alone:\n%s%s", r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "[DES-COMMIT-PHASE-OPEN]") {
		t.Errorf("want the run's phases open to redo:\n%s", r.stdout)
	}
	// Redone honestly by the subagent started again, the step commits.
	f.resume()
	var todo []string
	for _, p := range stepPhases(readStep(t, f.root)) {
		if p := p.(map[string]any); p["status"] == "NOT_EXECUTED" {
			todo = append(todo, p["phase_name"].(string))
		}
	}
	if len(todo) != len(canonicalPhases) {
		t.Errorf("phases to redo = %v, want every phase the tampered run finished", todo)
	}
	f.redoAll(todo)
	f.write(withTask("DONE"))
	f.passes(false)
	if r := f.precommit(); r.code != 0 {
		t.Fatalf("the redone step does not commit:\n%s%s", r.stdout, r.stderr)
	}
}

// `des-hook test --fmt DIR` rewrites the .rego files of DIR, and only
// those: a symbolic link in DIR (to a team policy in a protected
// directory, say) is not followed out of it and rewritten.
func TestE2EAttackTestFmtFollowsNoLink(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	const team = "package team\n\nallow   if   true\n"
	writeFile(t, root, ".des/policies/team.rego", team)
	writeFile(t, root, "mine/own_test.rego", "package mine_test\n\ntest_x if true\n")
	if err := os.Symlink(filepath.Join(root, ".des", "policies", "team.rego"), filepath.Join(root, "mine", "linked.rego")); err != nil {
		t.Fatal(err)
	}
	r := runTestCommand(t, root, "--fmt", "mine")
	if raw, _ := os.ReadFile(filepath.Join(root, ".des", "policies", "team.rego")); string(raw) != team {
		t.Errorf("--fmt rewrote the team's policy through a link:\n%s\n(exit %d, %s%s)", raw, r.code, r.stdout, r.stderr)
	}
	if fi, err := os.Lstat(filepath.Join(root, "mine", "linked.rego")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v", err)
	}
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, "linked.rego") {
		t.Errorf("a linked file left unformatted must be reported: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// A subagent started on its step through a symbolic link (the marker names
// alias/01-01.json, alias a link to the steps directory) works on the same
// file. Gate 2's verdict must be recorded under the step's own name, the
// one Gate 3 reads: under the link's name, a failed stop never reaches the
// commit gate, and the step it failed commits.
func TestE2EAttackStepThroughALinkKeepsItsGate2Failure(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	claude := t.TempDir()
	var phases []string
	for i, name := range canonicalPhases {
		phases = append(phases, `{"phase_name": "`+name+`", "phase_index": `+itoa(i)+`, "status": "NOT_EXECUTED"}`)
	}
	writeFile(t, root, e2eStep, `{"task_id": "01-01", "state": {"status": "TODO"}, "tdd_cycle": {"phase_execution_log": [`+strings.Join(phases, ", ")+`]}}`)
	if err := os.Symlink(filepath.Join(root, filepath.Dir(e2eStep)), filepath.Join(root, "alias")); err != nil {
		t.Fatal(err)
	}
	const alias = "alias/01-01.json"
	env := []string{"CLAUDE_CONFIG_DIR=" + claude}
	prompt := strings.ReplaceAll(renderPrompt(t, "execute-step"), e2eStep, alias)
	if !strings.Contains(prompt, alias) {
		t.Fatal("the prompt does not name the link")
	}
	if reason := denyReason(t, runHookProcess(t, root, env, agentEvent(root, "Agent", prompt))); reason != "" {
		t.Fatalf("Gate 1 denied: %s", reason)
	}
	transcript := filepath.Join(claude, "projects", "p", "s1", "subagents", "agent-a6fbb44895c6a27dd.jsonl")
	line, _ := json.Marshal(map[string]any{
		"parentUuid": nil, "isSidechain": true, "agentId": "a6fbb44895c6a27dd", "type": "user",
		"message": map[string]any{"role": "user", "content": prompt}, "sessionId": "s1", "version": "2.1.270",
	})
	writeFile(t, filepath.Dir(transcript), filepath.Base(transcript), string(line)+"\n")

	completeAroundTheGuard(t, root)
	out := decodeStop(t, runHookProcess(t, root, env, stopEvent(root, transcript, false)))
	if !strings.Contains(out.SystemMessage, "[DES-PHASE-JUMP]") || strings.Contains(out.SystemMessage, "[DES-TRANSCRIPT-TAMPERED]") {
		t.Fatalf("stop: %+v", out)
	}
	r := runBinCLI(t, root, "precommit", e2eStep)
	if r.code == 0 || !strings.Contains(r.stdout, "[DES-COMMIT-GATE2]") {
		t.Errorf("the step Gate 2 failed commits:\nexit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, e := range auditEntries(t, root) {
		if sf, ok := e.Fields["step_file"]; ok && sf != e2eStep {
			t.Errorf("%s recorded under %v, not the step's own name %s", e.Event, sf, e2eStep)
		}
	}
}

// auditEntries is every entry of the project's audit trail.
func auditEntries(t *testing.T, root string) []audit.Entry {
	t.Helper()
	log, err := audit.Open(filepath.Join(root, ".des", "audit"))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := log.Read(t.Context(), audit.Query{})
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

// What a tool call does to a phase requirement file without naming it (a
// script the Bash analyzer cannot read) is undone after the call, as for a
// policy file; and Claude Code is told to protect the files too.
func TestE2EAttackPhaseRequirementFileRestored(t *testing.T) {
	t.Parallel()
	root := effProject(t)
	const file = "team/iteration-requirements.json"
	const orig = `{"phase_requirements": {"06-implementation": {"test_iteration": {"enabled": true}}}}` + "\n"
	writeFile(t, root, file, orig)
	writeFile(t, root, ".des/config.json", `{"phase_requirements_files": ["`+file+`"]}`)
	begin(t, root)
	_, post := bashToolCall(t, root, "toolu_req", `python3 -c "open('team/'+'iteration-requirements.json','w').write('{}')"`)
	wantRestored(t, post, file)
	if got := fileText(t, root, file); got != orig {
		t.Errorf("%s = %q, want it restored", file, got)
	}

	res := runCLI(t, envMap{"CLAUDE_PROJECT_DIR": root}, "settings")
	for _, rule := range []string{"Edit(" + settingsPath(file) + ")", `"` + sandboxPath(file) + `"`} {
		if !strings.Contains(res.stdout, rule) {
			t.Errorf("des-hook settings does not protect %s (%s):\n%s", file, rule, res.stdout)
		}
	}
}

// The organisation's kept bundles and the decision logs not yet pushed are
// des's: an agent that edits them rewrites the rules or the fleet's record.
func TestE2EAttackKeptBundlesAndDecisionLogsProtected(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, root, ".des/bundles/acme/bundle.tar.gz", "kept")
	writeFile(t, root, ".des/decisions/2026-11-25.jsonl", "{}\n")
	for _, c := range []struct {
		name  string
		event map[string]any
	}{
		{"Write a kept bundle", writeEvent(root, "Write", ".des/bundles/acme/bundle.tar.gz")},
		{"Edit a decision log", writeEvent(root, "Edit", ".des/decisions/2026-11-25.jsonl")},
		{"Bash rm of the decision logs", bashEvent(t, root, "rm -rf .des/decisions")},
		{"Bash write of the push state", bashEvent(t, root, "echo '{}' > .des/decisions/push-state.json")},
	} {
		t.Run(c.name, func(t *testing.T) {
			reason := denyReason(t, runHookProcess(t, root, nil, c.event))
			if !strings.Contains(reason, "[DES-PROTECTED-PATH]") {
				t.Errorf("reason = %q, want DES-PROTECTED-PATH", reason)
			}
		})
	}
}
