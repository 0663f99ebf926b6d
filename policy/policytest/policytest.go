// Package policytest runs a team's Rego tests from Go, so that `go test ./...`
// covers its policies the way `opa test` does, with line coverage of the
// team's own files (per file and per package) and a check that every file is
// `opa fmt` formatted. `des-hook test` runs the same code from the command
// line.
//
// A team that keeps its rules in .des/policies writes one Go test:
//
//	func TestPolicies(t *testing.T) {
//		policytest.Check(t, os.DirFS(".des/policies"), policytest.WithBuiltin(), policytest.WithMinCoverage(90))
//	}
//
// [WithBuiltin] loads des's built-in policies and data beside the team's files,
// so the team's tests can query data.des.gates.* with its rules merged in. The
// team's data files patch the built-in tables as des does (objects merge key
// by key, null removes a key, any other value replaces the built-in one).
// Coverage and [WithMinCoverage] count the team's files only: the built-in
// packages are tested by des. The team's policies (not its tests) compile as
// the hook compiles them, strictly: a policy the hook would refuse (an unused
// variable, a built-in des withholds) is an error of [Run], not a pass.
package policytest

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/cover"
	"github.com/open-policy-agent/opa/v1/format"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/open-policy-agent/opa/v1/util"

	"github.com/deterministic-exec/des/internal/datadoc"
	"github.com/deterministic-exec/des/policy"
	builtin "github.com/deterministic-exec/des/rego"
)

// Option configures a run.
type Option func(*options)

type options struct {
	builtin     bool
	coverage    bool
	trace       bool
	minCoverage float64
	timeout     time.Duration
	name        string
	dirs        []dir
}

type dir struct {
	name string
	fsys fs.FS
}

// WithBuiltin loads des's built-in bundle (policies and data, not its tests)
// beside the files under test, so team tests can query the gates. The team's
// data files then patch the built-in tables as des applies them.
func WithBuiltin() Option { return func(o *options) { o.builtin = true } }

// WithCoverage measures the line coverage of the files under test (never the
// built-in bundle's) into [Report.Coverage] and [Report.Files].
func WithCoverage() Option { return func(o *options) { o.coverage = true } }

// WithMinCoverage makes [Check] fail for any package of the files under test
// whose line coverage, in percent, is below pct. It implies [WithCoverage].
// The built-in packages are never measured: a team's tests need not cover
// them.
func WithMinCoverage(pct float64) Option {
	return func(o *options) { o.minCoverage, o.coverage = pct, true }
}

// WithTrace traces each test, so that a failing one says which expression
// failed ([Result.FailedAt]). Tracing makes the run slower.
func WithTrace() Option { return func(o *options) { o.trace = true } }

// WithTimeout bounds each test (default 5 s, as `opa test`).
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// WithName names the files of the file system given to [Run] in results,
// coverage and errors: name/file.rego instead of file.rego.
func WithName(name string) Option { return func(o *options) { o.name = name } }

// WithDir adds another directory of team files under test, whose files are
// named name/file.rego. Its data files are placed from its root, as those of
// a policy directory are.
func WithDir(name string, fsys fs.FS) Option {
	return func(o *options) { o.dirs = append(o.dirs, dir{name, fsys}) }
}

// Result is the outcome of one Rego test.
type Result struct {
	Package  string // e.g. "data.des.stepfile_test"
	Name     string // e.g. "test_step_id_is_obsolete"
	Location string // file:row
	Pass     bool
	Skip     bool
	Err      error  // evaluation error, if any
	Output   string // print() output
	Duration time.Duration
	// FailedAt is, for a failing test run WithTrace, the last expression
	// that failed: "file:row: expression".
	FailedAt string
}

// Coverage is the line coverage of one package of the files under test
// (test files excluded).
type Coverage struct {
	Package    string
	Covered    int
	NotCovered int
	Files      []string
}

// Percent is the covered share of lines, 100 for a package with no lines.
func (c Coverage) Percent() float64 { return percent(c.Covered, c.NotCovered) }

// FileCoverage is the line coverage of one file under test.
type FileCoverage struct {
	File       string
	Covered    int
	NotCovered int
	// Uncovered lists the line ranges no test reached, as "12" or "12-14".
	Uncovered []string
}

// Percent is the covered share of lines, 100 for a file with no lines.
func (c FileCoverage) Percent() float64 { return percent(c.Covered, c.NotCovered) }

func percent(covered, notCovered int) float64 {
	if covered+notCovered == 0 {
		return 100
	}
	return 100 * float64(covered) / float64(covered+notCovered)
}

// Report is the outcome of [Run].
type Report struct {
	Results  []Result       // in file and line order
	Coverage []Coverage     // per package, sorted; with WithCoverage
	Files    []FileCoverage // per file, sorted; with WithCoverage
}

// Failed returns the results that neither passed nor were skipped.
func (r *Report) Failed() []Result {
	var out []Result
	for _, res := range r.Results {
		if !res.Pass && !res.Skip {
			out = append(out, res)
		}
	}
	return out
}

// Total is the coverage of every file under test together.
func (r *Report) Total() FileCoverage {
	var t FileCoverage
	for _, f := range r.Files {
		t.Covered += f.Covered
		t.NotCovered += f.NotCovered
	}
	return t
}

// Run loads every .rego file and data file of fsys (and of the WithDir
// directories), tests included, compiles the files that are not tests as
// the hook does ([policy.New]: strict, des's capabilities, the built-in
// bundle with WithBuiltin, the data), then compiles the tests with them
// and runs every test rule. Data files are read as des reads them: named
// data.json, data.yaml or data.yml, placed under data at their directory's
// path, and laid over the built-in tables key by key. A load or compile error
// is returned as an error (a [policy.Errors] with file:line:col when OPA gives
// one); failing tests are results.
func Run(ctx context.Context, fsys fs.FS, opts ...Option) (*Report, error) {
	o := options{timeout: 5 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	caps := policy.Capabilities()
	modules := map[string]*ast.Module{}
	team := map[string]bool{} // the non-test files under test, by module name
	var patches []datadoc.Patch
	var errs policy.Errors // every file that does not parse, in every directory
	for _, d := range append([]dir{{o.name, fsys}}, o.dirs...) {
		mods, docs, err := loadDir(d.fsys, d.name, true)
		var perrs policy.Errors
		if errors.As(err, &perrs) {
			errs = append(errs, perrs...)
			continue
		} else if err != nil {
			return nil, err
		}
		for name, m := range mods {
			modules[name] = m
			if !isTest(name) {
				team[name] = true
			}
		}
		patches = append(patches, docs...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	data := map[string]any{}
	var reserved [][]string
	if o.builtin {
		bfs, err := fs.Sub(builtin.FS(), "des")
		if err != nil {
			return nil, err
		}
		bmods, bdocs, err := loadDir(bfs, "rego/des", false)
		if err != nil {
			return nil, err
		}
		maps.Copy(modules, bmods)
		for _, d := range bdocs {
			if err := datadoc.Merge(data, map[string]any{"des": d.Doc}); err != nil {
				return nil, fmt.Errorf("built-in data %s: %w", d.File, err)
			}
		}
		// des sets data.des.config from the project's settings: a team
		// data file may not, here as in the hook.
		reserved = append(reserved, []string{"des", "config"})
	}
	var conflict *datadoc.ConflictError
	if err := datadoc.Apply(data, patches, reserved...); errors.As(err, &conflict) {
		return nil, policy.Errors{{File: conflict.File, Message: conflict.Error()}}
	} else if err != nil {
		return nil, err
	}

	if err := compileAsHook(ctx, o, fsys, data); err != nil {
		return nil, err
	}

	store := inmem.NewFromObject(data)
	var cov *cover.Cover
	compiler := ast.NewCompiler().
		WithCapabilities(caps).
		WithEnablePrintStatements(true).
		WithUseTypeCheckAnnotations(true)
	runner := tester.NewRunner().
		SetCompiler(compiler).
		SetStore(store).
		SetModules(modules).
		CapturePrintOutput(true).
		RaiseBuiltinErrors(true).
		SetTimeout(o.timeout)
	if o.trace {
		runner = runner.EnableTracing(true)
	}
	if o.coverage {
		cov = cover.New()
		runner = runner.SetCoverageQueryTracer(cov)
	}
	txn, err := store.NewTransaction(ctx)
	if err != nil {
		return nil, err
	}
	defer store.Abort(ctx, txn)
	ch, err := runner.RunTests(ctx, txn)
	if err != nil {
		return nil, fmt.Errorf("compile rego tests: %w", compileErrors(err))
	}
	rep := &Report{}
	type keyed struct {
		file string
		row  int
		res  Result
	}
	var all []keyed
	for r := range ch {
		res := Result{Package: r.Package, Name: r.Name, Pass: !r.Fail && r.Error == nil && !r.Skip, Skip: r.Skip, Err: r.Error, Output: string(r.Output), Duration: r.Duration}
		if r.Fail {
			res.FailedAt = failedAt(r.Trace)
		}
		k := keyed{res: res}
		if r.Location != nil {
			k.res.Location = fmt.Sprintf("%s:%d", r.Location.File, r.Location.Row)
			k.file, k.row = r.Location.File, r.Location.Row
		}
		all = append(all, k)
	}
	// In file order, whatever order the runner finished them in.
	slices.SortFunc(all, func(a, b keyed) int {
		return cmp.Or(cmp.Compare(a.file, b.file), cmp.Compare(a.row, b.row), cmp.Compare(a.res.Name, b.res.Name))
	})
	for _, k := range all {
		rep.Results = append(rep.Results, k.res)
	}
	if cov != nil {
		teamMods := map[string]*ast.Module{}
		for name := range team {
			teamMods[name] = modules[name]
		}
		cr := cov.Report(teamMods)
		rep.Coverage = byPackage(cr, teamMods)
		rep.Files = byFile(cr, teamMods)
	}
	return rep, nil
}

// compileAsHook compiles the files under test (tests aside) as the hook
// does, with policy.New: strict, des's capabilities, the built-in bundle
// when WithBuiltin, the team's data laid over it and a rule at a path the
// data sets refused. The tests below compile as `opa test` compiles them,
// which is laxer: a policy that fails here would pass them and then be
// refused by the hook.
func compileAsHook(ctx context.Context, o options, fsys fs.FS, data map[string]any) error {
	var opts []policy.Option
	if o.builtin {
		// The hook sets data.des.config from the project's settings; the
		// built-in defaults stand in for them here, so that a team data
		// file setting it is refused as in the hook.
		if des, ok := data["des"].(map[string]any); ok {
			if cfg, ok := des["config"]; ok {
				opts = append(opts, policy.WithData("des.config", cfg))
			}
		}
	} else {
		opts = append(opts, policy.WithoutBuiltin())
	}
	for _, d := range append([]dir{{o.name, fsys}}, o.dirs...) {
		opts = append(opts, policy.WithFS(d.name, d.fsys))
	}
	if _, err := policy.New(ctx, opts...); err != nil {
		return fmt.Errorf("the hook would refuse the policies: %w", err)
	}
	return nil
}

// failedAt finds the last expression of a test's own queries that failed,
// as `opa test --var-values` shows it: "" when there is none, as when the
// rule index skipped the body (data.x == "v" on its own is indexed).
func failedAt(trace []*topdown.Event) string {
	for _, e := range slices.Backward(trace) {
		if e.Op != topdown.FailOp || e.Location == nil || e.QueryID == 0 {
			continue
		}
		expr, ok := e.Node.(*ast.Expr)
		if !ok {
			continue
		}
		if _, isEvery := expr.Terms.(*ast.Every); isEvery {
			continue // the expression that failed inside is reported
		}
		return fmt.Sprintf("%s:%d: %s", e.Location.File, e.Location.Row, strings.TrimSpace(string(e.Location.Text)))
	}
	return ""
}

// compileErrors turns OPA's compile errors into policy.Errors, so that a
// caller sees file:line:col the way des reports a policy that does not
// compile.
func compileErrors(err error) error {
	var astErrs ast.Errors
	if !errors.As(err, &astErrs) {
		return err
	}
	return locate(astErrs)
}

// locate converts a parse or compile error to policy.Errors.
func locate(err error) policy.Errors {
	var astErrs ast.Errors
	if !errors.As(err, &astErrs) {
		return policy.Errors{{Message: err.Error()}}
	}
	out := make(policy.Errors, 0, len(astErrs))
	for _, e := range astErrs {
		pe := &policy.Error{Code: e.Code, Message: e.Message}
		if e.Location != nil {
			pe.File, pe.Row, pe.Col = e.Location.File, e.Location.Row, e.Location.Col
		}
		out = append(out, pe)
	}
	return out
}

func isTest(name string) bool { return strings.HasSuffix(name, "_test.rego") }

// byFile lists the coverage of each file, sorted by name.
func byFile(r cover.Report, modules map[string]*ast.Module) []FileCoverage {
	out := make([]FileCoverage, 0, len(modules))
	for name := range modules {
		fc := FileCoverage{File: name}
		if fr := r.Files[name]; fr != nil {
			fc.Covered, fc.NotCovered = fr.CoveredLines, fr.NotCoveredLines
			// Ranges come per rule head and per expression: several
			// can cover the same lines.
			var spans [][2]int
			for _, rng := range fr.NotCovered {
				if n := len(spans); n > 0 && rng.Start.Row <= spans[n-1][1]+1 {
					spans[n-1][1] = max(spans[n-1][1], rng.End.Row)
					continue
				}
				spans = append(spans, [2]int{rng.Start.Row, rng.End.Row})
			}
			for _, sp := range spans {
				if sp[0] == sp[1] {
					fc.Uncovered = append(fc.Uncovered, strconv.Itoa(sp[0]))
				} else {
					fc.Uncovered = append(fc.Uncovered, fmt.Sprintf("%d-%d", sp[0], sp[1]))
				}
			}
		}
		out = append(out, fc)
	}
	slices.SortFunc(out, func(a, b FileCoverage) int { return cmp.Compare(a.File, b.File) })
	return out
}

// byPackage sums file coverage per Rego package.
func byPackage(r cover.Report, modules map[string]*ast.Module) []Coverage {
	pkgs := map[string]*Coverage{}
	for name, m := range modules {
		pkg := strings.TrimPrefix(m.Package.Path.String(), "data.")
		c := pkgs[pkg]
		if c == nil {
			c = &Coverage{Package: pkg}
			pkgs[pkg] = c
		}
		c.Files = append(c.Files, name)
		if fr := r.Files[name]; fr != nil {
			c.Covered += fr.CoveredLines
			c.NotCovered += fr.NotCoveredLines
		}
	}
	out := make([]Coverage, 0, len(pkgs))
	for _, c := range pkgs {
		slices.Sort(c.Files)
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b Coverage) int { return cmp.Compare(a.Package, b.Package) })
	return out
}

// Unformatted returns the .rego files of fsys that `opa fmt` (Rego v1) would
// change, sorted. Hidden entries are skipped, as [Run] skips them.
func Unformatted(fsys fs.FS) ([]string, error) {
	var out []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir // not loaded either
			}
			return nil
		}
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".rego") {
			return err
		}
		src, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		formatted, err := format.SourceWithOpts(p, src, format.Opts{RegoVersion: ast.RegoV1})
		if err != nil {
			return fmt.Errorf("format %s: %w", p, err)
		}
		if !bytes.Equal(src, formatted) {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// Check runs the tests of fsys and reports through t: a run without tests,
// every failing test, every package of the files under test below the
// minimum coverage, and every file `opa fmt` would change.
func Check(t testing.TB, fsys fs.FS, opts ...Option) *Report {
	t.Helper()
	o := options{}
	for _, opt := range opts {
		opt(&o)
	}
	rep, err := Run(t.Context(), fsys, opts...)
	if err != nil {
		t.Fatalf("rego tests: %v", err)
	}
	if len(rep.Results) == 0 {
		t.Errorf("rego tests: no test rules found (a test is a rule named test_* in a *_test.rego file)")
	}
	for _, f := range rep.Failed() {
		msg := "failed"
		if f.Err != nil {
			msg = "error: " + f.Err.Error()
		}
		t.Errorf("%s %s.%s %s%s", f.Location, f.Package, f.Name, msg, indent(f.Output))
	}
	for _, c := range rep.Coverage {
		if c.Percent() < o.minCoverage {
			t.Errorf("rego coverage: package %s is %.1f%% covered, below %g%% (files %v)", c.Package, c.Percent(), o.minCoverage, c.Files)
		}
	}
	for _, d := range append([]dir{{o.name, fsys}}, o.dirs...) {
		unformatted, err := Unformatted(d.fsys)
		if err != nil {
			t.Errorf("opa fmt: %v", err)
		}
		for _, f := range unformatted {
			if d.name != "" {
				f = path.Join(d.name, f)
			}
			t.Errorf("%s is not formatted: run `opa fmt -w` on it (or `des-hook test --fmt`)", f)
		}
	}
	return rep
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "\n\t" + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n\t")
}

// loadDir parses the Rego files of fsys (test files only when tests is
// true) and reads its data files, each placed under data at its directory's
// path. Files are named name/path ("path" when name is empty); hidden
// entries below the root are skipped, as des skips them.
func loadDir(fsys fs.FS, name string, tests bool) (map[string]*ast.Module, []datadoc.Patch, error) {
	display := func(p string) string {
		if name == "" {
			return p
		}
		return path.Join(name, p)
	}
	mods := map[string]*ast.Module{}
	var docs []datadoc.Patch
	var errs policy.Errors
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		switch {
		case d.IsDir():
			return nil
		case strings.HasSuffix(p, ".rego"):
			if !tests && isTest(p) {
				return nil
			}
			src, err := fs.ReadFile(fsys, p)
			if err != nil {
				return err
			}
			m, err := ast.ParseModuleWithOpts(display(p), string(src), ast.ParserOptions{RegoVersion: ast.RegoV1, ProcessAnnotation: true})
			if err != nil {
				errs = append(errs, locate(err)...)
				return nil
			}
			if m == nil {
				errs = append(errs, &policy.Error{File: display(p), Message: "empty module: a Rego file needs a package declaration"})
				return nil
			}
			mods[display(p)] = m
		case slices.Contains([]string{"data.json", "data.yaml", "data.yml"}, d.Name()):
			b, err := fs.ReadFile(fsys, p)
			if err != nil {
				return err
			}
			var doc any
			if err := util.Unmarshal(b, &doc); err != nil {
				errs = append(errs, &policy.Error{File: display(p), Message: "not valid JSON or YAML: " + err.Error()})
				return nil
			}
			obj, ok := doc.(map[string]any)
			if !ok {
				errs = append(errs, &policy.Error{File: display(p), Message: "a data file must hold an object"})
				return nil
			}
			if dir := path.Dir(p); dir != "." {
				parts := strings.Split(dir, "/")
				for i := len(parts) - 1; i >= 0; i-- {
					obj = map[string]any{parts[i]: obj}
				}
			}
			docs = append(docs, datadoc.Patch{File: display(p), Doc: obj})
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("load rego tests: %w", err)
	}
	if len(errs) > 0 {
		return nil, nil, errs
	}
	return mods, docs, nil
}
