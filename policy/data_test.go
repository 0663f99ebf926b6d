package policy_test

import (
	"errors"
	"os"
	"path/filepath"
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
