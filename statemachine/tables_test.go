package statemachine_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"testing"

	"github.com/google/go-cmp/cmp"

	builtin "github.com/deterministic-exec/des/rego"
	"github.com/deterministic-exec/des/statemachine"
)

// bundleTables are the built-in bundle's transition tables, read from the
// bundle's data file as the policy engine loads it (data.des.transitions),
// without linking the engine into this package's tests.
func bundleTables(t *testing.T) statemachine.Tables {
	t.Helper()
	raw, err := fs.ReadFile(builtin.FS(), "des/transitions/data.json")
	if err != nil {
		t.Fatal(err)
	}
	var data map[string]any
	if err := json.Unmarshal(raw, &data); err != nil {
		t.Fatal(err)
	}
	tables, err := statemachine.ParseTables(data)
	if err != nil {
		t.Fatal(err)
	}
	return tables
}

// The tables Go reads from the bundle are exactly the contract's (§2).
func TestBundleTablesAreTheContract(t *testing.T) {
	t.Parallel()
	tables := bundleTables(t)
	wantTask := statemachine.Table{
		"TODO": {"IN_PROGRESS"}, "IN_PROGRESS": {"DONE", "FAILED", "PARTIAL"},
		"FAILED": {"IN_PROGRESS"}, "PARTIAL": {"IN_PROGRESS"}, "DONE": {},
	}
	wantPhase := statemachine.Table{
		"NOT_EXECUTED": {"IN_PROGRESS"}, "IN_PROGRESS": {"EXECUTED", "SKIPPED", "FAILED"},
		"EXECUTED": {}, "SKIPPED": {}, "FAILED": {},
	}
	if diff := cmp.Diff(wantTask, tables.Task); diff != "" {
		t.Errorf("task table (-contract +bundle):\n%s", diff)
	}
	if diff := cmp.Diff(wantPhase, tables.Phase); diff != "" {
		t.Errorf("phase table (-contract +bundle):\n%s", diff)
	}
}

func TestTableQuestions(t *testing.T) {
	t.Parallel()
	tables := bundleTables(t)
	cases := []struct {
		table    statemachine.Table
		from, to string
		allowed  bool
	}{
		{tables.Task, statemachine.TaskTodo, statemachine.TaskInProgress, true},
		{tables.Task, statemachine.TaskTodo, statemachine.TaskDone, false},
		{tables.Task, statemachine.TaskDone, statemachine.TaskInProgress, false},
		{tables.Task, statemachine.TaskInProgress, statemachine.TaskInProgress, false},
		{tables.Phase, statemachine.PhaseNotExecuted, statemachine.PhaseExecuted, false},
		{tables.Phase, statemachine.PhaseInProgress, statemachine.PhaseSkipped, true},
		{tables.Phase, "COMPLETED", statemachine.PhaseExecuted, false},
	}
	for _, c := range cases {
		if got := c.table.Allowed(c.from, c.to); got != c.allowed {
			t.Errorf("Allowed(%s, %s) = %v", c.from, c.to, got)
		}
	}
	if got := tables.Task.Successors(statemachine.TaskInProgress); !cmp.Equal(got, []string{"DONE", "FAILED", "PARTIAL"}) {
		t.Errorf("Successors = %v", got)
	}
	if !tables.Phase.Terminal(statemachine.PhaseSkipped) || tables.Phase.Terminal(statemachine.PhaseInProgress) || tables.Phase.Terminal("BOGUS") {
		t.Error("Terminal is wrong")
	}
	if tables.Task.Known("COMPLETED") || !tables.Task.Known(statemachine.TaskPartial) {
		t.Error("Known is wrong")
	}
}

func TestParseTablesRejectsBadShapes(t *testing.T) {
	t.Parallel()
	for name, v := range map[string]any{
		"not an object":     []any{},
		"missing phase":     map[string]any{"task": map[string]any{"A": []any{}}},
		"row not a list":    map[string]any{"task": map[string]any{"A": "B"}, "phase": map[string]any{"A": []any{}}},
		"successor not str": map[string]any{"task": map[string]any{"A": []any{1.0}}, "phase": map[string]any{"A": []any{}}},
		"successor unknown": map[string]any{"task": map[string]any{"A": []any{"B"}}, "phase": map[string]any{"A": []any{}}},
	} {
		if _, err := statemachine.ParseTables(v); !errors.Is(err, statemachine.ErrBadTables) {
			t.Errorf("%s: err = %v, want ErrBadTables", name, err)
		}
	}
}
