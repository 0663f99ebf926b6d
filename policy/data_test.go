package policy_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/policy"
)

// teamData writes a data file at rel under a new policy directory.
func teamData(t *testing.T, dir, rel, content string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, p, content)
	return p
}

var adHocPrompt = map[string]any{"prompt": map[string]any{"validation": "required", "origin": "ad-hoc", "sections": []any{"DES_METADATA"}, "phase_words": []any{}}}

func TestTeamDataOverridesBuiltinTables(t *testing.T) {
	t.Parallel()
	before := newEngine(t)
	if d, err := before.Eval(t.Context(), policy.PreInvocation, adHocPrompt); err != nil || !d.Allowed() {
		t.Fatalf("ad-hoc prompt with the built-in tables: %+v, %v; want allowed (level none)", d, err)
	}

	dir := t.TempDir()
	teamData(t, dir, "des/sections/data.json", `{"origins": {"ad-hoc": "full", "command:/nw:review": null}}`)
	teamData(t, dir, "des/commit/data.json", `{"skip_prefixes": ["TEAM_WAIVED:"]}`)
	e := newEngine(t, policy.WithDirs(dir))

	d, err := e.Eval(t.Context(), policy.PreInvocation, adHocPrompt)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(d.Codes(), " "), "DES-SECTION-MISSING") {
		t.Errorf("ad-hoc raised to full by the team's table: codes %v, want DES-SECTION-MISSING", d.Codes())
	}
	for path, want := range map[string]any{
		"des.sections.origins.ad-hoc":              "full",
		"des.sections.origins.command:/nw:execute": "full", // untouched sibling
		"des.sections.unknown_origin_level":        "full",
	} {
		if got, _ := e.Data(path); got != want {
			t.Errorf("data.%s = %v, want %v", path, got, want)
		}
	}
	if _, ok := e.Data("des.sections.origins.command:/nw:review"); ok {
		t.Error("null in a team data file should remove the built-in entry")
	}
	if got, _ := e.Data("des.commit.skip_prefixes"); len(got.([]any)) != 1 {
		t.Errorf("skip_prefixes = %v, want the team's array, replacing the built-in one", got)
	}
}

func TestTeamDataConflictNamesBothFiles(t *testing.T) {
	t.Parallel()
	a, b := t.TempDir(), t.TempDir()
	fa := teamData(t, a, "des/sections/data.json", `{"origins": {"ad-hoc": "full"}}`)
	fb := teamData(t, b, "data.json", `{"des": {"sections": {"origins": {"ad-hoc": "partial"}}}}`)
	_, err := policy.New(t.Context(), policy.WithDirs(a, b))
	var errs policy.Errors
	if !errors.As(err, &errs) || len(errs) != 1 {
		t.Fatalf("err = %v, want one policy.Error", err)
	}
	if errs[0].File != fb || !strings.Contains(errs[0].Message, fa) || !strings.Contains(errs[0].Message, `data.des.sections.origins["ad-hoc"]`) {
		t.Errorf("error %q should be in %s and name %s and the key", errs[0], fb, fa)
	}

	// The same value twice is no conflict.
	teamData(t, b, "data.json", `{"des": {"sections": {"origins": {"ad-hoc": "full"}}}}`)
	if _, err := policy.New(t.Context(), policy.WithDirs(a, b)); err != nil {
		t.Errorf("two files agreeing: %v", err)
	}
}

func TestTeamDataCannotSetWhatWithDataSets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	f := teamData(t, dir, "des/config/data.json", `{"stale_threshold_minutes": 5}`)
	_, err := policy.New(t.Context(), policy.WithDirs(dir), policy.WithData("des.config", map[string]any{}))
	var errs policy.Errors
	if !errors.As(err, &errs) || errs[0].File != f || !strings.Contains(errs[0].Message, ".des/config.json") {
		t.Errorf("err = %v, want %s refused, pointing at the settings", err, f)
	}
	// Without WithData, the file is a plain override.
	e := newEngine(t, policy.WithDirs(dir))
	if got, _ := e.Data("des.config.stale_threshold_minutes"); got == nil || got.(interface{ String() string }).String() != "5" {
		t.Errorf("stale_threshold_minutes = %v, want 5", got)
	}
}

// The tables teams change, each overridden by a data file at its built-in
// path: the team's value is what the engine holds, the rest of the table
// stays built-in.
func TestTeamDataReachesEveryTable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file, content string
		path          string
		want          string // fmt.Sprint of the value at path
		kept          string // a built-in sibling that stays
	}{
		{"des/sections/data.json", `{"levels": {"partial": ["DES_METADATA"]}}`, "des.sections.levels.partial", "[DES_METADATA]", "des.sections.levels.full"},
		{"des/commit/data.json", `{"skip_prefixes": ["NOT_APPLICABLE:", "TEAM:"]}`, "des.commit.skip_prefixes", "[NOT_APPLICABLE: TEAM:]", "des.commit.deferred_prefix"},
		{"des/phases/data.json", `{"protected_branches": {"release": true, "master": null}}`, "des.phases.protected_branches", "map[main:true release:true]", "des.phases.agent_phases"},
		{"des/delegation/data.json", `{"work_tools": {"NotebookEdit": null}}`, "des.delegation.work_tools.NotebookEdit", "<absent>", "des.delegation.work_tools.Bash"},
		{"data.json", `{"des": {"taskgraph": {"verification_types": {"review": true}}}}`, "des.taskgraph.verification_types.review", "true", "des.taskgraph.verification_types.verification"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			dir := t.TempDir()
			teamData(t, dir, tc.file, tc.content)
			e := newEngine(t, policy.WithDirs(dir))
			got := "<absent>"
			if v, ok := e.Data(tc.path); ok {
				got = fmt.Sprint(v)
			}
			if got != tc.want {
				t.Errorf("data.%s = %s, want %s", tc.path, got, tc.want)
			}
			if _, ok := e.Data(tc.kept); !ok {
				t.Errorf("data.%s: the built-in sibling is gone", tc.kept)
			}
		})
	}
}

// A commit skip prefix the team adds changes Gate 3's decision.
func TestTeamSkipPrefixChangesGate3(t *testing.T) {
	t.Parallel()
	phases := []any{}
	for i, name := range []string{"PREPARE", "RED_ACCEPTANCE", "RED_UNIT", "GREEN_UNIT", "CHECK_ACCEPTANCE", "GREEN_ACCEPTANCE", "REVIEW", "REFACTOR_L1", "REFACTOR_L2", "REFACTOR_L3", "REFACTOR_L4", "POST_REFACTOR_REVIEW", "FINAL_VALIDATE", "COMMIT"} {
		p := map[string]any{"name": name, "pos": i, "at": fmt.Sprintf("/tdd_cycle/phase_execution_log/%d", i), "status": "EXECUTED", "outcome": "PASS", "blocked_by": ""}
		if name == "RED_UNIT" {
			p["status"], p["outcome"], p["blocked_by"] = "SKIPPED", "", "TEAM_WAIVED: covered by the acceptance test"
		}
		phases = append(phases, p)
	}
	in := map[string]any{"step": map[string]any{"path": "steps/01-01.json", "document": map[string]any{"task_id": "01-01", "state": map[string]any{"status": "DONE"}}, "workflow_type": "tdd_cycle", "phase_log": "/tdd_cycle/phase_execution_log", "phases": phases}, "gate2": []any{}}

	d, err := newEngine(t).Eval(t.Context(), policy.PreCommit, in)
	if err != nil || !slices.Contains(d.Codes(), "DES-COMMIT-SKIP-REASON") {
		t.Fatalf("built-in prefixes: codes %v, %v; want DES-COMMIT-SKIP-REASON", d.Codes(), err)
	}
	dir := t.TempDir()
	teamData(t, dir, "des/commit/data.json", `{"skip_prefixes": ["NOT_APPLICABLE:", "TEAM_WAIVED:"]}`)
	d, err = newEngine(t, policy.WithDirs(dir)).Eval(t.Context(), policy.PreCommit, in)
	if err != nil || slices.Contains(d.Codes(), "DES-COMMIT-SKIP-REASON") {
		t.Errorf("team prefix TEAM_WAIVED: codes %v, %v; want no DES-COMMIT-SKIP-REASON", d.Codes(), err)
	}
}
