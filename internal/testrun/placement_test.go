package testrun

// Found by a second attacker's review of the placement of test runs: each
// case failed before it was mended.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/internal/shell"
)

// linkedRoot is a project (module example.com/m) with link -> OTHER/sub
// and elsewhere -> OTHER, and OTHER outside it.
func linkedRoot(t *testing.T) (root, other string) {
	t.Helper()
	root, other = outsideRoot(t)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/m\n"), 0o644))
	must(os.MkdirAll(filepath.Join(other, "sub"), 0o755))
	must(os.Symlink(filepath.Join(other, "sub"), filepath.Join(root, "link")))
	must(os.Symlink(other, filepath.Join(root, "elsewhere")))
	return root, other
}

func placement(t *testing.T, root, other string, cmds []string, wantPass bool) {
	t.Helper()
	tab := builtinTable(t)
	for _, c := range cmds {
		c = strings.ReplaceAll(c, "OTHER", other)
		m, ok := tab.Recognise(shell.Analyze(c).Runs)
		if !ok {
			if wantPass {
				t.Errorf("%q is not recognised as a test run", c)
			}
			continue
		}
		why := tab.NotAPassIn(c, m, root, root)
		switch {
		case wantPass && why != "":
			t.Errorf("%q (%s): %s", c, m.Runner, why)
		case !wantPass && why == "":
			t.Errorf("%q (%s) counts as the project's tests", c, m.Runner)
		}
	}
}

// Runs of tests (or of code) outside the project whose pass counts.
func TestNotAPassOutsideThroughLinksEnvAndCode(t *testing.T) {
	root, other := linkedRoot(t)
	placement(t, root, other, []string{
		// go's value flags take the next word whatever it is: -skip's value
		// is "-args", which des reads as the end of go test's words. Verified:
		// 'ok unicode/utf16' (the standard library's tests).
		"go test -skip -args unicode/utf16",
		"go test -skip -args -overlay=OTHER/o.json ./...",
		// Physical "..": cd -P, set -P, env -C and go -C chdir through the
		// link (verified: bash and go run in OTHER), where ".." cleaned as text stays inside.
		"cd -P link/.. && pytest",
		"set -P && cd link/.. && pytest",
		"env -C link/.. pytest",
		"go test -C link/.. ./...",
		// Unquoted globs and braces are expanded by the shell, not by des
		// (verified: cd elsewher? lands in the link; cd {OTHER,} in OTHER).
		"cd elsewher? && pytest",
		"pytest elsewher?",
		"go test -C elsewher? ./...",
		"cd {OTHER,} && pytest",
		// A short option cluster with an attached path value (argparse:
		// -q -c OTHER/pytest.ini; unittest: -v -s OTHER).
		"pytest -qcOTHER/pytest.ini",
		"python -m unittest discover -vsOTHER",
		// The runner itself, or a script sourced before it, outside.
		"OTHER/pytest",
		"OTHER/go test ./...",
		"OTHER/python3 -m pytest",
		"source OTHER/bin/activate && pytest",
		// env's NAME=VALUE operands are read as assignments are
		// (verified: a failing test reads 'ok' under env GOFLAGS=-exec=true).
		"env GOFLAGS=-exec=true go test ./...",
		"env PYTEST_ADDOPTS=--collect-only pytest",
		"env PATH=OTHER:/usr/bin pytest",
		// Variables that carry the same (verified:
		// GOENV=file with GOFLAGS=-exec=true reads 'ok' for a failing test).
		"GOENV=OTHER/goenv go test ./...",
		"npm_config_node_options=--require=OTHER/e.js npm test",
		"npm_config_script_shell=OTHER/sh npm test",
		"PYTHONPATH=OTHER pytest", // OTHER/sitecustomize.py runs first
		"CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER=OTHER/fake cargo test",
		"RUSTC_WRAPPER=OTHER/w cargo test",
		"JAVA_TOOL_OPTIONS=-javaagent:OTHER/a.jar mvn test",
		"RUBYOPT=-rOTHER/e.rb rspec",
		// value_options whose value is code or configuration that runs.
		"npx jest --globalSetup OTHER/setup.js",
		"npx jest --setupFilesAfterEnv OTHER/s.js",
		"npx jest --testEnvironment OTHER/env.js",
		"npx jest --reporters=OTHER/r.js",
		"npx mocha --require OTHER/e.js",
		"npx mocha -r OTHER/e.js",
		"npx mocha --reporter OTHER/r.js",
		"node --test --test-reporter=OTHER/r.mjs",
		"npx playwright test --reporter=OTHER/r.js", // onEnd may return {status: 'passed'}
		"npx vitest run --pool OTHER/pool.js",
		"npx vitest run --reporter=OTHER/r.ts",
		"bun test --preload OTHER/e.ts",
		"phpunit --bootstrap OTHER/e.php",
		"dotnet test --settings OTHER/x.runsettings", // TestAdaptersPaths
		"dotnet test -p:CustomBeforeMicrosoftCommonTargets=OTHER/e.targets",
		"mvn test -DargLine=-javaagent:OTHER/a.jar",
		"mvn -s OTHER/settings.xml test",
		"./gradlew test -g OTHER", // OTHER/init.d/*.gradle run
		"uv run --with OTHER/pkg pytest",
		"uv run --with=OTHER/pkg pytest",
		"uv run --env-file OTHER/.env pytest",
		"cargo nextest run --tool-config-file nextest:OTHER/c.toml",
	}, false)
}

// Options with which the runner runs no test, or exits 0 on failures.
func TestNoRunAndNoTestOutputs(t *testing.T) {
	root, other := linkedRoot(t)
	placement(t, root, other, []string{
		"mvn test -Dmaven.test.skip.exec=true",
		"mvn test -Dmaven.test.failure.ignore=true",
	}, false)
	zero := 0
	for _, out := range []string{
		"[INFO] Tests are skipped.\n[INFO] BUILD SUCCESS\n",
		"[INFO] No tests to run.\n[INFO] BUILD SUCCESS\n",
		"[ERROR] Tests run: 3, Failures: 2, Errors: 0, Skipped: 0\n[INFO] BUILD SUCCESS\n",
		"All examples were filtered out\n\nFinished in 0.001 seconds\n0 examples, 0 failures\n",
		"PHPUnit 10.5.0 by Sebastian Bergmann and contributors.\n\nNo tests executed!\n",
		"No test matches the given testcase filter `Nothing` in /p/bin/Debug/net8.0/T.dll\n",
	} {
		if o := Parse(out, &zero, false); o.Result == Passed {
			t.Errorf("Parse(%q) = passed", out)
		}
	}
}

// Honest commands whose pass no longer counts, or that are not recognised.
func TestHonestCommandsCount(t *testing.T) {
	root, other := linkedRoot(t)
	placement(t, root, other, []string{
		"npx cypress run --config baseUrl=http://localhost:3000", // ':' + '/' read as a path
		"pytest --base-url http://localhost:8000",
		"go test -gcflags 'all=-N -l' ./...", // read as an import path
		"go test foo_test.go foo.go",         // files, read as import paths
		"mocha 'test/**/*.{js,ts}'",          // a brace glob the runner expands
		"mvn clean test",
		"./gradlew clean test",
	}, true)
}

// go.work: a workspace root without go.mod, and a sibling module.
func TestGoWorkspacePackages(t *testing.T) {
	root := t.TempDir()
	for f, s := range map[string]string{
		"go.work":  "go 1.22\n\nuse (\n\t./a\n\t./b\n)\n",
		"a/go.mod": "module example.com/a\n",
		"b/go.mod": "module example.com/b\n",
	} {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	placement(t, root, "", []string{
		"go test example.com/a/... example.com/b/...",
		"cd a && go test example.com/b/...",
	}, true)
}
