package gate_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/deterministic-exec/des/gate"
)

// chain makes n links l1 -> l0, l2 -> l1, ... in dir, l0 a directory, and
// returns the last link's name. When doubled, each link names the previous
// one twice ("l1/../l1"), so resolving ln follows 2^n links.
func chain(t *testing.T, dir string, n int, doubled bool) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, "l0"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		target := fmt.Sprintf("l%d", i-1)
		if doubled {
			target = fmt.Sprintf("l%d/../l%d", i-1, i-1)
		}
		if err := os.Symlink(target, filepath.Join(dir, fmt.Sprintf("l%d", i))); err != nil {
			t.Skip("symlinks unavailable:", err)
		}
	}
	return fmt.Sprintf("l%d", n)
}

// Link resolution follows at most 40 links in total, as the kernel does,
// in time linear in the links: never a hang, and a path past the bound is
// ErrTooManyLinks, which the gate treats as DES's concern.
func TestResolveProjectPathBoundsLinks(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".des"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("b", filepath.Join(root, "a")); err != nil {
		t.Skip("symlinks unavailable:", err)
	}
	if err := os.Symlink("a", filepath.Join(root, "b")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("self/x", filepath.Join(root, "self")); err != nil {
		t.Fatal(err)
	}
	deep := chain(t, filepath.Join(root, "deep"), 24, false)
	most := chain(t, filepath.Join(root, "most"), 40, false)
	over := chain(t, filepath.Join(root, "over"), 41, false)
	deeper := chain(t, filepath.Join(root, "deeper"), 100, false)
	doubled := chain(t, filepath.Join(root, "doubled"), 24, true)
	cases := []struct {
		path string
		want string // "" = ErrTooManyLinks
	}{
		{"deep/" + deep + "/f.json", "deep/l0/f.json"},
		{"most/" + most + "/f.json", "most/l0/f.json"},
		{"over/" + over + "/f.json", ""},
		{"deeper/" + deeper + "/f.json", ""},
		{"doubled/" + doubled + "/f.json", ""}, // 2^24 hops for a per-link recursion
		{"a/f.json", ""},
		{"self", ""},
		{"ok.go", "ok.go"},
	}
	for _, c := range cases {
		start := time.Now()
		got, err := gate.ResolveProjectPath(root, c.path)
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("%s: took %v", c.path, took)
		}
		switch {
		case c.want == "" && !errors.Is(err, gate.ErrTooManyLinks):
			t.Errorf("%s: %q, %v; want ErrTooManyLinks", c.path, got, err)
		case c.want != "" && (err != nil || got != c.want):
			t.Errorf("%s: %q, %v; want %q", c.path, got, err, c.want)
		}
		// The kernel agrees: it refuses exactly the paths DES cannot resolve.
		err = os.WriteFile(filepath.Join(root, c.path), nil, 0o644)
		if (err == nil) != (c.want != "") {
			t.Errorf("%s: the OS write gave %v", c.path, err)
		}
	}
	// Where DES is in charge of the path, it concerns DES: fail closed.
	tu := gate.ToolUse{Root: root}
	if !tu.Concerns(gate.ToolCall{Tool: "Write", Paths: []string{"deeper/" + deeper + "/f.json"}}) {
		t.Error("an unresolvable path does not concern DES")
	}
	if _, err := tu.Check(t.Context(), &fakeEvaluator{}, gate.ToolCall{Tool: "Write", Paths: []string{"a/x"}}); !errors.Is(err, gate.ErrTooManyLinks) {
		t.Errorf("Check of a link loop: %v", err)
	}
	if tu.Concerns(gate.ToolCall{Tool: "Write", Paths: []string{"deep/" + deep + "/f.json"}}) {
		t.Error("a resolvable path outside .des concerns DES")
	}
}
