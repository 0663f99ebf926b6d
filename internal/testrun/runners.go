package testrun

import (
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
)

// Runner is one entry of the test runner table: the words a command
// starts with. The first pattern is matched against the base name of the
// command (so ./node_modules/.bin/jest is jest); each later one against the
// next word, where words starting with "-" are passed over unless the
// pattern itself starts with "-" (go test -v ./... is go test; node --test
// is node --test). Patterns are path.Match globs (npm run test* matches
// npm run test:unit).
type Runner struct {
	Name    string
	Command []string
	// NoRun are options (globs) with which the runner runs no test (go
	// test -list, pytest --collect-only): a run with one is no pass.
	NoRun []string
}

// Table is the test runner table, the most specific entries (the longest
// commands) first.
type Table []Runner

// ParseTable reads the table from the policies' data
// (data.des.evidence.test_runners): an object of entries {"command":
// [patterns]} by name, so that a team adds one by name and removes one with
// null. An entry that is not of that shape is an error naming it.
func ParseTable(v any) (Table, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("data.des.evidence.test_runners: want an object of runners by name, got %T", v)
	}
	var t Table
	for name, e := range m {
		if e == nil {
			continue
		}
		obj, _ := e.(map[string]any)
		list, _ := obj["command"].([]any)
		r := Runner{Name: name}
		for _, w := range list {
			s, ok := w.(string)
			if !ok || s == "" {
				r.Command = nil
				break
			}
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("data.des.evidence.test_runners[%q]: bad pattern %q: %v", name, s, err)
			}
			r.Command = append(r.Command, s)
		}
		if len(r.Command) == 0 {
			return nil, fmt.Errorf("data.des.evidence.test_runners[%q]: want {\"command\": [\"word\", ...]} with at least one non-empty word", name)
		}
		if raw, ok := obj["no_run"]; ok && raw != nil {
			opts, _ := raw.([]any)
			if opts == nil {
				return nil, fmt.Errorf("data.des.evidence.test_runners[%q].no_run: want a list of options", name)
			}
			for _, o := range opts {
				s, ok := o.(string)
				if _, err := path.Match(s, ""); !ok || s == "" || err != nil {
					return nil, fmt.Errorf("data.des.evidence.test_runners[%q].no_run: bad option %v", name, o)
				}
				r.NoRun = append(r.NoRun, s)
			}
		}
		t = append(t, r)
	}
	sort.Slice(t, func(i, j int) bool {
		if len(t[i].Command) != len(t[j].Command) {
			return len(t[i].Command) > len(t[j].Command)
		}
		return t[i].Name < t[j].Name
	})
	return t, nil
}

// Match is a command the table recognised.
type Match struct {
	Runner string   // the entry's name
	Argv   []string // the command as the line runs it
}

// Recognise returns the first of runs (the simple commands a Bash line
// runs, shell.Analysis.Runs) that runs a test runner of the table.
func (t Table) Recognise(runs [][]string) (Match, bool) {
	for _, argv := range runs {
		for _, r := range t {
			if r.matches(argv) {
				return Match{Runner: r.Name, Argv: slices.Clone(argv)}, true
			}
		}
	}
	return Match{}, false
}

func (r Runner) matches(argv []string) bool {
	if len(argv) == 0 || len(r.Command) == 0 {
		return false
	}
	if ok, _ := path.Match(r.Command[0], path.Base(argv[0])); !ok {
		return false
	}
	i := 1
	for _, p := range r.Command[1:] {
		if !strings.HasPrefix(p, "-") {
			for i < len(argv) && strings.HasPrefix(argv[i], "-") {
				i++
			}
		}
		if i >= len(argv) {
			return false
		}
		if ok, _ := path.Match(p, argv[i]); !ok {
			return false
		}
		i++
	}
	return true
}
