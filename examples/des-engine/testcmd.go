package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/format"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/policy"
	"github.com/deterministic-exec/des/policy/policytest"
)

// exitTestFailed is `des-hook test`'s status when the tests ran and did not
// all pass (or coverage or formatting fell short).
const exitTestFailed = 1

// testDir is one directory of team policies under test.
type testDir struct {
	name string // as shown: the setting's value or the argument
	path string // on disk
}

func runTest(ctx context.Context, e env, args []string) int {
	fs := newFlagSet(e, "test", "[--coverage] [--min-coverage N] [--format pretty|json] [-v] [--fmt] [DIR...]",
		"Runs a team's Rego tests (rules named test_* in *_test.rego files) with des's built-in\n"+
			"policies and data loaded, as `opa test` would: no des clone and no opa install needed.\n"+
			"DIR defaults to the policy directories of the settings (policy_dirs, DES_POLICY_DIRS),\n"+
			"relative to the project root (CLAUDE_PROJECT_DIR, else the git top level, else the\n"+
			"current directory); a DIR given is relative to the current directory. Data files in\n"+
			"them patch the built-in tables as the hook applies them. The team's policies compile\n"+
			"first as the hook compiles them (strict: an unused variable is an error; des's\n"+
			"capabilities; the built-in bundle and data): a policy the hook would refuse fails\n"+
			"here, not in the hook. Coverage counts the team's files only. Every .rego file\n"+
			"must be `opa fmt` formatted (--fmt formats them). With opa_url set, says on stderr\n"+
			"that the hook does not enforce the policies tested: the OPA server's decide.\n"+
			"Exit status: 0 every test passed; 1 a test failed or erred, coverage is below\n"+
			"--min-coverage, or a file is not formatted; 2 the tests could not run (bad flags,\n"+
			"a directory missing, a file that does not parse or compile as the hook compiles it,\n"+
			"no tests found).")
	coverage := fs.Bool("coverage", false, "report the line coverage of the team's files")
	minCoverage := fs.Float64("min-coverage", 0, "fail when a team package's line coverage, in percent, is below `N` (implies --coverage)")
	outFormat := fs.String("format", "pretty", "output format: pretty or json")
	verbose := fs.Bool("v", false, "list every test, not only the failing ones, and the failures again at the end with the expression that failed")
	fmtWrite := fs.Bool("fmt", false, "format, in place, the .rego files that opa fmt would change, then test")
	if code, done := parseFlags(fs, args, -1); done {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "des-hook test: "+format+"\n", a...)
		return exitUsage
	}
	if *outFormat != "pretty" && *outFormat != "json" {
		return fail("--format %q: use pretty or json", *outFormat)
	}
	if *minCoverage < 0 || *minCoverage > 100 {
		return fail("--min-coverage %g: give a percentage from 0 to 100", *minCoverage)
	}
	dirs, code := testDirs(ctx, e, fs.Args())
	if code != exitOK {
		return code
	}
	// With opa_url the hook enforces the server's policies, not these: a
	// pass here says nothing about what the hook decides.
	if cfg, err := des.LoadConfig(commandRoot(ctx, e.lookupEnv), e.lookupEnv); err == nil && cfg.OPAURL != "" {
		names := make([]string, len(dirs))
		for i, d := range dirs {
			names[i] = d.name
		}
		fmt.Fprintf(e.stderr, "des-hook test: decisions come from the OPA server at %s (opa_url), with the policies loaded into it: "+
			"the hook does not enforce %s; they run here for authoring, and are enforced once loaded into that server\n", cfg.OPAURL, strings.Join(names, ", "))
	}

	var unformatted []string
	for _, d := range dirs {
		files, err := policytest.Unformatted(os.DirFS(d.path))
		if err != nil {
			// A file that does not parse: the run below reports it
			// with its file:line:col.
			continue
		}
		for _, f := range files {
			if *fmtWrite {
				if err := formatFile(filepath.Join(d.path, filepath.FromSlash(f))); err != nil {
					return fail("--fmt: %v", err)
				}
				fmt.Fprintf(e.stderr, "des-hook test: formatted %s\n", filepath.Join(d.name, f))
				continue
			}
			unformatted = append(unformatted, filepath.Join(d.name, f))
		}
	}

	opts := []policytest.Option{policytest.WithBuiltin(), policytest.WithName(dirs[0].name)}
	if *coverage || *minCoverage > 0 {
		opts = append(opts, policytest.WithCoverage())
	}
	if *verbose {
		opts = append(opts, policytest.WithTrace())
	}
	for _, d := range dirs[1:] {
		opts = append(opts, policytest.WithDir(d.name, os.DirFS(d.path)))
	}
	rep, err := policytest.Run(ctx, os.DirFS(dirs[0].path), opts...)
	if err != nil {
		var perrs policy.Errors
		if errors.As(err, &perrs) {
			return fail("cannot run the tests: the policies do not load or compile as the hook loads and compiles them (strictly, as des-hook policies does); fix the file at the location below, then run des-hook test again\n%v", perrs)
		}
		return fail("cannot run the tests: %v", err)
	}
	if len(rep.Results) == 0 {
		names := make([]string, len(dirs))
		for i, d := range dirs {
			names[i] = d.name
		}
		return fail("no tests found in %s: a test is a rule named test_* in a file named *_test.rego", strings.Join(names, ", "))
	}
	var low []policytest.Coverage
	for _, c := range rep.Coverage {
		if c.Percent() < *minCoverage {
			low = append(low, c)
		}
	}

	if *outFormat == "json" {
		if code := writeJSON(e, "test", testJSON(rep, unformatted, *minCoverage, low)); code != exitOK {
			return code
		}
	} else {
		printTests(e.stdout, rep, *verbose)
		printCoverage(e.stdout, rep, *minCoverage, low)
		for _, f := range unformatted {
			fmt.Fprintf(e.stdout, "FMT: %s is not formatted as `opa fmt` formats it: run `des-hook test --fmt` to format it\n", f)
		}
	}
	if len(rep.Failed()) > 0 || len(low) > 0 || len(unformatted) > 0 {
		return exitTestFailed
	}
	return exitOK
}

// testDirs returns the directories to test: the arguments, else the
// configured policy directories of the project.
func testDirs(ctx context.Context, e env, args []string) ([]testDir, int) {
	var dirs []testDir
	if len(args) > 0 {
		for _, a := range args {
			dirs = append(dirs, testDir{name: a, path: a})
		}
	} else {
		root := commandRoot(ctx, e.lookupEnv)
		cfg, err := des.LoadConfig(root, e.lookupEnv)
		if err != nil {
			fmt.Fprintf(e.stderr, "des-hook test: %v\n", err)
			return nil, exitUsage
		}
		for _, d := range cfg.PolicyDirs {
			p := d
			if !filepath.IsAbs(p) {
				p = filepath.Join(root, p)
			}
			dirs = append(dirs, testDir{name: d, path: p})
		}
		if len(dirs) == 0 {
			fmt.Fprintln(e.stderr, "des-hook test: the setting policy_dirs names no directory: name one there, or pass DIR")
			return nil, exitUsage
		}
	}
	for _, d := range dirs {
		info, err := os.Stat(d.path)
		switch {
		case errors.Is(err, os.ErrNotExist) && len(args) == 0:
			fmt.Fprintf(e.stderr, "des-hook test: the policy directory %s does not exist (under %s): put the team's .rego files and their *_test.rego tests there, or pass DIR\n", d.name, commandRoot(ctx, e.lookupEnv))
			return nil, exitUsage
		case errors.Is(err, os.ErrNotExist):
			fmt.Fprintf(e.stderr, "des-hook test: %s: no such directory\n", d.name)
			return nil, exitUsage
		case err != nil:
			fmt.Fprintf(e.stderr, "des-hook test: %v\n", err)
			return nil, exitUsage
		case !info.IsDir():
			fmt.Fprintf(e.stderr, "des-hook test: %s is not a directory: pass the directory that holds the policies and their tests\n", d.name)
			return nil, exitUsage
		}
	}
	return dirs, exitOK
}

// formatFile rewrites a Rego file as `opa fmt` (Rego v1) formats it. Only
// a regular file is rewritten: a symbolic link would carry the write out of
// the directory named (into a protected policy directory, say).
func formatFile(path string) error {
	if fi, err := os.Lstat(path); err != nil {
		return err
	} else if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (%s): des-hook test --fmt formats only the files of the directory, not what a link points to; format the file where it is", path, fi.Mode().Type())
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := format.SourceWithOpts(path, src, format.Opts{RegoVersion: ast.RegoV1})
	if err != nil {
		return fmt.Errorf("format %s: %w", path, err)
	}
	return fileio.WriteAtomic(path, out)
}

func testOutcome(r policytest.Result) string {
	switch {
	case r.Skip:
		return "SKIPPED"
	case r.Err != nil:
		return "ERROR"
	case r.Pass:
		return "PASS"
	default:
		return "FAIL"
	}
}

const rule = "--------------------------------------------------------------------------------"

// printTests writes the results as `opa test` does: the failing tests (every
// test with verbose) under their file, then the counts.
func printTests(w io.Writer, rep *policytest.Report, verbose bool) {
	var pass, fail, skip, errs int
	lastFile, dirty := "", false
	line := func(r policytest.Result) string {
		return fmt.Sprintf("%s.%s: %s (%v)", r.Package, r.Name, testOutcome(r), r.Duration)
	}
	for _, r := range rep.Results {
		switch testOutcome(r) {
		case "SKIPPED":
			skip++
		case "ERROR":
			errs++
		case "PASS":
			pass++
		default:
			fail++
		}
		if r.Pass && !verbose {
			continue
		}
		dirty = true
		if file, _, ok := cutRow(r.Location); ok {
			if lastFile != "" && lastFile != file {
				fmt.Fprintln(w)
			}
			fmt.Fprintf(w, "%s:\n", r.Location)
			lastFile = file
		}
		fmt.Fprintln(w, line(r))
		if r.Output != "" {
			fmt.Fprintf(w, "\n  %s\n\n", strings.ReplaceAll(strings.TrimSpace(r.Output), "\n", "\n  "))
		}
		if r.Err != nil {
			fmt.Fprintf(w, "  %v\n", r.Err)
		}
	}
	if verbose && fail+errs > 0 {
		fmt.Fprintf(w, "%s\nFAILURES\n%s\n", rule, rule)
		for _, r := range rep.Failed() {
			fmt.Fprintf(w, "%s\n  test at %s\n", line(r), r.Location)
			if r.FailedAt != "" {
				fmt.Fprintf(w, "  failed at %s\n", r.FailedAt)
			}
			if r.Err != nil {
				fmt.Fprintf(w, "  %v\n", r.Err)
			}
			fmt.Fprintln(w)
		}
	}
	if dirty {
		fmt.Fprintln(w, rule)
	}
	total := pass + fail + skip + errs
	for _, c := range []struct {
		label string
		n     int
	}{{"PASS", pass}, {"FAIL", fail}, {"SKIPPED", skip}, {"ERROR", errs}} {
		if c.n > 0 {
			fmt.Fprintf(w, "%s: %d/%d\n", c.label, c.n, total)
		}
	}
}

// cutRow splits "file:row".
func cutRow(loc string) (file, row string, ok bool) {
	i := strings.LastIndexByte(loc, ':')
	if i < 0 {
		return "", "", false
	}
	return loc[:i], loc[i+1:], true
}

func printCoverage(w io.Writer, rep *policytest.Report, minCoverage float64, low []policytest.Coverage) {
	if rep.Files == nil {
		return
	}
	total := rep.Total()
	fmt.Fprintf(w, "%s\nCOVERAGE: %.1f%% of the team's lines (%d of %d)\n", rule, total.Percent(), total.Covered, total.Covered+total.NotCovered)
	for _, f := range rep.Files {
		fmt.Fprintf(w, "%s: %.1f%%", f.File, f.Percent())
		if len(f.Uncovered) > 0 {
			fmt.Fprintf(w, " (lines not covered: %s)", strings.Join(f.Uncovered, ", "))
		}
		fmt.Fprintln(w)
	}
	for _, c := range low {
		fmt.Fprintf(w, "COVERAGE: package %s is %.1f%% covered, below --min-coverage %g: add tests for the lines listed above (%s)\n",
			c.Package, c.Percent(), minCoverage, strings.Join(c.Files, ", "))
	}
}

// testJSONResult is one test in `des-hook test --format json`.
type testJSONResult struct {
	Package  string        `json:"package"`
	Name     string        `json:"name"`
	Location string        `json:"location"`
	Outcome  string        `json:"outcome"` // pass, fail, error, skipped
	Error    string        `json:"error,omitempty"`
	Output   string        `json:"output,omitempty"`
	Duration time.Duration `json:"duration"` // nanoseconds, as opa test --format json
}

type testJSONFile struct {
	File       string   `json:"file"`
	Covered    int      `json:"covered_lines"`
	NotCovered int      `json:"not_covered_lines"`
	Percent    float64  `json:"coverage"`
	Uncovered  []string `json:"not_covered,omitempty"`
}

type testJSONPackage struct {
	Package string   `json:"package"`
	Percent float64  `json:"coverage"`
	Files   []string `json:"files"`
	Below   bool     `json:"below_minimum,omitempty"`
}

type testJSONCoverage struct {
	Percent  float64           `json:"coverage"`
	Minimum  float64           `json:"minimum,omitempty"`
	Files    []testJSONFile    `json:"files"`
	Packages []testJSONPackage `json:"packages"`
}

type testJSONReport struct {
	Results     []testJSONResult  `json:"results"`
	Coverage    *testJSONCoverage `json:"coverage,omitempty"`
	Unformatted []string          `json:"unformatted"`
}

func testJSON(rep *policytest.Report, unformatted []string, minCoverage float64, low []policytest.Coverage) testJSONReport {
	out := testJSONReport{Results: []testJSONResult{}, Unformatted: unformatted}
	if out.Unformatted == nil {
		out.Unformatted = []string{}
	}
	for _, r := range rep.Results {
		jr := testJSONResult{Package: r.Package, Name: r.Name, Location: r.Location, Outcome: strings.ToLower(testOutcome(r)), Output: r.Output, Duration: r.Duration}
		if r.Err != nil {
			jr.Error = r.Err.Error()
		}
		out.Results = append(out.Results, jr)
	}
	if rep.Files != nil {
		c := &testJSONCoverage{Percent: rep.Total().Percent(), Minimum: minCoverage, Files: []testJSONFile{}, Packages: []testJSONPackage{}}
		for _, f := range rep.Files {
			c.Files = append(c.Files, testJSONFile{f.File, f.Covered, f.NotCovered, f.Percent(), f.Uncovered})
		}
		for _, p := range rep.Coverage {
			below := false
			for _, l := range low {
				below = below || l.Package == p.Package
			}
			c.Packages = append(c.Packages, testJSONPackage{p.Package, p.Percent(), p.Files, below})
		}
		out.Coverage = c
	}
	return out
}
