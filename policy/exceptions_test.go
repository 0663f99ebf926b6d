package policy_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/policy"
)

// An organisation lists codes no exception may waive; a team's exception
// for one is a deny, and no exception waives that deny either.
func TestOrganisationUnwaivableCodes(t *testing.T) {
	t.Parallel()
	org := t.TempDir()
	teamData(t, org, "des/exceptions/data.json", `{"unwaivable": ["DES-SECTION-MISSING"]}`)
	team := t.TempDir()
	write(t, team+"/waive.rego", `package des.gates.pre_invocation

exception contains "DES-SECTION-MISSING"

exception contains "DES-EXCEPTION-REFUSED"
`)
	e := newEngine(t, policy.WithDirs(org, team))
	in := map[string]any{"prompt": map[string]any{"validation": "required", "origin": "command:/nw:execute", "sections": []any{"DES_METADATA"}, "phase_words": []any{}}}
	d, err := e.Eval(t.Context(), policy.PreInvocation, in)
	if err != nil {
		t.Fatal(err)
	}
	var refused []policy.Violation
	for _, v := range d.Deny {
		if v.Code == "DES-EXCEPTION-REFUSED" {
			refused = append(refused, v)
		}
	}
	if len(refused) != 1 || refused[0].Details["refused_exception"] != "DES-SECTION-MISSING" {
		t.Fatalf("deny %v; want one DES-EXCEPTION-REFUSED for DES-SECTION-MISSING, not waived by the team's exception for it", d.Codes())
	}
	// The refused exception does not hold: the violation stands, unwaived.
	if !slices.Contains(d.Codes(), "DES-SECTION-MISSING") {
		t.Errorf("deny %v: DES-SECTION-MISSING was waived by a refused exception", d.Codes())
	}
	for _, w := range d.Waived {
		t.Errorf("waived %s: a refused exception waives nothing", w.Code)
	}
	if !strings.Contains(refused[0].Message, "des.gates.pre_invocation") || len(refused[0].Recovery) == 0 {
		t.Errorf("message %q, recovery %v: want the gate named and a recovery", refused[0].Message, refused[0].Recovery)
	}
	if refused[0].Policy != "des.exceptions" {
		t.Errorf("policy %q, want des.exceptions from the catalogue", refused[0].Policy)
	}

	// Without the organisation's list the team's exception waives as before.
	d, err = newEngine(t, policy.WithDirs(team)).Eval(t.Context(), policy.PreInvocation, in)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range d.Deny {
		if v.Code == "DES-SECTION-MISSING" || v.Code == "DES-EXCEPTION-REFUSED" {
			t.Errorf("without an unwaivable list: deny %v", d.Codes())
		}
	}

	// A team data file cannot take the code off the organisation's list: the
	// two files disagree, and loading fails naming both.
	undo := t.TempDir()
	teamData(t, undo, "des/exceptions/data.json", `{"unwaivable": []}`)
	if _, err := policy.New(t.Context(), policy.WithDirs(org, undo)); err == nil || !strings.Contains(err.Error(), "unwaivable") {
		t.Errorf("a team file emptying the organisation's list: err %v, want a conflict naming unwaivable", err)
	}
}

// A rule at a path a data file sets would hide the data: a team rule
// `unwaivable := []` would undo the organisation's list. OPA refuses a rule
// there when it loads policies beside data, and so does the engine.
func TestRuleShadowingDataRefused(t *testing.T) {
	t.Parallel()
	org := t.TempDir()
	teamData(t, org, "des/exceptions/data.json", `{"unwaivable": ["DES-SECTION-MISSING"]}`)
	for _, src := range []string{
		"package des.exceptions\n\nunwaivable := []\n",
		"package des.exceptions.unwaivable\n\nx := 1\n",
		"package des\n\nconfig := {}\n",
	} {
		team := t.TempDir()
		write(t, team+"/shadow.rego", src)
		_, err := policy.New(t.Context(), policy.WithDirs(org, team), policy.WithData("des.config", map[string]any{"policy_dirs": []any{}}))
		if err == nil || !strings.Contains(err.Error(), "conflicting rule for data path") || !strings.Contains(err.Error(), "shadow.rego:3") {
			t.Errorf("%q: %v, want a conflict naming shadow.rego:3", src, err)
		}
	}
}
