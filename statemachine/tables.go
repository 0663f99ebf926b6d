package statemachine

import (
	"errors"
	"fmt"
	"slices"
	"sort"
)

// Task statuses (docs/reference.md, "Step file").
const (
	TaskTodo       = "TODO"
	TaskInProgress = "IN_PROGRESS"
	TaskDone       = "DONE"
	TaskFailed     = "FAILED"
	TaskPartial    = "PARTIAL"
)

// Phase statuses (docs/reference.md, "Step file").
const (
	PhaseNotExecuted = "NOT_EXECUTED"
	PhaseInProgress  = "IN_PROGRESS"
	PhaseExecuted    = "EXECUTED"
	PhaseSkipped     = "SKIPPED"
	PhaseFailed      = "FAILED"
)

// Table maps a status to the statuses it may move to. A status with no
// successors is terminal; a status absent from the table is unknown.
type Table map[string][]string

// Allowed reports whether the table lists to as a successor of from. A
// status staying the same is not a move and is not allowed by the table.
func (t Table) Allowed(from, to string) bool { return slices.Contains(t[from], to) }

// Successors returns the statuses from may move to, sorted.
func (t Table) Successors(from string) []string {
	s := slices.Clone(t[from])
	sort.Strings(s)
	return s
}

// Known reports whether status has a row in the table.
func (t Table) Known(status string) bool { _, ok := t[status]; return ok }

// Terminal reports whether status is known and has no successor.
func (t Table) Terminal(status string) bool { s, ok := t[status]; return ok && len(s) == 0 }

// Tables are the task and phase state machines.
type Tables struct {
	Task  Table
	Phase Table
}

// ErrBadTables is wrapped by ParseTables when the data has the wrong shape.
var ErrBadTables = errors.New("bad transition tables")

// ParseTables reads the tables from the policy data at data.des.transitions,
// a JSON-like value {"task": {status: [status...]}, "phase": {...}}. Every
// successor must itself be a row of its table.
func ParseTables(v any) (Tables, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return Tables{}, fmt.Errorf("%w: want an object with \"task\" and \"phase\", got %T", ErrBadTables, v)
	}
	var t Tables
	for name, dst := range map[string]*Table{"task": &t.Task, "phase": &t.Phase} {
		tbl, err := parseTable(obj[name])
		if err != nil {
			return Tables{}, fmt.Errorf("%w: %s: %v", ErrBadTables, name, err)
		}
		*dst = tbl
	}
	return t, nil
}

func parseTable(v any) (Table, error) {
	rows, ok := v.(map[string]any)
	if !ok || len(rows) == 0 {
		return nil, fmt.Errorf("want a non-empty object of status rows, got %T", v)
	}
	t := make(Table, len(rows))
	for from, succ := range rows {
		list, ok := succ.([]any)
		if !ok {
			return nil, fmt.Errorf("row %s: want a list of statuses, got %T", from, succ)
		}
		for _, s := range list {
			to, ok := s.(string)
			if !ok {
				return nil, fmt.Errorf("row %s: successor %v is not a string", from, s)
			}
			t[from] = append(t[from], to)
		}
		if t[from] == nil {
			t[from] = []string{}
		}
	}
	for from, succ := range t {
		for _, to := range succ {
			if !t.Known(to) {
				return nil, fmt.Errorf("row %s: successor %s has no row", from, to)
			}
		}
	}
	return t, nil
}
