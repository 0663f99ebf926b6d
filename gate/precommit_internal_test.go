package gate

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/deterministic-exec/des/statemachine"
)

// viaStatemachine is what statemachine.ParseStep, the reference reader of
// step files, makes of content, in the form of Gate 3's facts.
func viaStatemachine(content []byte) map[string]any {
	step, err := statemachine.ParseStep(content)
	switch {
	case errors.Is(err, statemachine.ErrNotObject):
		return map[string]any{"problem": "not_object"}
	case err != nil:
		return map[string]any{"problem": "invalid_json"}
	}
	log := ""
	if len(step.PhaseLogPath) > 0 {
		log = "/" + strings.Join(step.PhaseLogPath, "/")
	}
	phases := []any{}
	for _, p := range step.Phases {
		phases = append(phases, map[string]any{"name": utf8(p.Name), "pos": p.Pos, "at": log + "/" + strconv.Itoa(p.Pos),
			"status": utf8(p.Status), "outcome": utf8(p.Outcome), "blocked_by": utf8(p.BlockedBy)})
	}
	return map[string]any{"workflow_type": utf8(step.WorkflowType), "phase_log": log, "phases": phases}
}

// utf8 replaces each byte that is not UTF-8 with U+FFFD, as encoding/json
// does when it decodes a string (statemachine keeps such bytes as written;
// no canonical value contains one).
func utf8(s string) string { return string([]rune(s)) }

// checkFacts fails when Gate 3 reads content otherwise than statemachine.
// Two differences are allowed: valid JSON that the policy cannot hold (the
// number 1e99999) is a problem for Gate 3, and bytes that are not UTF-8
// read as U+FFFD, as in the document the policy gets.
func checkFacts(t *testing.T, content []byte) {
	t.Helper()
	facts := commitFacts("s.json", content)
	got := map[string]any{}
	for _, k := range []string{"problem", "workflow_type", "phase_log", "phases"} {
		if v, ok := facts[k]; ok {
			got[k] = v
		}
	}
	want := viaStatemachine(content)
	if got["problem"] == "invalid_json" && want["problem"] == nil {
		if !strings.Contains(facts["error"].(string), "number") {
			t.Fatalf("%q: Gate 3 refuses what statemachine reads: %v", content, facts["error"])
		}
		return
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("%q (-statemachine +gate):\n%s", content, diff)
	}
}

var factSeeds = []string{
	`{}`, `[]`, `"x"`, `{"a":`, `{"tdd_cycle": 3}`, `{"tdd_cycle": {"phase_execution_log": {}}}`,
	`{"workflow_type": "", "tdd_cycle": {"phase_execution_log": []}}`,
	`{"workflow_type": 7, "tdd_cycle": {"phase_execution_log": [1, null, {"phase_name": "PREPARE", "status": "EXECUTED", "outcome": "PASS"}, "x"]}}`,
	`{"tdd_cycle": {"phase_execution_log": null, "tdd_phase_tracking": {"phase_execution_log": [{"phase_name": 3, "status": ["x"], "blocked_by": "NOT_APPLICABLE: a\u00e9"}]}}}`,
	`{"tdd_cycle": {"phase_execution_log": [{"phase_name": "A"}], "phase_execution_log": [{"phase_name": "B"}]}}`,
	`{"tdd_cycle": {"tdd_phase_tracking": {"phase_execution_log": 1}}}`,
	`{"tdd_cycle": {"phase_execution_log": [{"status": "EXECUTED", "status": "SKIPPED", "blocked_by": "x\\y"}]}}`,
	`{"n": 1e99999, "tdd_cycle": {}}`,
}

func TestCommitFactsReadAsStatemachine(t *testing.T) {
	t.Parallel()
	for _, s := range factSeeds {
		checkFacts(t, []byte(s))
	}
	paths, _ := filepath.Glob("../../shared/corpus/nwave-steps/*.json")
	if len(paths) == 0 {
		t.Log("step corpus not found at ../../shared/corpus/nwave-steps; checked the seeds only")
	}
	for _, p := range paths {
		content, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		checkFacts(t, content)
	}
}

func FuzzCommitFacts(f *testing.F) {
	for _, s := range factSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, content []byte) { checkFacts(t, content) })
}
