package gate

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// resolveTwice is ResolveProjectPath as it was: root and p each walked
// from the file system's root.
func resolveTwice(root, p string) (string, error) {
	if !filepath.IsAbs(p) {
		p = root + string(filepath.Separator) + p
	}
	p, err := resolvePath(p)
	if err != nil {
		return "", err
	}
	r, err := resolvePath(root)
	if err != nil {
		return "", err
	}
	if rel, ok := within(r, p); ok {
		return rel, nil
	}
	return filepath.ToSlash(p), nil
}

// ResolveProjectPath continues root's walk for a path below root: the same
// answer as walking both from the top, over random trees of directories,
// links (relative, absolute, dangling, looping, through ".."), and roots
// reached through links.
func TestResolveProjectPathContinuesRootsWalk(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	for _, d := range []string{"real/proj/a/b", "real/proj/.des/runs", "other/x"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"lproj":             "real/proj",
		"real/proj/la":      "a",
		"real/proj/up":      "..",
		"real/proj/out":     filepath.Join(base, "other"),
		"real/proj/dang":    "nowhere/file",
		"real/proj/loop":    "loop",
		"real/proj/a/back":  "../../proj",
		"real/proj/a/b/abs": filepath.Join(base, "lproj", "a"),
		"other/x/in":        "../../real/proj/.des",
	}
	for l, target := range links {
		if err := os.Symlink(target, filepath.Join(base, l)); err != nil {
			t.Skip("symlinks unavailable:", err)
		}
	}
	roots := []string{filepath.Join(base, "real/proj"), filepath.Join(base, "lproj"), filepath.Join(base, "lproj/a/back"), filepath.Join(base, "missing/proj"), filepath.Join(base, "real/proj/loop")}
	parts := []string{"a", "b", "la", "up", "out", "dang", "loop", "back", "abs", "in", "x", ".des", "runs", "..", ".", "new", "proj", "real", "lproj", "other"}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 4000; i++ {
		root := roots[rng.IntN(len(roots))]
		var elems []string
		for n := rng.IntN(6); n >= 0; n-- {
			elems = append(elems, parts[rng.IntN(len(parts))])
		}
		p := strings.Join(elems, "/")
		switch rng.IntN(3) {
		case 0:
			p = root + "/" + p
		case 1:
			p = filepath.Join(base, p)
		}
		got, gotErr := ResolveProjectPath(root, p)
		want, wantErr := resolveTwice(root, p)
		if got != want || errors.Is(gotErr, ErrTooManyLinks) != errors.Is(wantErr, ErrTooManyLinks) || (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("ResolveProjectPath(%q, %q) = %q, %v; walked twice: %q, %v", root, p, got, gotErr, want, wantErr)
		}
	}
}
