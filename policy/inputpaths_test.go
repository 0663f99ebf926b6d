package policy_test

import (
	"slices"
	"testing"
	"testing/fstest"

	"github.com/deterministic-exec/des/policy"
)

// InputPaths follows the gate's rules into the rules and functions they
// use, and no further.
func TestInputPaths(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"gate.rego": {Data: []byte(`package des.gates.tool_use

import data.team.helpers

deny contains {"code": "X", "msg": "x"} if {
	input.a.b == 1
	some x
	input.c[x].d
	helpers.f(1)
	helpers.flag
}
`)},
		"helpers.rego": {Data: []byte(`package team.helpers

f(n) := n + input.e.n

flag if input["g/h"].i

unused if input.zzz
`)},
	}
	pe, err := policy.New(t.Context(), policy.WithoutBuiltin(), policy.WithFS("team", fsys))
	if err != nil {
		t.Fatal(err)
	}
	got, err := pe.InputPaths(policy.ToolUse)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/input/a/b", "/input/c", "/input/e/n", "/input/g%2Fh/i"}
	if !slices.Equal(got, want) {
		t.Errorf("InputPaths = %v, want %v", got, want)
	}
	if _, err := pe.InputPaths("nope"); err == nil {
		t.Error("InputPaths of an unknown gate: no error")
	}
}
