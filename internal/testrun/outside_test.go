package testrun

// Found by an attacker's review of the value_options change: words that
// take a runner's tests, or the code it runs, outside the project, and
// honest words that must not.

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/deterministic-exec/des/internal/shell"
)

func outsideRoot(t *testing.T) (root, other string) {
	root = t.TempDir()
	for _, d := range []string{"shop", "test", "spec"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root, t.TempDir()
}

// Commands that run tests (or test code) from outside the project and
// whose pass still counts (NotAPassIn == "").
func TestNotAPassOutsideWords(t *testing.T) {
	tab := builtinTable(t)
	root, o := outsideRoot(t)
	for _, c := range []string{
		// value_options whose value chooses the tests / the code that runs
		"pytest -o testpaths=" + o,             // -o is a value option; testpaths selects the tests
		"pytest --override-ini=testpaths=" + o, // same, '=' form
		"npx cypress run --config specPattern=" + o + "/*.cy.js",
		"rspec -I " + o + " -r fake_spec -e fake",                             // -r/-I load specs from outside, -e selects them
		"node --test --import " + o + "/exit0.mjs",                            // preloaded in every test process (verified: failing suite exits 0)
		"go test -ldflags=-linkmode=external\\ -extld=" + o + "/fakeld ./...", // verified: fake test binary, "ok"
		"cargo test --config " + o + "/cfg.toml",                              // cfg can set target.<triple>.runner (like go -exec)
		"mvn test -DdependenciesToScan=junit:junit",                           // surefire runs test classes from a dependency jar
		// glob / optional-value value_options that swallow a following option
		"go test -count=1 -test.v -overlay=" + o + "/overlay.json ./...", // verified: outside test file replaces the project's
		"mvn test -Dquick --file=" + o + "/pom.xml",                      // verified with mvn: builds the outside pom
		"./gradlew test -Pci --project-dir=" + o,
		"cargo test -Zunstable-options --manifest-path=" + o + "/Cargo.toml",
		"pytest --cov --rootdir=" + o,                            // --cov takes an optional value
		"npx playwright test -x --config=" + o + "/pw.config.ts", // -x is a boolean (max-failures=1)
		// path_options whose value is not a path
		"jest --config {\"rootDir\":\"" + o + "\"}",    // jest --config <path|json>
		"npx mocha --spec test/a.js," + o + "/fake.js", // mocha splits list options on ','
		"mocha '{test," + o + "}/*.js'",                // brace globs
		// attached short values
		"mvn -f" + o + "/pom.xml test", // verified with mvn
		"pytest -c" + o + "/pytest.ini",
		"python -m unittest discover -s" + o,
		// wrappers / cd
		"env --chdir=" + o + " pytest",
		"uv run --directory=" + o + " pytest",
		"cd -P " + o + " && pytest",
		"export CDPATH=" + filepath.Dir(o) + " && cd " + filepath.Base(o) + " && pytest",
		// package names, not paths
		"go test -count=1 strings",
		"pytest --pyargs json",
		// cargo test -p DEPENDENCY tests a dependency: des does not read
		// the workspace's members (noted, not closed).
	} {
		m, ok := tab.Recognise(shell.Analyze(c).Runs)
		if !ok {
			t.Errorf("%q: not recognised", c)
			continue
		}
		if why := tab.NotAPassIn(c, m, root, root); why == "" {
			t.Errorf("%q (%s) counts as the project's tests", c, m.Runner)
		}
	}
}

// Honest commands whose pass counts.
func TestNotAPassHonestWords(t *testing.T) {
	tab := builtinTable(t)
	root, _ := outsideRoot(t)
	for _, c := range []string{
		"mvn -DskipITs test",  // -D* swallows 'test': not recognised at all
		"./gradlew -Pci test", // -P* swallows 'test'
		"pytest --alluredir /tmp/allure",
		"pytest --report-log /tmp/log.jsonl",
		"pytest --json-report --json-report-file /tmp/r.json",
		"pytest --benchmark-json /tmp/b.json",
		"vitest run --outputFile.junit=/tmp/junit.xml",
		"vitest run --coverage.reportsDirectory=/tmp/cov",
		"npm test -- --coverageDirectory=/tmp/cov",
		"npm test -- --outputFile=/tmp/out.json",
		"yarn test --coverageDirectory /tmp/cov",
		"go test ./... -args -golden /tmp/golden",
		"cargo test -- --logfile /tmp/t.log",
		"npx playwright test --base-url=http://localhost:3000",
		"pytest tests/test_cart.py::TestTotal::test_sum",
		"go test -run 'TestA|TestB' -count=1 ./...",
		"npm test -- --watch=false",
		"dotnet test /p:CollectCoverage=true", // an MSBuild property, not a path
	} {
		m, ok := tab.Recognise(shell.Analyze(c).Runs)
		if !ok {
			t.Errorf("%q is not recognised as a test run", c)
			continue
		}
		if why := tab.NotAPassIn(c, m, root, root); why != "" {
			t.Errorf("%q: %s", c, why)
		}
	}
}

// dotnet's host option -d (diagnostics) is a flag: "dotnet -d build test"
// builds.
func TestRecogniseNoValueOfAFlag(t *testing.T) {
	tab := builtinTable(t)
	if m, ok := tab.Recognise([][]string{{"dotnet", "-d", "build", "test"}}); ok {
		t.Errorf("dotnet -d build test recognised as %q", m.Runner)
	}
}
