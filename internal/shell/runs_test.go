package shell

import (
	"fmt"
	"testing"
)

func TestRuns(t *testing.T) {
	cases := []struct {
		command string
		want    string
	}{
		{"go test ./...", "[[go test ./...]]"},
		{"cd sub && CI=1 env FOO=1 timeout 60 npm test -- --coverage", "[[cd sub] [npm test -- --coverage]]"},
		{"bash -c 'python3 -m pytest -q' | tee out.txt", "[[bash -c python3 -m pytest -q] [python3 -m pytest -q] [tee out.txt]]"},
		{"uv run pytest; bundle exec rspec", "[[pytest] [rspec]]"},
		{"echo go test", "[[echo go test]]"},
		{"for i in 1 2; do go test; done", "[[go test]]"}, // a loop read twice, listed once
		{"$RUNNER test", "[]"},                   // a computed command name: not known
		{"go test ./... (", "[[go test ./...]]"}, // the conservative scan
	}
	for _, c := range cases {
		if got := fmt.Sprint(Analyze(c.command, WithCwd("/p")).Runs); got != c.want {
			t.Errorf("%q: Runs = %s; want %s", c.command, got, c.want)
		}
	}
}
