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
	// ValueOptions are options (globs) that take the next word as a value
	// that neither names a test to run nor chooses where the tests are: an
	// output file, a count, a name pattern (go test -o, -coverprofile,
	// -run). The word after any other option is taken for what the runner
	// tests when it is a path (go test -v /tmp/x/... tests /tmp/x).
	ValueOptions []string
	// PathOptions are options (globs) whose value is the directory, the
	// project or a configuration the tests are found from (go -C, npm
	// --prefix, mvn -f, jest --config): checked against the project as a
	// test path is, and passed over with their value when the command is
	// matched (npm --prefix web test is npm test).
	PathOptions []string
}

// Table is the test runner table, the most specific entries (the longest
// commands) first.
type Table []Runner

// ParseTable reads the table from the policies' data
// (data.des.evidence.test_runners): an object of entries {"command":
// [patterns], "no_run": [options], "value_options": [options],
// "path_options": [options]} by name, so that a team adds one by name and removes one with
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
		var err error
		if r.NoRun, err = optionList(name, "no_run", obj["no_run"]); err != nil {
			return nil, err
		}
		if r.ValueOptions, err = optionList(name, "value_options", obj["value_options"]); err != nil {
			return nil, err
		}
		if r.PathOptions, err = optionList(name, "path_options", obj["path_options"]); err != nil {
			return nil, err
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

// optionList reads an entry's list of options (globs), nil when absent.
func optionList(name, key string, raw any) ([]string, error) {
	if raw == nil {
		return nil, nil
	}
	opts, _ := raw.([]any)
	if opts == nil {
		return nil, fmt.Errorf("data.des.evidence.test_runners[%q].%s: want a list of options", name, key)
	}
	var out []string
	for _, o := range opts {
		s, ok := o.(string)
		if _, err := path.Match(s, ""); !ok || s == "" || err != nil {
			return nil, fmt.Errorf("data.des.evidence.test_runners[%q].%s: bad option %v", name, key, o)
		}
		out = append(out, s)
	}
	return out, nil
}

// skipsValue reports whether option word a, before the command's later
// words, takes the next word as its value: an option the entry lists in
// value_options or path_options written out (npm --prefix web test), not
// as a glob, which lists attached forms (mvn -DskipITs test).
func (r Runner) skipsValue(a string) bool {
	name, _, eq := strings.Cut(a, "=")
	return !eq && (slices.Contains(r.ValueOptions, name) || slices.Contains(r.PathOptions, name))
}

// valueOption reports whether name (an option, without its "=value") is
// one of the entry's value_options.
func (r Runner) valueOption(name string) bool { return anyGlob(r.ValueOptions, name) }

// pathOption reports whether name is one of the entry's path_options.
func (r Runner) pathOption(name string) bool { return anyGlob(r.PathOptions, name) }

func anyGlob(globs []string, s string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, s); ok {
			return true
		}
	}
	return false
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
	_, ok := r.commandWords(argv[1:])
	return ok
}

// commandWords finds the entry's later command words in args (the words
// after the command's name): their indexes, and whether all are there.
func (r Runner) commandWords(args []string) (at []int, ok bool) {
	i := 0
	for _, p := range r.Command[1:] {
		if !strings.HasPrefix(p, "-") {
			for i < len(args) && strings.HasPrefix(args[i], "-") {
				if r.skipsValue(args[i]) && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
					i++ // its value
				}
				i++
			}
		}
		if i >= len(args) {
			return at, false
		}
		if ok, _ := path.Match(p, args[i]); !ok {
			return at, false
		}
		at = append(at, i)
		i++
	}
	return at, true
}
