package testrun

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/internal/shell"
)

// A pass counts only from a line that runs the test runner alone, with
// tests to run: the call's exit status and output are the whole line's.
func TestNotAPass(t *testing.T) {
	tab := builtinTable(t)
	cases := []struct {
		command string
		why     string // "" the pass counts; else a part of the reason
	}{
		{"go test ./...", ""},
		{"cd shop && go test -v -cover ./... 2>&1", ""},
		{"cd shop; go test -count=1 ./...", ""},
		{"CGO_ENABLED=0 go test -race ./...", ""},
		{"timeout 600 go test ./...", ""},
		{"cd web && npx jest --coverage", ""},
		{"source .venv/bin/activate && pytest -q tests/", ""},
		{"uv run pytest -x", ""},
		{"export CI=true && npm test", ""},
		{"cd /tmp/x >/dev/null && cargo test", ""},
		{`pytest -k "not slow"`, ""},

		// The line's status or output is not the runner's.
		{"go test ./... >/dev/null 2>&1; true", "redirects"},
		{"go test ./... > out.txt", "redirects"},
		{"go test ./... || true", "joins commands with ||"},
		{"true || go test ./...", "joins commands with ||"},
		{"go test ./... | grep -v FAIL", "joins commands with |"},
		{"go test ./... 2>&1 | tail -1", "joins commands with |"},
		{"go test ./...; true", "runs go besides"},
		{"go test ./... && echo 'ok  x 0.1s'", "runs go besides"},
		{"! go test ./...", "negates"},
		{"go test ./... &", "background"},
		{"if false; then go test ./...; fi", "compound command"},
		{"(go test ./...)", "compound command"},
		{"bash -c 'go test ./... || true'", "does not end with the test runner"},
		{"go test $(echo -list .) ./...", "computed"},
		{"PATH=./fake:$PATH go test ./...", "sets PATH"},
		{"export PATH=./fake && go test ./...", "sets PATH"},
		{"GOFLAGS=-exec=true go test ./...", "sets GOFLAGS"},
		{"PYTEST_ADDOPTS=--collect-only pytest", "sets PYTEST_ADDOPTS"},
		{"go() { echo ok; }; go test ./...", "compound command"},

		// The runner runs no test.
		{"go test -list . ./...", "with -list runs no test"},
		{"go test -list=. ./...", "with -list=. runs no test"},
		{"go test -c ./...", "with -c runs no test"},
		{"go test -exec true ./...", "with -exec runs no test"},
		{"go test -n ./...", "with -n runs no test"},
		{"pytest --collect-only", "with --collect-only runs no test"},
		{"pytest --version", "with --version runs no test"},
		{"cargo test --no-run", "with --no-run runs no test"},
		{"cargo nextest list", "with list runs no test"},
		{"npx jest --listTests", "with --listTests runs no test"},
		{"mvn test -DskipTests", "with -DskipTests runs no test"},
		{"npx mocha --dry-run", "with --dry-run runs no test"},
		{"npm test -- --listTests", "with --listTests runs no test"},
	}
	for _, c := range cases {
		m, ok := tab.Recognise(shell.Analyze(c.command).Runs)
		if !ok {
			t.Errorf("%q: not recognised as a test run", c.command)
			continue
		}
		got := tab.NotAPass(c.command, m)
		switch {
		case c.why == "" && got != "":
			t.Errorf("%q: NotAPass = %q, want the pass to count", c.command, got)
		case c.why != "" && !strings.Contains(got, c.why):
			t.Errorf("%q: NotAPass = %q, want %q in it", c.command, got, c.why)
		}
	}
}

func TestParseTableNoRun(t *testing.T) {
	for _, bad := range []any{
		map[string]any{"x": map[string]any{"command": []any{"x"}, "no_run": "-c"}},
		map[string]any{"x": map[string]any{"command": []any{"x"}, "no_run": []any{""}}},
		map[string]any{"x": map[string]any{"command": []any{"x"}, "no_run": []any{"["}}},
		map[string]any{"x": map[string]any{"command": []any{"x"}, "value_options": "-o"}},
		map[string]any{"x": map[string]any{"command": []any{"x"}, "value_options": []any{1}}},
		map[string]any{"x": map[string]any{"command": []any{"x"}, "path_options": []any{""}}},
	} {
		if _, err := ParseTable(bad); err == nil {
			t.Errorf("ParseTable(%v): no error", bad)
		}
	}
}

func TestNotAPassOutsideTheProject(t *testing.T) {
	tab := builtinTable(t)
	root := t.TempDir()
	for _, dir := range []string{"shop", "shop/sub"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	other := t.TempDir()
	if err := os.Symlink(other, filepath.Join(root, "elsewhere")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		command string
		outside bool
	}{
		{"go test ./...", false},
		{"cd shop && go test ./...", false},
		{"cd shop/sub && cd .. && go test ./...", false},
		{"go test -C shop ./...", false},
		{"go test -coverprofile=/tmp/cover.out ./...", false},
		{"go test -o /tmp/x.test ./...", false},
		{"cd " + other + " && go test ./...", true},
		{"cd shop && cd " + other + " && go test ./...", true},
		{"cd ../.. && go test ./...", true},
		{"cd elsewhere && go test ./...", true},
		{"go test -C " + other + " ./...", true},
		{"go test -C=../.. ./...", true},
		{"go test " + other + "/...", true},
		{"pytest " + other, true},
		{"pytest --rootdir=" + other, true},
		{"cd ~ && go test ./...", true},
		// The word after an option is a path to test unless the option
		// takes a value that is none (the runner's value_options).
		{"go test -v " + other + "/...", true},
		{"go test -json -short " + other + "/...", true},
		{"go test -count 1 -run TestX " + other + "/...", true},
		{"go test -run TestX -v ./...", false},
		{"go test -coverprofile /tmp/c.out -v ./...", false},
		{"go test -count 1 -timeout 30s -tags integration ./...", false},
		{"go test -v -- " + other + "/...", true},
		{"pytest -v " + other, true},
		{"pytest -x --tb short " + other, true},
		{"pytest --junitxml /tmp/r.xml -v shop", false},
		{"pytest --basetemp /tmp/bt -k slow shop", false},
		{"pytest -c " + other + "/pytest.ini", true}, // a configuration that may set where the tests are
		{"npm test -- " + other, true},
		{"npm test -- --coverage", false},
		{"mvn -f " + other + "/pom.xml test", true},
		{"mvn -s /etc/maven/settings.xml test", true}, // settings can ignore failures: checked as a path
		{"mvn -s conf/settings.xml test", false},
		{"jest --outputFile /tmp/out.json", false},
		{"jest --config " + other + "/jest.config.js", true},
		{"jest --config=" + other + "/jest.config.js", true},
		{"jest --outputFile=/tmp/out.json", false},
		{"go -C " + other + " test ./...", true},
		{"npm --prefix " + other + " test", true},
		{"npm --prefix shop test", false},
		{"mvn test -Dmaven.repo.local=.m2", false},
		{"mvn test -DargLine=-Xmx1g", false},
	} {
		last := strings.Fields(c.command[strings.LastIndex(c.command, "&&")+1:])
		if last[0] == "&" {
			last = last[1:]
		}
		r, ok := tab.Recognise([][]string{last})
		if !ok {
			t.Fatalf("%q: runner not recognised", c.command)
		}
		why := tab.NotAPassIn(c.command, r, root, root)
		if got := why != ""; got != c.outside {
			t.Errorf("%q: NotAPassIn = %q, want outside %v", c.command, why, c.outside)
		}
	}
}

// bash's time keyword times the runner and keeps its exit status: its
// report goes to stderr, after the runner's output.
func TestNotAPassUnderTime(t *testing.T) {
	tab := builtinTable(t)
	for _, c := range []string{"time go test ./...", "cd shop && time go test ./...", "time -p go test ./..."} {
		m, ok := tab.Recognise(shell.Analyze(c).Runs)
		if !ok {
			t.Fatalf("%q: not recognised", c)
		}
		if why := tab.NotAPass(c, m); why != "" {
			t.Errorf("%q: %s", c, why)
		}
	}
	for _, c := range []string{"time (go test ./...; true)", "time go test ./... | tail"} {
		m, _ := tab.Recognise(shell.Analyze(c).Runs)
		if why := tab.NotAPass(c, m); why == "" {
			t.Errorf("%q counts as a pass", c)
		}
	}
}
