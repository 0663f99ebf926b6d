package gitexec

import (
	"os/exec"
	"strings"
	"testing"
)

// FileConfig reads a file as git does: a byte order mark, name case and
// quoting are git's; FileReplaceAll rewrites with git's own writer.
func TestFileConfigReadsAsGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	got, err := FileConfig(t.Context(), []byte("\ufeff[CORE]\n\tHooksPath = \"/x y\"\n[include]\n\tpath = a\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != [2]string{"core.hookspath", "/x y"} || got[1] != [2]string{"include.path", "a"} {
		t.Errorf("entries %q", got)
	}
	if _, err := FileConfig(t.Context(), []byte("[core\nbad")); err == nil {
		t.Error("content git refuses was read")
	}
	out, err := FileReplaceAll(t.Context(), []byte("\ufeff[core]\n\thooksPath = /x\n[user]\n\tname = d\n"), "core.hooksPath", nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "hooksPath") || !strings.Contains(string(out), "name = d") {
		t.Errorf("rewritten:\n%s", out)
	}
}
