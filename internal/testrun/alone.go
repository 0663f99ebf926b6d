package testrun

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// A Bash call reports the exit status and the output of its whole command
// line, not those of the test runner in it: `go test ./... >/dev/null;
// true`, `true || go test ./...`, `go test ./... | grep -v FAIL` exit 0
// with nothing failing in their output, and a runner run with an option
// that runs no test (go test -list, pytest --collect-only) exits 0 too. A
// pass counts only when the line runs the runner alone and the runner ran
// tests: NotAPass says why not. A failure always counts (a made-up failure
// costs only the agent that made it).

// envNotAlone are variables that, set on the line (NAME=VALUE before the
// runner, export, env's operands), change what the runner runs: another
// program by its name, its options, code loaded before the tests.
var envNotAlone = map[string]bool{
	"PATH": true, "GOFLAGS": true, "PYTEST_ADDOPTS": true, "NODE_OPTIONS": true,
	"BASH_ENV": true, "ENV": true, "LD_PRELOAD": true, "MAVEN_ARGS": true,
	"GOENV": true, "GOROOT": true, "GOTOOLCHAIN": true, "PYTHONPATH": true, "PYTHONSTARTUP": true,
	"PYTHONHOME": true, "RUSTC_WRAPPER": true, "RUSTC": true, "RUSTFLAGS": true, "JAVA_TOOL_OPTIONS": true,
	"JDK_JAVA_OPTIONS": true, "_JAVA_OPTIONS": true, "MAVEN_OPTS": true, "GRADLE_OPTS": true,
	"JAVA_OPTS": true, "RUBYOPT": true, "RUBYLIB": true, "BUNDLE_GEMFILE": true, "PERL5OPT": true,
	"CDPATH": true,
}

// envNotAlonePrefixes are prefixes of such variables: npm's configuration
// (npm_config_node_options, npm_config_script_shell), cargo's (a target's
// runner and build wrappers), the dynamic loader's.
var envNotAlonePrefixes = []string{"npm_config_", "NPM_CONFIG_", "CARGO_TARGET_", "CARGO_BUILD_", "LD_", "DYLD_"}

// notAloneVar reports a variable that changes what the runner runs.
func notAloneVar(name string) bool {
	if envNotAlone[name] {
		return true
	}
	for _, p := range envNotAlonePrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// prefixCommands may come before the runner, joined by && or ;: they
// change the directory or the environment the runner runs in, and their
// exit status is not the line's.
var prefixCommands = map[string]bool{"cd": true, "pushd": true, "export": true, "set": true}

// wrappers run the command after them with the same output and (but for
// a timeout) the same exit status: word count of a subcommand, whether
// NAME=VALUE operands and a duration come first, the options that take
// the next word as their value, and those whose value is the directory
// the command runs in (env -C, uv run --directory).
var wrappers = map[string]struct {
	sub       string
	assigns   bool
	duration  bool
	valueOpts []string
	dirOpts   []string
}{
	"timeout": {duration: true, valueOpts: []string{"-s", "--signal", "-k", "--kill-after"}},
	"time":    {valueOpts: []string{"-f", "--format", "-o", "--output"}},
	"env":     {assigns: true, valueOpts: []string{"-u", "--unset"}, dirOpts: []string{"-C", "--chdir"}},
	"nice":    {valueOpts: []string{"-n", "--adjustment"}},
	"uv":      {sub: "run", valueOpts: []string{"--with", "--python", "-p", "--extra", "--group", "--package", "--env-file", "--with-requirements"}, dirOpts: []string{"--directory", "--project"}},
	"poetry":  {sub: "run", dirOpts: []string{"-C", "--directory", "-P", "--project"}},
	"pipenv":  {sub: "run"},
	"bundle":  {sub: "exec", valueOpts: []string{"--gemfile"}},
}

// NotAPass says why a run of command that reads as passed is no pass:
// the line does more than run the runner m (its status and output are not
// the runner's alone), or the runner was told to run no test (an option
// of the entry's no_run). "" when the pass counts.
func (t Table) NotAPass(command string, m Match) string {
	return t.NotAPassIn(command, m, "", "")
}

// NotAPassIn is NotAPass for a command run in cwd in the project at root
// (both absolute; "" checks no directory): a pass also counts only when
// the runner runs inside the project, for a test run elsewhere (cd
// /tmp/x, go test -C ../other, pytest /tmp/x) passes nothing of the
// project's.
func (t Table) NotAPassIn(command string, m Match, cwd, root string) string {
	calls, why := t.alone(command)
	if why != "" {
		return "Not a pass: the command " + why + "; des counts a pass only from a command that runs the test runner alone (cd DIR && RUNNER ARGS [2>&1])"
	}
	var runner Runner
	for _, r := range t {
		if r.Name == m.Runner {
			runner = r
			break
		}
	}
	if opt := runner.noRun(m.Argv); opt != "" {
		return fmt.Sprintf("Not a pass: %s with %s runs no test", runner.Name, opt)
	}
	if root != "" {
		if why := outsideProject(command, calls, cwd, root, runner); why != "" {
			return "Not a pass: " + why + "; des counts a pass only from tests run in the project"
		}
	}
	return ""
}

// alone says why command does not run a runner of t alone, "" when it
// does; then calls are the simple commands it runs, in order, as literal
// words: the prefix commands, then the runner (its wrappers included).
func (t Table) alone(command string) (calls [][]string, why string) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
	if err != nil {
		return nil, "does not parse"
	}
	var stmts []*syntax.Stmt
	var flatten func(s *syntax.Stmt) string
	flatten = func(s *syntax.Stmt) string {
		switch {
		case s.Negated:
			return "negates an exit status (!)"
		case s.Background || s.Coprocess:
			return "runs a command in the background"
		}
		if tc, ok := s.Cmd.(*syntax.TimeClause); ok && tc.Stmt != nil && len(s.Redirs) == 0 {
			// bash's time keeps the command's exit status and reports on
			// stderr, after the command's output.
			return flatten(tc.Stmt)
		}
		if b, ok := s.Cmd.(*syntax.BinaryCmd); ok {
			if b.Op != syntax.AndStmt || len(s.Redirs) > 0 {
				return fmt.Sprintf("joins commands with %s", b.Op)
			}
			if why := flatten(b.X); why != "" {
				return why
			}
			return flatten(b.Y)
		}
		stmts = append(stmts, s)
		return ""
	}
	for _, s := range f.Stmts {
		if why := flatten(s); why != "" {
			return nil, why
		}
	}
	if len(stmts) == 0 {
		return nil, "runs nothing"
	}
	for _, s := range stmts[:len(stmts)-1] {
		if !prefixRedirOK(s) {
			return nil, "redirects the input or output of a command"
		}
		argv, why := literalCall(s)
		if why != "" {
			return nil, why
		}
		if len(argv) > 0 && !prefixCommands[argv[0]] && !isActivate(argv) {
			return nil, fmt.Sprintf("runs %s besides the test runner", argv[0])
		}
		calls = append(calls, argv)
	}
	last := stmts[len(stmts)-1]
	for _, r := range last.Redirs {
		if r.Op == syntax.DplOut && r.N != nil && r.N.Value == "2" && r.Word != nil && r.Word.Lit() == "1" {
			continue // 2>&1
		}
		return nil, "redirects the test runner's input or output"
	}
	argv, why := literalCall(last)
	if why != "" {
		return nil, why
	}
	u := unwrapAll(argv, "")
	for _, name := range u.assigns {
		if notAloneVar(name) {
			return nil, "sets " + name
		}
	}
	if _, ok := t.Recognise([][]string{u.argv}); !ok {
		return nil, "does not end with the test runner"
	}
	return append(calls, argv), ""
}

// literalCall is a statement's simple command as literal words, or why it
// is not one.
func literalCall(s *syntax.Stmt) ([]string, string) {
	if d, ok := s.Cmd.(*syntax.DeclClause); ok && d.Variant.Value == "export" {
		for _, a := range d.Args {
			if a.Name != nil && notAloneVar(a.Name.Value) {
				return nil, "sets " + a.Name.Value
			}
			if a.Value != nil && !literal(a.Value) || a.Array != nil {
				return nil, "sets a variable to a computed value"
			}
		}
		return []string{"export"}, ""
	}
	call, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || s.Cmd == nil {
		return nil, "runs a compound command (a subshell, group, condition, loop or pipe)"
	}
	for _, a := range call.Assigns {
		if notAloneVar(a.Name.Value) {
			return nil, "sets " + a.Name.Value
		}
		if a.Value != nil && !literal(a.Value) {
			return nil, "sets a variable to a computed value"
		}
	}
	argv := make([]string, 0, len(call.Args))
	for _, w := range call.Args {
		if !literal(w) {
			return nil, "has a word computed when it runs (an expansion or substitution)"
		}
		argv = append(argv, unquote(w))
	}
	return argv, ""
}

// prefixRedirOK: a command before the runner may only silence itself
// (cd dir >/dev/null).
func prefixRedirOK(s *syntax.Stmt) bool {
	for _, r := range s.Redirs {
		if r.Word == nil || r.Word.Lit() != "/dev/null" {
			return false
		}
	}
	return true
}

// literal reports whether w is plain text: no expansion, substitution or
// arithmetic.
func literal(w *syntax.Word) bool {
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit, *syntax.SglQuoted:
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}

// unquote is a literal word's text.
func unquote(w *syntax.Word) string {
	var b strings.Builder
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			b.WriteString(x.Value)
		case *syntax.SglQuoted:
			b.WriteString(x.Value)
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				b.WriteString(q.(*syntax.Lit).Value)
			}
		}
	}
	return b.String()
}

// isActivate: source .venv/bin/activate, . venv/bin/activate.
func isActivate(argv []string) bool {
	return len(argv) == 2 && (argv[0] == "source" || argv[0] == ".") && path.Base(argv[1]) == "activate" && path.Base(path.Dir(argv[1])) == "bin"
}

// unwrapped is a command with its wrappers taken off.
type unwrapped struct {
	argv    []string // the command the wrappers run
	dir     string   // where it runs: the directory given, or one a wrapper's option names
	moved   bool     // a wrapper's option named the directory (env -C DIR, uv run --directory DIR)
	values  []string // the values of the wrappers' other options (uv run --with PKG), to check
	assigns []string // the variables env's NAME=VALUE operands set
}

// unwrap drops the wrappers before the command they run.
func unwrap(argv []string) []string { return unwrapAll(argv, "").argv }

// unwrapAll takes the wrappers off argv, run in dir.
func unwrapAll(argv []string, dir string) unwrapped {
	u := unwrapped{dir: dir}
	for len(argv) > 0 {
		w, ok := wrappers[path.Base(argv[0])]
		if !ok {
			break
		}
		argv = argv[1:]
		if w.sub != "" {
			if len(argv) == 0 || argv[0] != w.sub {
				argv = nil
				break
			}
			argv = argv[1:]
		}
		for len(argv) > 0 && (strings.HasPrefix(argv[0], "-") || w.assigns && strings.Contains(argv[0], "=")) {
			opt := argv[0]
			argv = argv[1:]
			name, v, eq := strings.Cut(opt, "=")
			switch {
			case !strings.HasPrefix(opt, "-"):
				u.assigns = append(u.assigns, name) // env NAME=VALUE
			case slices.Contains(w.dirOpts, name):
				if !eq && len(argv) > 0 {
					v, argv = argv[0], argv[1:]
				}
				u.dir, u.moved = join(u.dir, v), true
			case !eq && len(name) > 2 && name[1] != '-' && slices.Contains(w.dirOpts, name[:2]):
				u.dir, u.moved = join(u.dir, name[2:]), true // env -C/tmp/x
			case slices.Contains(w.valueOpts, name):
				if !eq && len(argv) > 0 {
					v, argv = argv[0], argv[1:]
				}
				u.values = append(u.values, v)
			}
		}
		if w.duration && len(argv) > 0 {
			argv = argv[1:]
		}
	}
	u.argv = argv
	return u
}

// noRun is the first word of argv an option of the entry's no_run
// matches (a word, or its name before "="), "" when none.
func (r Runner) noRun(argv []string) string {
	for _, a := range argv[min(len(r.Command), len(argv)):] {
		name, _, _ := strings.Cut(a, "=")
		for _, p := range r.NoRun {
			if ok, _ := path.Match(p, a); ok {
				return a
			}
			if ok, _ := path.Match(p, name); ok && strings.HasPrefix(a, "-") {
				return a
			}
		}
	}
	return ""
}
