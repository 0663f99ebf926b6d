package testrun

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/deterministic-exec/des/internal/shell"
)

// builtinTable is the built-in table, read from the policies' data file.
func builtinTable(t *testing.T) Table {
	t.Helper()
	raw, err := os.ReadFile("../../rego/des/evidence/data.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TestRunners any `json:"test_runners"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	tab, err := ParseTable(doc.TestRunners)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func TestRecognise(t *testing.T) {
	tab := builtinTable(t)
	cases := []struct {
		command, runner string
	}{
		// The peer's suite's commands, and its TEST_COMMAND_PATTERNS.
		{"npm test", "npm test"},
		{"npm install", ""},
		{"pytest tests/", "pytest"},
		{"go test ./...", "go test"},
		{"cargo test", "cargo test"},
		{"jest --coverage", "jest"},
		{"vitest run", "vitest"},
		{"mvn test", "mvn test"},
		{"npm run test", "npm run test"},
		{"npm run test:unit", "npm run test"},
		{"npm run test:integration", "npm run test"},
		{"npm run e2e", "npm run e2e"},
		{"yarn test", "yarn test"},
		{"pnpm test", "pnpm test"},
		{"python -m pytest -x", "python -m pytest"},
		{"python3 -m pytest", "python -m pytest"},
		{"gradle test", "gradle test"},
		{"./gradlew test", "gradle test"},
		{"dotnet test", "dotnet test"},
		{"mocha", "mocha"},
		{"phpunit", "phpunit"},
		{"vendor/bin/phpunit tests", "phpunit"},
		{"rspec", "rspec"},
		{"bundle exec rspec spec/a_spec.rb", "rspec"},
		{"cypress run", "cypress run"},
		{"playwright test", "playwright test"},
		{"npx playwright test", "npx playwright test"},
		{"npx jest", "npx jest"},
		{"npx vitest run", "npx vitest"},
		// des's additions.
		{"node --test", "node --test"},
		{"python3 -m unittest -v", "python -m unittest"},
		{"bun test", "bun test"},
		// Found among the commands a line runs.
		{"cd sub && CI=1 go test -v -run TestX ./... 2>&1 | tail -20", "go test"},
		{"timeout 300 npm test -- --watch=false", "npm test"},
		{"uv run pytest -q", "pytest"},
		{"bash -c 'go test ./...'", "go test"},
		// An option of the entry's value_options or path_options is passed
		// over with its value; any other option is a flag.
		{"go -C sub test", "go test"},
		{"npm --prefix web test", "npm test"},
		{"mvn -f web/pom.xml test", "mvn test"},
		{"./gradlew -p backend test", "gradle test"},
		{"npm --silent install test", ""},
		{"go -v build test", ""},
		// Not test runs: the words appear, nothing runs them.
		{"cat jest.config.js", ""},
		{"echo go test", ""},
		{"grep -r pytest .", ""},
		{"npm install --save-dev jest", ""},
		{"go build ./...", ""},
		{"git commit -m 'go test passes'", ""},
	}
	for _, c := range cases {
		m, ok := tab.Recognise(shell.Analyze(c.command).Runs)
		if m.Runner != c.runner || ok != (c.runner != "") {
			t.Errorf("%q: runner %q (%v); want %q", c.command, m.Runner, ok, c.runner)
		}
	}
}

func TestParseTable(t *testing.T) {
	tab, err := ParseTable(map[string]any{
		"make check": map[string]any{"command": []any{"make", "check"}},
		"jest":       nil, // removed by a team
	})
	if err != nil || len(tab) != 1 {
		t.Fatalf("%v %v", tab, err)
	}
	if _, ok := tab.Recognise([][]string{{"make", "-j4", "check"}}); !ok {
		t.Error("make -j4 check not recognised")
	}
	for _, bad := range []any{
		[]any{"go"},
		map[string]any{"x": map[string]any{"command": []any{}}},
		map[string]any{"x": map[string]any{"command": []any{"go", 1}}},
		map[string]any{"x": map[string]any{"command": []any{"[", "x"}}},
	} {
		if _, err := ParseTable(bad); err == nil {
			t.Errorf("ParseTable(%v): no error", bad)
		}
	}
}
