// Package policytest runs Rego tests from Go, so that `go test ./...` covers
// a team's policies the way `opa test` does, with coverage per Rego package
// and a check that every file is `opa fmt` formatted.
//
// A team that keeps its rules in .des/policies writes one Go test:
//
//	func TestPolicies(t *testing.T) {
//		policytest.Check(t, os.DirFS(".des/policies"), policytest.WithBuiltin(), policytest.WithMinCoverage(90))
//	}
package policytest

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/cover"
	"github.com/open-policy-agent/opa/v1/format"
	"github.com/open-policy-agent/opa/v1/loader"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"

	"github.com/deterministic-exec/des/internal/datadoc"
	"github.com/deterministic-exec/des/policy"
	builtin "github.com/deterministic-exec/des/rego"
)

// Option configures a run.
type Option func(*options)

type options struct {
	builtin     bool
	minCoverage float64
	timeout     time.Duration
}

// WithBuiltin loads des's built-in bundle (policies and data, not its tests)
// beside the file system under test, so team tests can query the gates.
func WithBuiltin() Option { return func(o *options) { o.builtin = true } }

// WithMinCoverage makes [Check] fail for any policy package whose coverage,
// in percent of its lines, is below pct.
func WithMinCoverage(pct float64) Option { return func(o *options) { o.minCoverage = pct } }

// WithTimeout bounds each test (default 5 s, as `opa test`).
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// Result is the outcome of one Rego test.
type Result struct {
	Package  string // e.g. "data.des.stepfile_test"
	Name     string // e.g. "test_step_id_is_obsolete"
	Location string // file:row
	Pass     bool
	Skip     bool
	Err      error  // evaluation error, if any
	Output   string // print() output
}

// Coverage is the line coverage of one policy package (test files excluded).
type Coverage struct {
	Package    string
	Covered    int
	NotCovered int
	Files      []string
}

// Percent is the covered share of lines, 100 for a package with no lines.
func (c Coverage) Percent() float64 {
	total := c.Covered + c.NotCovered
	if total == 0 {
		return 100
	}
	return 100 * float64(c.Covered) / float64(total)
}

// Report is the outcome of [Run].
type Report struct {
	Results  []Result
	Coverage []Coverage // sorted by package
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

// Run loads every .rego file and data file of fsys, tests included, compiles
// them with des's capabilities, and runs every test rule. A load or compile
// error is returned as an error; failing tests are results.
func Run(ctx context.Context, fsys fs.FS, opts ...Option) (*Report, error) {
	o := options{timeout: 5 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	caps := policy.Capabilities()
	modules, data, err := loadFS(fsys, ".", nil, caps, true)
	if err != nil {
		return nil, err
	}
	if o.builtin {
		bmods, bdata, err := loadFS(builtin.FS(), "des", []string{"des"}, caps, false)
		if err != nil {
			return nil, err
		}
		for name, m := range bmods {
			modules["rego/"+name] = m
		}
		if err := datadoc.Merge(data, bdata); err != nil {
			return nil, err
		}
	}

	store := inmem.NewFromObject(data)
	cov := cover.New()
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
		SetCoverageQueryTracer(cov).
		SetTimeout(o.timeout)
	txn, err := store.NewTransaction(ctx)
	if err != nil {
		return nil, err
	}
	defer store.Abort(ctx, txn)
	ch, err := runner.RunTests(ctx, txn)
	if err != nil {
		return nil, fmt.Errorf("run rego tests: %w", err)
	}
	rep := &Report{}
	for r := range ch {
		res := Result{Package: r.Package, Name: r.Name, Pass: !r.Fail && r.Error == nil && !r.Skip, Skip: r.Skip, Err: r.Error, Output: string(r.Output)}
		if r.Location != nil {
			res.Location = fmt.Sprintf("%s:%d", r.Location.File, r.Location.Row)
		}
		rep.Results = append(rep.Results, res)
	}
	rep.Coverage = byPackage(cov.Report(modules), modules)
	return rep, nil
}

// byPackage sums file coverage per Rego package, leaving test files out.
func byPackage(r cover.Report, modules map[string]*ast.Module) []Coverage {
	pkgs := map[string]*Coverage{}
	for name, m := range modules {
		if strings.HasSuffix(name, "_test.rego") {
			continue
		}
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
// change, sorted.
func Unformatted(fsys fs.FS) ([]string, error) {
	var out []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
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

// Check runs the tests of fsys and reports through t: every failing test, every
// package below the minimum coverage, and every file `opa fmt` would change.
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
		t.Errorf("rego tests: no test rules found")
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
			t.Errorf("rego coverage: package %s is %.1f%% covered, below %.0f%% (files %v)", c.Package, c.Percent(), o.minCoverage, c.Files)
		}
	}
	unformatted, err := Unformatted(fsys)
	if err != nil {
		t.Errorf("opa fmt: %v", err)
	}
	for _, f := range unformatted {
		t.Errorf("%s is not formatted: run `opa fmt -w` on it", f)
	}
	return rep
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "\n\t" + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n\t")
}

// loadFS loads the Rego and data files under root in fsys. With tests false,
// *_test.rego files are left out. Data is placed under prefix.
func loadFS(fsys fs.FS, root string, prefix []string, caps *ast.Capabilities, tests bool) (map[string]*ast.Module, map[string]any, error) {
	filter := func(_ string, info fs.FileInfo, depth int) bool {
		name := info.Name()
		switch {
		case info.IsDir():
			return depth > 0 && strings.HasPrefix(name, ".")
		case strings.HasSuffix(name, ".rego"):
			return !tests && strings.HasSuffix(name, "_test.rego")
		default:
			return !slices.Contains([]string{"data.json", "data.yaml", "data.yml"}, path.Base(name))
		}
	}
	res, err := loader.NewFileLoader().
		WithFS(fsys).
		WithProcessAnnotation(true).
		WithRegoVersion(ast.RegoV1).
		WithCapabilities(caps).
		Filtered([]string{root}, filter)
	if err != nil {
		return nil, nil, fmt.Errorf("load rego tests: %w", err)
	}
	data := res.Documents
	for i := len(prefix) - 1; i >= 0; i-- {
		data = map[string]any{prefix[i]: data}
	}
	return res.ParsedModules(), data, nil
}
