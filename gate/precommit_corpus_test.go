package gate_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/deterministic-exec/des/gate"
)

// stepCorpusDir holds 300 real step files from the history of the nWave
// project (../shared/corpus/README.md).
const stepCorpusDir = "../../shared/corpus/nwave-steps"

func stepCorpus(tb testing.TB) []gate.CommitFile {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join(stepCorpusDir, "*.json"))
	if err != nil {
		tb.Fatal(err)
	}
	if len(paths) == 0 {
		tb.Skipf("step corpus not found at %s: it lives in shared/corpus beside the repository", stepCorpusDir)
	}
	files := make([]gate.CommitFile, len(paths))
	for i, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		files[i] = gate.CommitFile{Path: "corpus/steps/" + filepath.Base(p), Content: raw}
	}
	return files
}

// TestPreCommitCorpus runs Gate 3 over the 300 real step files in one call:
// each gets a verdict, none an error, and the counts are those observed
// when the gate landed. A change to them is a change of behaviour on real
// data: look at which files moved before updating the numbers.
//
// Why a sample failed (file: codes):
//   - b8cffd5a…: 14 × DES-COMMIT-STATUS. Every phase has an outcome PASS but
//     no status at all: an early nWave layout. Nothing is EXECUTED, so
//     there is no gap either.
//   - 106e0ac0…: 4 × DES-COMMIT-OUTCOME. REFACTOR_L1 to L4 are EXECUTED
//     with outcome "SKIP": skipped work recorded as executed.
//   - 7fd09255…: 4 × DES-COMMIT-SKIP-REASON and 4 × DES-COMMIT-GAP. REVIEW,
//     REFACTOR_L3, REFACTOR_L4 and POST_REFACTOR_REVIEW are SKIPPED with
//     free text ("Simple implementation - ...") instead of an accepted
//     prefix, and phases after each (REFACTOR_L1, FINAL_VALIDATE) are
//     EXECUTED, so each unjustified skip is also a gap.
//   - 383f44e5…: 1 × DES-COMMIT-INCOMPLETE. tdd_cycle.phase_execution_log
//     is an empty array: a step file generated but never run.
//   - 6fbe4294…: DES-STEPFILE-OBSOLETE (top-level phase_id): an old-layout
//     plan, all 14 phases NOT_EXECUTED, which as a plan leaves its phases
//     open without DES-COMMIT-PHASE-OPEN.
//   - 00d20236…: 14 × DES-COMMIT-PHASE-OPEN. Every phase NOT_EXECUTED, but
//     the task status is NOT_STARTED, an older nWave word that is not a
//     task status, so the file is no plan (a team may add it to
//     data.des.commit.plan_task_statuses). 34 files are such, and 6 more
//     say PENDING.
//
// And two that pass: 226afd6f…, PREPARE and COMMIT EXECUTED with PASS, the
// 12 phases between SKIPPED with "NOT_APPLICABLE: ..." reasons; and
// 031dc5fa…, a plan (no task status, the 14 phases NOT_EXECUTED), as nWave
// committed each step before running it. Before plans were accepted, 41
// files passed and 178 had open phases (2,130 violations).
//
// No file yields DES-COMMIT-DEFERRED: the 105 files that mention
// "DEFERRED:" do so in their documentation of the skip prefixes, and the
// one phase that is DEFERRED has it as its status (DES-COMMIT-STATUS). All
// 300 parse as JSON, so none yields DES-STEPFILE-SCHEMA.
func TestPreCommitCorpus(t *testing.T) {
	t.Parallel()
	files := stepCorpus(t)
	p := newProject(t, nil)
	res, err := p.eng.CheckCommit(t.Context(), gate.Commit{Files: files})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) != len(files) {
		t.Fatalf("%d verdicts for %d files", len(res.Files), len(files))
	}
	passed := 0
	filesWith, violations := map[string]int{}, map[string]int{}
	verdict := map[string][]string{}
	for _, f := range res.Files {
		if !f.Evaluated {
			t.Errorf("%s was not evaluated", f.StepFile)
		}
		if !f.Denied() {
			passed++
		}
		seen := map[string]bool{}
		for _, v := range f.Decision.Deny {
			violations[v.Code]++
			if !seen[v.Code] {
				seen[v.Code] = true
				filesWith[v.Code]++
			}
		}
		verdict[filepath.Base(f.StepFile)[:8]] = f.Decision.Codes()
	}
	t.Logf("%d passed, %d failed; files per code %v; violations per code %v", passed, len(res.Files)-passed, filesWith, violations)
	if len(files) != 300 || passed != 66 {
		t.Errorf("%d files, %d passed; observed 300 files, 66 passed", len(files), passed)
	}
	wantFiles := map[string]int{
		"DES-COMMIT-PHASE-OPEN": 80, "DES-STEPFILE-OBSOLETE": 80, "DES-COMMIT-INCOMPLETE": 56, "DES-COMMIT-STATUS": 26,
		"DES-COMMIT-SKIP-REASON": 24, "DES-COMMIT-GAP": 19, "DES-COMMIT-OUTCOME": 11,
	}
	if diff := cmp.Diff(wantFiles, filesWith); diff != "" {
		t.Errorf("files per code (-observed before +now):\n%s", diff)
	}
	wantViolations := map[string]int{
		"DES-COMMIT-PHASE-OPEN": 788, "DES-STEPFILE-OBSOLETE": 92, "DES-COMMIT-INCOMPLETE": 69, "DES-COMMIT-STATUS": 256,
		"DES-COMMIT-SKIP-REASON": 79, "DES-COMMIT-GAP": 88, "DES-COMMIT-OUTCOME": 48,
	}
	if diff := cmp.Diff(wantViolations, violations); diff != "" {
		t.Errorf("violations per code (-observed before +now):\n%s", diff)
	}
	rep := func(code string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = code
		}
		return out
	}
	samples := map[string][]string{
		"b8cffd5a": rep("DES-COMMIT-STATUS", 14),
		"106e0ac0": rep("DES-COMMIT-OUTCOME", 4),
		"7fd09255": append(rep("DES-COMMIT-GAP", 4), rep("DES-COMMIT-SKIP-REASON", 4)...),
		"383f44e5": {"DES-COMMIT-INCOMPLETE"},
		"6fbe4294": {"DES-STEPFILE-OBSOLETE"},
		"00d20236": rep("DES-COMMIT-PHASE-OPEN", 14),
		"226afd6f": {},
		"031dc5fa": {},
	}
	for file, want := range samples {
		if diff := cmp.Diff(want, verdict[file]); diff != "" {
			t.Errorf("%s… (-want +got):\n%s", file, diff)
		}
	}
}
