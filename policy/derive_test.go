package policy_test

import (
	"strings"
	"testing"

	"github.com/deterministic-exec/des/policy"
)

func TestWithDataAtReplacesOnlyData(t *testing.T) {
	t.Parallel()
	base, err := policy.New(t.Context(), policy.WithData("des.config", map[string]any{"audit_dir": "a", "policy_dirs": []any{}}))
	if err != nil {
		t.Fatal(err)
	}
	d, err := base.WithDataAt(t.Context(), "des.config", map[string]any{"audit_dir": "b", "policy_dirs": []any{}})
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := base.Data("des.config.audit_dir"); v != "a" {
		t.Errorf("base audit_dir = %v, want a: the derived engine changed it", v)
	}
	if v, _ := d.Data("des.config.audit_dir"); v != "b" {
		t.Errorf("derived audit_dir = %v, want b", v)
	}
	// The rest of the data is the base's: the built-in transitions.
	if _, ok := d.Data("des.transitions"); !ok {
		t.Error("derived engine lost data.des.transitions")
	}
	// Decisions read the derived data: a write to b is protected there only.
	for _, tc := range []struct {
		e    *policy.Engine
		path string
		deny bool
	}{{base, "a/x.log", true}, {base, "b/x.log", false}, {d, "a/x.log", false}, {d, "b/x.log", true}} {
		dec, err := tc.e.Eval(t.Context(), policy.ToolUse, map[string]any{"writes": []any{map[string]any{"path": tc.path, "tool": "Write"}}})
		if err != nil {
			t.Fatal(err)
		}
		if dec.Allowed() == tc.deny {
			t.Errorf("write %s: allowed = %v, want deny = %v", tc.path, dec.Allowed(), tc.deny)
		}
	}
}

func TestWithDataAtRefuses(t *testing.T) {
	t.Parallel()
	base, err := policy.New(t.Context(), policy.WithData("des.config", map[string]any{}))
	if err != nil {
		t.Fatal(err)
	}
	// A path New did not reserve could be set by a team data file too.
	if _, err := base.WithDataAt(t.Context(), "des.other", 1); err == nil || !strings.Contains(err.Error(), "data.des.other") {
		t.Errorf("unreserved path: err = %v", err)
	}
	lazy, err := policy.New(t.Context(), policy.WithData("des.config", map[string]any{}), policy.WithLazyCompile())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lazy.WithDataAt(t.Context(), "des.config", map[string]any{}); err == nil {
		t.Error("lazy engine: no error")
	}
}

func TestPrepareReportsCompileError(t *testing.T) {
	t.Parallel()
	e, err := policy.New(t.Context(), policy.WithDirs("testdata/badcompile"), policy.WithLazyCompile())
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Prepare(t.Context()); err == nil || !strings.Contains(err.Error(), "unsafe.rego:") {
		t.Errorf("Prepare: err = %v, want the file's position", err)
	}
}
