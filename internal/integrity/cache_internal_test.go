package integrity

import (
	"testing"
)

// A cache reads a git config file's view once per content: git is asked
// the first time only (here, with no git to be found after it, the view
// still comes back), and other content is read afresh.
func TestBaselineCacheGitViewByContent(t *testing.T) {
	conf := []byte("[core]\n\thooksPath = /elsewhere\n")
	want := gitView(conf)
	if want == "" || hooksPathOf(want) != "/elsewhere" {
		t.Fatalf("gitView = %q, want core.hooksPath /elsewhere", want)
	}
	var c BaselineCache
	if got := c.gitView(conf); got != want {
		t.Fatalf("cached view = %q, want %q", got, want)
	}
	t.Setenv("PATH", t.TempDir()) // git is not found any more
	if got := c.gitView(conf); got != want {
		t.Errorf("second read = %q, want %q from the cache", got, want)
	}
	other := []byte("[core]\n\thooksPath = /other\n")
	if got := c.gitView(other); got == want || hooksPathOf(got) == "/other" {
		t.Errorf("other content without git = %q: want it read afresh (and refused)", got)
	}
	var nilCache *BaselineCache
	if got := nilCache.gitView(other); hooksPathOf(got) == "/other" {
		t.Errorf("no cache, no git: %q, want it read afresh", got)
	}
}
