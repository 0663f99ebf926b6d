package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/audit"
)

const stepPath = "docs/feature/shop/steps/01-02.json"

var canonicalPhases = []string{"PREPARE", "RED_ACCEPTANCE", "RED_UNIT", "GREEN_UNIT", "CHECK_ACCEPTANCE", "GREEN_ACCEPTANCE", "REVIEW",
	"REFACTOR_L1", "REFACTOR_L2", "REFACTOR_L3", "REFACTOR_L4", "POST_REFACTOR_REVIEW", "FINAL_VALIDATE", "COMMIT"}

// finishedStep is a step file whose 14 phases are done; lastStatus is
// the COMMIT phase's status, so "IN_PROGRESS" makes it unfinished.
func finishedStep(t *testing.T, lastStatus string) string {
	t.Helper()
	var log []any
	for i, name := range canonicalPhases {
		p := map[string]any{"phase_name": name, "phase_index": i, "status": "EXECUTED", "outcome": "PASS"}
		if name == "REFACTOR_L4" {
			p = map[string]any{"phase_name": name, "phase_index": i, "status": "SKIPPED", "blocked_by": "NOT_APPLICABLE: nothing to abstract"}
		}
		if name == "COMMIT" && lastStatus != "EXECUTED" {
			p["status"], p["outcome"] = lastStatus, nil
		}
		log = append(log, p)
	}
	raw, err := json.MarshalIndent(map[string]any{"task_id": "01-02", "state": map[string]any{"status": "IN_PROGRESS"},
		"tdd_cycle": map[string]any{"phase_execution_log": log}}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(raw) + "\n"
}

// gitProject is a git repository (the project root) with an identity of its
// own and one commit.
func gitProject(t testing.TB) string {
	t.Helper()
	return newTestProject(t, projGit(""), projFiles("README.md", "shop\n", ".gitignore", ".des/\n"))
}

// runIn runs a subcommand of the built binary in dir with extra
// environment variables (CLAUDE_PROJECT_DIR is not set unless given).
func runIn(t testing.TB, dir string, env []string, args ...string) hookRun {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), hookBin, args...)
	cmd.Env = append(cleanEnviron(), env...)
	cmd.Dir = dir
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return hookRun{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
}

func commitEntries(t *testing.T, root string) []audit.Entry {
	t.Helper()
	log, err := audit.Open(filepath.Join(root, ".des", "audit"))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := log.Read(t.Context(), audit.Query{Events: []audit.EventType{audit.CommitValidationPassed, audit.CommitValidationFailed}})
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

func TestE2EPrecommitStagedFiles(t *testing.T) {
	t.Parallel()
	root := gitProject(t)
	fixture, err := os.ReadFile("testdata/precommit-unfinished-step.json")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, stepPath, string(fixture))
	writeFile(t, root, "src/cart.go", "package cart\n")
	git(t, root, "add", ".")
	r := runIn(t, root, nil, "precommit")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		stepPath + ": [DES-COMMIT-SKIP-REASON] " + `phase RED_UNIT is SKIPPED with blocked_by "Tests already GREEN - the acceptance test drives the change", which has no accepted prefix`,
		stepPath + ": [DES-COMMIT-GAP] phase RED_UNIT is SKIPPED without an accepted reason",
		stepPath + ": [DES-COMMIT-DEFERRED] " + `phase REFACTOR_L3 (status "SKIPPED") is deferred`,
		stepPath + ": [DES-COMMIT-STATUS] " + `phase FINAL_VALIDATE has status "COMPLETED"`,
		stepPath + ": [DES-COMMIT-PHASE-OPEN] phase COMMIT is IN_PROGRESS",
		"\nRecovery:\n- ",
		"\nGate 3: 1 of 1 step file failed (6 violations); the commit is refused\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	// The recovery: only the steps that apply (no phase is missing), in
	// the order to do them, abandoning the work last.
	_, rec, _ := strings.Cut(r.stdout, "\nRecovery:\n")
	rec, _, _ = strings.Cut(rec, "\nGate 3: ")
	var starts []string
	for _, l := range strings.Split(rec, "\n") {
		starts = append(starts, strings.SplitN(strings.TrimPrefix(l, "- "), ":", 2)[0])
	}
	if want := []string{"Give every phase a status through the write guard", "Run the phases in canonical order", "Finish every open phase through the write guard (a NOT_EXECUTED one goes IN_PROGRESS first)",
		"Write blocked_by of every SKIPPED phase as PREFIX", "Do the deferred work now if its phase is not finished", "A SKIPPED phase is final", "If the work was abandoned, write state.status FAILED, reset it with `des-hook stale --resolve " + stepPath + "` and run the step again."}; !slices.Equal(starts, want) {
		t.Errorf("recovery lines (their starts):\n got %q\nwant %q", starts, want)
	}
	if e := commitEntries(t, root); len(e) != 1 || e[0].Event != audit.CommitValidationFailed || e[0].Fields["source"] != "cli" || e[0].Fields["step_file"] != stepPath {
		t.Errorf("audit %+v", e)
	}

	// The staged content is judged, not the work tree: staged finished,
	// work tree unfinished passes...
	writeFile(t, root, stepPath, finishedStep(t, "EXECUTED"))
	git(t, root, "add", stepPath)
	writeFile(t, root, stepPath, finishedStep(t, "IN_PROGRESS"))
	if r := runIn(t, root, nil, "precommit"); r.code != 0 || r.stdout != "Gate 3: 1 step file passed\n" {
		t.Errorf("staged finished step: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// ...and the other way round fails.
	git(t, root, "add", stepPath)
	writeFile(t, root, stepPath, finishedStep(t, "EXECUTED"))
	if r := runIn(t, root, nil, "precommit"); r.code != 1 {
		t.Errorf("staged unfinished step: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// From a subdirectory, the repository and the root are the same.
	if r := runIn(t, filepath.Join(root, "docs"), nil, "precommit"); r.code != 1 || !strings.Contains(r.stdout, stepPath+": [DES-COMMIT-PHASE-OPEN]") {
		t.Errorf("from a subdirectory: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestE2EPrecommitNothingToJudge(t *testing.T) {
	t.Parallel()
	root := gitProject(t)
	writeFile(t, root, "src/cart.go", "package cart\n")
	writeFile(t, root, "docs/feature/shop/steps/notes.json", "{}") // not NN-NN
	writeFile(t, root, stepPath, finishedStep(t, "IN_PROGRESS"))   // not staged
	git(t, root, "add", "src", "docs/feature/shop/steps/notes.json")
	r := runIn(t, root, nil, "precommit")
	if r.code != 0 || r.stdout != "Gate 3: no staged step files\n" {
		t.Errorf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if len(commitEntries(t, root)) != 0 {
		t.Error("nothing judged, yet something was recorded")
	}
}

func TestE2EPrecommitExplicitFiles(t *testing.T) {
	t.Parallel()
	root := t.TempDir() // no git needed
	writeFile(t, root, stepPath, finishedStep(t, "EXECUTED"))
	writeFile(t, root, "docs/feature/shop/steps/01-03.json", finishedStep(t, "NOT_EXECUTED"))
	env := []string{"CLAUDE_PROJECT_DIR=" + root}
	dir := filepath.Join(root, "docs", "feature", "shop")
	r := runIn(t, dir, env, "precommit", "steps/01-02.json")
	if r.code != 0 || r.stdout != "Gate 3: 1 step file passed\n" {
		t.Errorf("passing file: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runIn(t, dir, env, "precommit", "steps/01-02.json", filepath.Join(root, "docs/feature/shop/steps/01-03.json"))
	if r.code != 1 || !strings.Contains(r.stdout, "docs/feature/shop/steps/01-03.json: [DES-COMMIT-PHASE-OPEN]") ||
		!strings.Contains(r.stdout, "Gate 3: 1 of 2 step files failed (1 violation); the commit is refused") {
		t.Errorf("one failing file: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if e := commitEntries(t, root); len(e) != 3 {
		t.Errorf("audit has %d entries, want 3 (one per file and run)", len(e))
	}

	outside := filepath.Join(t.TempDir(), "steps", "01-01.json")
	writeFile(t, filepath.Dir(outside), "01-01.json", "{}")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"steps/09-09.json"}, "read step file docs/feature/shop/steps/09-09.json: file does not exist"},
		{[]string{outside}, "outside the project root"},
		{[]string{"--frobnicate"}, "flag provided but not defined"},
		{[]string{"--command", "x", "steps/01-02.json"}, "--command goes with --install"},
		{[]string{"--install", "steps/01-02.json"}, "--install takes no files"},
	} {
		r := runIn(t, dir, env, append([]string{"precommit"}, c.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("precommit %v: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
	// Without files and outside a repository, there is nothing git can list.
	if r := runIn(t, root, env, "precommit"); r.code != 2 || !strings.Contains(r.stderr, "cannot list the staged step files") {
		t.Errorf("no repository: exit %d, stderr %q", r.code, r.stderr)
	}
}

// DES could not judge: a bad setting, or an audit trail it cannot read.
// The commit is refused (status 2) with the cause.
func TestE2EPrecommitFailsClosed(t *testing.T) {
	t.Parallel()
	root := gitProject(t)
	writeFile(t, root, stepPath, finishedStep(t, "EXECUTED"))
	git(t, root, "add", stepPath)
	r := runIn(t, root, []string{"DES_STALE_THRESHOLD_MINUTES=soon"}, "precommit")
	if r.code != 2 || !strings.Contains(r.stderr, "stale_threshold_minutes") {
		t.Errorf("bad setting: exit %d, stderr %q", r.code, r.stderr)
	}
	writeFile(t, root, ".des/audit/audit-2026-11-20.log", "{\"timestamp\":\"2026-11-20T10:00:00Z\",\"event\":\"SUBAGENT_STOP_VALIDATION\",\"step_file\":\"x\"}\nnot json\n")
	r = runIn(t, root, nil, "precommit")
	if r.code != 2 || !strings.Contains(r.stderr, "[DES-INTERNAL] ") || !strings.Contains(r.stderr, "audit-2026-11-20.log") || r.stdout != "" {
		t.Errorf("malformed trail: exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestE2EPrecommitGate2Failure(t *testing.T) {
	t.Parallel()
	root := gitProject(t)
	writeFile(t, root, stepPath, finishedStep(t, "EXECUTED"))
	git(t, root, "add", stepPath)
	writeFile(t, root, ".des/audit/audit-2026-11-20.log",
		`{"timestamp":"2026-11-20T10:00:00Z","event":"SUBAGENT_STOP_VALIDATION","codes":["DES-PHASE-ABANDONED"],"outcome":"FAIL","step_file":"`+stepPath+`"}`+"\n")
	r := runIn(t, root, nil, "precommit")
	if r.code != 1 || !strings.Contains(r.stdout, stepPath+": [DES-COMMIT-GATE2] Gate 2 failed this step at 2026-11-20T10:00:00Z (DES-PHASE-ABANDONED)") {
		t.Errorf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	writeFile(t, root, ".des/audit/audit-2026-11-21.log",
		`{"timestamp":"2026-11-21T10:00:00Z","event":"STALE_RESOLUTION","from":"FAILED","phases":[],"step_file":"`+stepPath+`","to":"PARTIAL"}`+"\n")
	if r := runIn(t, root, nil, "precommit"); r.code != 0 {
		t.Errorf("after the resolution: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// A repository larger than the project: staged step files outside the root
// are another project's, left out with a note.
func TestE2EPrecommitOutsideTheProject(t *testing.T) {
	t.Parallel()
	repo := gitProject(t)
	root := filepath.Join(repo, "shop")
	writeFile(t, root, stepPath, finishedStep(t, "EXECUTED"))
	writeFile(t, repo, "billing/steps/01-01.json", finishedStep(t, "NOT_EXECUTED"))
	git(t, repo, "add", ".")
	r := runIn(t, repo, []string{"CLAUDE_PROJECT_DIR=" + root}, "precommit")
	if r.code != 0 || r.stdout != "Gate 3: 1 step file passed\n" || !strings.Contains(r.stderr, "billing/steps/01-01.json is outside the project root") {
		t.Errorf("exit %d\nstdout %q\nstderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestE2EPrecommitInstall(t *testing.T) {
	t.Parallel()
	root := gitProject(t)
	r := runIn(t, root, nil, "precommit", "--install")
	hookFile := filepath.Join(root, ".git", "hooks", "pre-commit")
	if r.code != 0 || !strings.Contains(r.stdout, "installed "+hookFile) {
		t.Fatalf("install: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	script, err := os.ReadFile(hookFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(script), "#!/bin/sh\n") || !strings.Contains(string(script), hookBin+" precommit --git-hook") {
		t.Errorf("script:\n%s", script)
	}
	if fi, _ := os.Stat(hookFile); fi.Mode().Perm()&0o111 == 0 {
		t.Errorf("hook mode %v is not executable", fi.Mode())
	}

	// git runs it: an unfinished step is refused, a finished one commits.
	writeFile(t, root, stepPath, finishedStep(t, "IN_PROGRESS"))
	git(t, root, "add", stepPath)
	out, code := gitRun(t, root, "commit", "-qm", "step 01-02")
	if code == 0 || !strings.Contains(out, "[DES-COMMIT-PHASE-OPEN]") || !strings.Contains(out, "the commit is refused") {
		t.Errorf("commit of an unfinished step: exit %d\n%s", code, out)
	}
	// git commit -a: the hook judges the index git prepared for the commit,
	// which holds the work tree's finished version.
	writeFile(t, root, stepPath, finishedStep(t, "EXECUTED"))
	if out, code := gitRun(t, root, "commit", "-qam", "step 01-02"); code != 0 {
		t.Fatalf("commit -a of a finished step: exit %d\n%s", code, out)
	}
	// ... and the other way round.
	writeFile(t, root, stepPath, finishedStep(t, "NOT_EXECUTED"))
	if out, code := gitRun(t, root, "commit", "-qam", "reopen"); code == 0 || !strings.Contains(out, "[DES-COMMIT-PHASE-OPEN]") {
		t.Errorf("commit -a of an unfinished step: exit %d\n%s", code, out)
	}
	var sources []string
	for _, e := range commitEntries(t, root) {
		sources = append(sources, string(e.Event)+" "+e.Fields["source"].(string))
	}
	// The commit that lands is judged again at its branch's move
	// (reference-transaction).
	want := []string{"COMMIT_VALIDATION_FAILED git-hook", "COMMIT_VALIDATION_PASSED git-hook", "COMMIT_VALIDATION_PASSED ref-update", "COMMIT_VALIDATION_FAILED git-hook"}
	if !slices.Equal(sources, want) {
		t.Errorf("audit %v, want %v", sources, want)
	}

	// Installing again rewrites DES's own hook; another hook is left alone.
	if r := runIn(t, root, nil, "precommit", "--install", "--command", "/opt/des/hook"); r.code != 0 {
		t.Errorf("reinstall: exit %d\n%s", r.code, r.stderr)
	}
	if script, _ := os.ReadFile(hookFile); !strings.Contains(string(script), "exec /opt/des/hook precommit --git-hook") {
		t.Errorf("reinstalled script:\n%s", script)
	}
	if script, _ := os.ReadFile(hookFile); !strings.Contains(string(script), "# Installed by `des-hook precommit --install`") {
		t.Errorf("the script does not name the command des-hook:\n%s", script)
	}
	// A hook an earlier des wrote, marked with the command's old name, is
	// still des's own: installing rewrites it.
	writeFile(t, root, ".git/hooks/pre-commit", "#!/bin/sh\n# Installed by `hook precommit --install` (des).\nexec /old/hook precommit --git-hook\n")
	if r := runIn(t, root, nil, "precommit", "--install", "--command", "/opt/des/des-hook"); r.code != 0 {
		t.Errorf("reinstall over an earlier des's hook: exit %d\n%s", r.code, r.stderr)
	}
	if script, _ := os.ReadFile(hookFile); !strings.Contains(string(script), "exec /opt/des/des-hook precommit --git-hook") {
		t.Errorf("an earlier des's hook was not rewritten:\n%s", script)
	}
	foreign := "#!/bin/sh\nnpm run lint\n"
	writeFile(t, root, ".git/hooks/pre-commit", foreign)
	r = runIn(t, root, nil, "precommit", "--install")
	if r.code != 2 || !strings.Contains(r.stderr, "was not written by DES") || !strings.Contains(r.stderr, "precommit --git-hook --root "+root) || !strings.Contains(r.stderr, "|| exit 1") {
		t.Errorf("foreign hook: exit %d\n%s", r.code, r.stderr)
	}
	if got, _ := os.ReadFile(hookFile); string(got) != foreign {
		t.Errorf("the foreign hook was changed:\n%s", got)
	}
}

func TestE2EPrecommitInstallHooksPath(t *testing.T) {
	t.Parallel()
	root := gitProject(t)
	git(t, root, "config", "core.hooksPath", "tools/githooks")
	r := runIn(t, filepath.Join(root), nil, "precommit", "--install")
	want := filepath.Join(root, "tools", "githooks", "pre-commit")
	if r.code != 0 || !strings.Contains(r.stdout, want) {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	writeFile(t, root, stepPath, finishedStep(t, "IN_PROGRESS"))
	git(t, root, "add", stepPath)
	if out, code := gitRun(t, root, "commit", "-qm", "x"); code == 0 || !strings.Contains(out, "[DES-COMMIT-PHASE-OPEN]") {
		t.Errorf("git did not run the hook in core.hooksPath: exit %d\n%s", code, out)
	}
	if r := runIn(t, t.TempDir(), nil, "precommit", "--install"); r.code != 2 || !strings.Contains(r.stderr, "git hooks directory") {
		t.Errorf("outside a repository: exit %d\n%s", r.code, r.stderr)
	}
}

// A project inside a larger repository: the hook installed from the project
// judges with the project's audit trail, though a terminal commit carries no
// CLAUDE_PROJECT_DIR and git's top level is the larger repository.
func TestE2EPrecommitInstallInAMonorepo(t *testing.T) {
	t.Parallel()
	repo := gitProject(t)
	proj := filepath.Join(repo, "shop")
	writeFile(t, proj, ".des/audit/audit-2026-11-20.log",
		`{"timestamp":"2026-11-20T10:00:00Z","event":"SUBAGENT_STOP_VALIDATION","action":"record","codes":["DES-PHASE-ABANDONED"],"outcome":"FAIL","step_file":"`+stepPath+`"}`+"\n")
	if r := runIn(t, proj, nil, "precommit", "--install"); r.code != 0 || !strings.Contains(r.stdout, "for the project "+proj) {
		t.Fatalf("install: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	writeFile(t, proj, stepPath, finishedStep(t, "EXECUTED"))
	git(t, repo, "add", ".")
	out, code := gitRun(t, repo, "commit", "-qm", "finished, but Gate 2 failed it")
	if code == 0 || !strings.Contains(out, "[DES-COMMIT-GATE2]") {
		t.Errorf("commit: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(repo, ".des")); err == nil {
		t.Error("the hook judged with a trail at the repository's top level")
	}
}

func TestPrintablePath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"docs/steps/01-01.json":        "docs/steps/01-01.json",
		"docs/feat x/steps/01-01.json": "docs/feat x/steps/01-01.json",
		"docs/a\nb/steps/01-01.json":   `"docs/a\nb/steps/01-01.json"`,
	} {
		if got := printablePath(in); got != want {
			t.Errorf("printablePath(%q) = %s, want %s", in, got, want)
		}
	}
}
