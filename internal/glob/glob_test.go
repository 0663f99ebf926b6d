package glob

import "testing"

func TestMatch(t *testing.T) {
	cases := []struct {
		pattern, name string
		want          bool
	}{
		{"**/steps/*.json", "docs/feature/x/steps/01-01.json", true},
		{"**/steps/*.json", "steps/01-01.json", true},
		{"**/steps/*.json", "docs/steps/sub/01-01.json", false},
		{"**/steps/*.json", "docs/steps/01-01.txt", false},
		{".isdlc/projects/*/state.json", ".isdlc/projects/p1/state.json", true},
		{".isdlc/projects/*/state.json", ".isdlc/projects/a/b/state.json", false},
		{".des/state.json", "./.des/state.json", true},
		{"src/auth/**/*.go", "src/auth/a/b/c.go", true},
		{"src/auth/**/*.go", "src/auth/c.go", true},
		{"src/auth/**/*.go", "src/other/c.go", false},
		{"src/**", "src", true},
		{"src/**", "src/a/b", true},
		{"**", "anything/at/all", true},
		{"*.go", "a/b.go", false},
		{"[", "[", false},
	}
	for _, c := range cases {
		if got := Match(c.pattern, c.name); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.pattern, c.name, got, c.want)
		}
	}
	if Valid("src/[") || !Valid("src/**/*.go") {
		t.Error("Valid is wrong")
	}
}
