package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/testenv"
)

// runTestCommand runs the built binary's `test` subcommand in dir, with
// CLAUDE_PROJECT_DIR unset, as a user does in a terminal.
func runTestCommand(t *testing.T, dir string, args ...string) hookRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, hookBin, append([]string{"test"}, args...)...)
	cmd.Env = cleanEnviron()
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("run %s test: %v", hookBin, err)
		}
	}
	return hookRun{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
}

// teamProject is a team's own project, as the README tells it to start:
// a rule in a built-in gate, its tests, and a data file changing a built-in
// table. No des clone, no opa.
func teamProject(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	writeFile(t, root, ".des/policies/team.rego", `package des.gates.pre_commit

# METADATA
# title: Every step names its owner
# custom:
#   code: TEAM-OWNER
#   severity: deny
deny contains {"code": "TEAM-OWNER", "msg": sprintf("%s names no owner", [input.step.path]), "field": "/owner"} if {
	not input.step.document.owner
}
`)
	writeFile(t, root, ".des/policies/team_test.rego", `package team_test

import data.des.gates.pre_commit

step(doc) := {"step": {"path": "steps/01-01.json", "document": doc, "phase_log": "", "phases": []}, "gate2": []}

test_no_owner_is_denied if {
	"TEAM-OWNER" in {v.code | some v in pre_commit.deny} with input as step({"task_id": "01-01"})
}

test_owner_passes if {
	not "TEAM-OWNER" in {v.code | some v in pre_commit.deny} with input as step({"task_id": "01-01", "owner": "ana"})
}

test_ad_hoc_prompts_are_checked_in_full if {
	data.des.sections.origins["ad-hoc"] == "full"
	data.des.sections.origins["command:/nw:execute"] == "full"
}
`)
	writeFile(t, root, ".des/policies/des/sections/data.json", `{"origins": {"ad-hoc": "full"}}`)
	return root
}

func TestE2ETestCommandInATeamsProject(t *testing.T) {
	t.Parallel()
	testenv.Long(t) // seconds of sleeps and processes: CI runs it (DES_TEST_LONG=1)
	root := teamProject(t)
	sub := filepath.Join(root, "src")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	// From the project root, and from a directory below it in a git
	// repository: the configured directory is found from the root.
	if out, err := exec.Command("git", "init", "-q", root).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	for _, dir := range []string{root, sub} {
		r := runTestCommand(t, dir, "--coverage", "--min-coverage", "90")
		if r.code != 0 || !strings.Contains(r.stdout, "PASS: 3/3\n") || r.stderr != "" {
			t.Fatalf("in %s: exit %d\nstdout:\n%s\nstderr:\n%s", dir, r.code, r.stdout, r.stderr)
		}
		// Coverage names the team's file only, as the project sees it.
		if !strings.Contains(r.stdout, "COVERAGE: 100.0% of the team's lines") || !strings.Contains(r.stdout, ".des/policies/team.rego: 100.0%") || strings.Contains(r.stdout, "rego/des/") {
			t.Errorf("coverage:\n%s", r.stdout)
		}
	}

	// A failing test: exit 1, named with its location as opa test does.
	writeFile(t, root, ".des/policies/more_test.rego", "package team_test\n\ntest_wrong if {\n\tlevel := data.des.sections.origins[\"ad-hoc\"]\n\tupper(level) == \"NONE\"\n}\n")
	r := runTestCommand(t, root)
	if r.code != 1 || !strings.Contains(r.stdout, ".des/policies/more_test.rego:3:\ndata.team_test.test_wrong: FAIL (") || !strings.Contains(r.stdout, "PASS: 3/4\nFAIL: 1/4\n") {
		t.Errorf("failing test: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// -v: every test, and the expression that failed.
	r = runTestCommand(t, root, "-v")
	if r.code != 1 || !strings.Contains(r.stdout, "data.team_test.test_owner_passes: PASS (") || !strings.Contains(r.stdout, "failed at .des/policies/more_test.rego:5: upper(level) == \"NONE\"") {
		t.Errorf("-v: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// JSON: every result with its outcome.
	r = runTestCommand(t, root, "--format", "json")
	var rep struct {
		Results []struct{ Name, Outcome string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 1 || len(rep.Results) != 4 || rep.Results[0].Outcome != "fail" {
		t.Errorf("json: exit %d, %+v, %v\n%s", r.code, rep, err, r.stdout)
	}

	// A file that does not parse: exit 2, with file:line.
	writeFile(t, root, ".des/policies/more_test.rego", "package team_test\n\ntest_wrong if {\n")
	r = runTestCommand(t, root)
	if r.code != 2 || !regexp.MustCompile(`\.des/policies/more_test\.rego:\d+:\d+: rego_parse_error`).MatchString(r.stderr) {
		t.Errorf("parse error: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// A file not formatted: exit 1 and the fix; --fmt applies it.
	writeFile(t, root, ".des/policies/more_test.rego", "package team_test\n\ntest_more   if   true\n")
	r = runTestCommand(t, root)
	if r.code != 1 || !strings.Contains(r.stdout, "FMT: .des/policies/more_test.rego is not formatted") || !strings.Contains(r.stdout, "des-hook test --fmt") {
		t.Errorf("unformatted: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r = runTestCommand(t, root, "--fmt"); r.code != 0 || !strings.Contains(r.stdout, "PASS: 4/4") {
		t.Errorf("--fmt: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestE2ETestCommandCannotRun(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	// The default directory missing: exit 2, saying where to put the files.
	if r := runTestCommand(t, root); r.code != 2 || !strings.Contains(r.stderr, ".des/policies does not exist") {
		t.Errorf("no policy directory: exit %d %s", r.code, r.stderr)
	}
	// Policies but no tests: exit 2 (opa test would pass with nothing run).
	writeFile(t, root, "rules/team.rego", "package team\n\nallow if input.ok\n")
	if r := runTestCommand(t, root, "rules"); r.code != 2 || !strings.Contains(r.stderr, "no tests found in rules") {
		t.Errorf("no tests: exit %d %s", r.code, r.stderr)
	}
	if r := runTestCommand(t, root, "--format", "xml", "rules"); r.code != 2 {
		t.Errorf("bad --format: exit %d", r.code)
	}
}

// A policy the hook refuses to compile (strict: an unused variable) fails
// des-hook test with the hook's own error, where it used to pass its tests
// and then be refused by the hook.
func TestE2ETestCommandCompilesAsTheHook(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", root).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	writeFile(t, root, ".des/policies/team/team.rego", "package des.gates.pre_commit\n\ndeny contains {\"code\": \"TEAM-X\", \"msg\": \"x\"} if {\n\tx := 1\n\tinput.never\n}\n")
	writeFile(t, root, ".des/policies/team/team_test.rego", "package team_test\n\ntest_quiet if {\n\tcount(data.des.gates.pre_commit.deny) == 0 with input as {}\n}\n")
	const want = "team/team.rego:4:2: rego_compile_error: assigned var x unused"
	r := runTestCommand(t, root)
	if r.code != 2 || strings.Contains(r.stdout, "PASS") || !strings.Contains(r.stderr, ".des/policies/"+want) || !strings.Contains(r.stderr, "as the hook") {
		t.Errorf("des-hook test: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	// The hook's own view, for the same file.
	if p := runBinCLI(t, root, "policies"); p.code != 2 || !strings.Contains(p.stderr, want) {
		t.Errorf("des-hook policies: exit %d\n%s", p.code, p.stderr)
	}
	// Fixed, both agree it compiles.
	writeFile(t, root, ".des/policies/team/team.rego", "package des.gates.pre_commit\n\ndeny contains {\"code\": \"TEAM-X\", \"msg\": \"x\"} if {\n\tinput.never\n}\n")
	if r := runTestCommand(t, root); r.code != 0 || !strings.Contains(r.stdout, "PASS: 1/1") {
		t.Errorf("fixed: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// A team's data file changes a built-in table, and with it the hook's
// decision: ad-hoc prompts need no sections (level none) until the team
// raises the origin to full.
func TestE2ETeamDataChangesADecision(t *testing.T) {
	t.Parallel()
	prompt := "<!-- DES-VALIDATION: required -->\n<!-- DES-ORIGIN: ad-hoc -->\n<!-- DES-STEP-FILE: " + e2eStep + " -->\nAdd the cart total.\n"

	root := gate1Project(t, "TODO")
	if reason := denyReason(t, runHookProcess(t, root, nil, agentEvent(root, "Agent", prompt))); reason != "" {
		t.Fatalf("ad-hoc prompt with the built-in tables: %q, want allowed", reason)
	}

	root = gate1Project(t, "TODO")
	writeFile(t, root, ".des/policies/des/sections/data.json", `{"origins": {"ad-hoc": "full"}}`)
	if reason := denyReason(t, runHookProcess(t, root, nil, agentEvent(root, "Agent", prompt))); !strings.Contains(reason, "DES-SECTION-MISSING") {
		t.Errorf("ad-hoc prompt with the team's table: %q, want DES-SECTION-MISSING", reason)
	}

	// Two team files disagreeing: DES-INTERNAL naming both files and the key.
	writeFile(t, root, ".des/policies/data.json", `{"des": {"sections": {"origins": {"ad-hoc": "partial"}}}}`)
	reason := denyReason(t, runHookProcess(t, root, nil, agentEvent(root, "Agent", prompt)))
	for _, want := range []string{"[DES-INTERNAL] ", filepath.Join(".des", "policies", "des", "sections", "data.json"), filepath.Join(".des", "policies", "data.json"), `data.des.sections.origins["ad-hoc"]`} {
		if !strings.Contains(reason, want) {
			t.Errorf("conflicting team data: reason %q does not name %q", reason, want)
		}
	}
}

// The README's "Write and test a team policy", run as written: its rule, its
// test and its data file in a new project, and `des-hook test` printing what
// the README shows.
func TestE2EReadmeTeamPolicy(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	start := strings.Index(readme, "## Write and test a team policy")
	end := strings.Index(readme[start+1:], "\n## ")
	if start < 0 || end < 0 {
		t.Fatal("README has no section \"Write and test a team policy\"")
	}
	section := readme[start : start+1+end]
	block := func(after, lang string) string {
		t.Helper()
		i := strings.Index(section, after)
		if i < 0 {
			t.Fatalf("README section has no %q", after)
		}
		rest := section[i:]
		j := strings.Index(rest, "```"+lang+"\n")
		if j < 0 {
			t.Fatalf("no %s block after %q", lang, after)
		}
		rest = rest[j+len("```"+lang+"\n"):]
		return rest[:strings.Index(rest, "```")]
	}
	root := t.TempDir()
	writeFile(t, root, ".des/policies/owner.rego", block("`.des/policies/owner.rego`:", "rego"))
	writeFile(t, root, ".des/policies/owner_test.rego", block("`.des/policies/owner_test.rego`", "rego"))
	writeFile(t, root, ".des/policies/des/sections/data.json", block("`.des/policies/des/sections/data.json`:", "json"))
	console := block("Run the tests with the hook binary", "console")
	cmdLine, want, _ := strings.Cut(console, "\n")
	args := strings.Fields(strings.TrimPrefix(cmdLine, "$ des-hook test"))
	r := runTestCommand(t, root, args...)
	if r.code != 0 || r.stdout != want || r.stderr != "" {
		t.Errorf("README example: exit %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s", r.code, r.stdout, want, r.stderr)
	}
}
