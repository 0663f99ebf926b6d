package shell

import (
	"slices"
	"testing"
)

func TestGitRuns(t *testing.T) {
	cases := []struct {
		command string
		want    []string
	}{
		{"git checkout feat", []string{"checkout"}},
		{"git -C sub stash && git stash pop", []string{"stash", "stash"}},
		{"sudo git -c core.x=1 pull --rebase", []string{"pull"}},
		{"cd x; git merge y", []string{"merge", "merge"}}, // one per directory git may run in
		{"git -c alias.sw=switch sw main", []string{"switch"}},
		{"git co main", nil},         // a repository alias: unknown here
		{"echo git checkout x", nil}, // words, not a command
		{"bash -c 'git reset --hard HEAD~1'", []string{"reset"}},
		{"git status; git restore -- a.json", []string{"status", "restore"}},
	}
	for _, c := range cases {
		var got []string
		for _, r := range Analyze(c.command, WithCwd("/p")).GitRuns {
			got = append(got, r.Subcommand)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%q: GitRuns = %v; want %v", c.command, got, c.want)
		}
	}
	runs := Analyze("git -C sub stash pop --index", WithCwd("/p")).GitRuns
	if len(runs) != 1 || runs[0].Dir != "sub" || !slices.Equal(runs[0].Args, []string{"pop", "--index"}) {
		t.Errorf("GitRuns = %+v", runs)
	}
}
