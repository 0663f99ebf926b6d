package des

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// linkOnExpect replaces a path ending with suffix by a link to target at
// the moment DES announces its write to it: an agent's swap landing after
// the checks and the read.
type linkOnExpect struct{ suffix, target string }

func (l linkOnExpect) Expect(path string, _ []byte) error {
	if strings.HasSuffix(path, l.suffix) {
		_ = os.Remove(path)
		_ = os.Symlink(l.target, path)
	}
	return nil
}

func (linkOnExpect) Settle(context.Context, string) error { return nil }

func TestResolveStaleDoesNotWriteThroughALinkSwappedIn(t *testing.T) {
	t.Parallel()
	rel := "docs/feature/a/steps/01-01.json"
	root := t.TempDir()
	path := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(phaseStep("IN_PROGRESS", "PREPARE", "EXECUTED", "RED_UNIT", "IN_PROGRESS")), 0o644); err != nil {
		t.Fatal(err)
	}
	bashrc := filepath.Join(t.TempDir(), ".bashrc")
	if err := os.WriteFile(bashrc, []byte("echo original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := New(t.Context(), WithRoot(root), WithEnv(env(nil)), WithClock(func() time.Time { return staleNow }),
		WithWrites(linkOnExpect{filepath.FromSlash(rel), bashrc}))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = e.ResolveStale(t.Context(), rel)
	if got, _ := os.ReadFile(bashrc); string(got) != "echo original\n" {
		t.Errorf("the file outside the project was rewritten through a link: %q", got)
	}
}
