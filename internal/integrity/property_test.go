package integrity

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/internal/testenv"
)

// snapshotTree records what a check must bring back: every watched path's
// type, mode and content. Claude Code settings are compared by their DES
// part only.
func snapshotTree(t *testing.T, c *Checker) map[string]string {
	t.Helper()
	m, err := c.load()
	if err != nil || m == nil {
		t.Fatalf("no baseline: %v", err)
	}
	out := map[string]string{}
	for key, e := range m.Entries {
		out[key] = describeNow(t, c, key, e.Kind)
	}
	return out
}

func describeNow(t *testing.T, c *Checker, key, kind string) string {
	s, _, err := lstat(c.abs(key))
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case kind == KindClaudeSettings || kind == KindGitConfig:
		var data []byte
		if s.Type == typeFile {
			data, _ = os.ReadFile(c.abs(key))
		}
		return c.view(kind, data)
	case s.Type == typeFile:
		data, _ := os.ReadFile(c.abs(key))
		return fmt.Sprintf("file %o %s", s.Mode, data)
	case s.Type == typeSymlink:
		return "link " + s.Link
	case s.Type == typeDir:
		return fmt.Sprintf("dir %o", s.Mode)
	}
	return s.Type
}

// TestRandomChangesAreUndone applies random sequences of file operations
// (writes, deletions, renames, links, mode changes, directories and links
// put in a file's place, new files) to the watched paths and some others,
// then checks that after End every watched path is as it was and no new
// file is left in a protected directory or as a guarded document.
func TestRandomChangesAreUndone(t *testing.T) {
	t.Parallel()
	rounds := testenv.Pick(15, 60)
	for seed := range rounds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			root, c := project(t)
			before := snapshotTree(t, c)
			rng := rand.New(rand.NewPCG(uint64(seed), 7))
			ctx := context.Background()
			if _, err := c.Begin(ctx, "toolu_r", nil, 0); err != nil {
				t.Fatal(err)
			}
			targets := []string{
				".des/config.json", ".des/policies/team.rego", ".des/runs/toolu_1.json", ".isdlc/state.json",
				"docs/feature/x/steps/01-01.json", ".claude/settings.json", ".claude/settings.local.json",
				".des", ".des/policies", ".des/runs", "docs/feature/x/steps", ".isdlc",
				".des/policies/new.rego", ".des/runs/forged.json", ".des/state.json", "docs/feature/x/steps/02-02.json",
				".isdlc/projects/p/state.json", "src/main.go",
			}
			var log []string
			for range 1 + rng.IntN(6) {
				p := targets[rng.IntN(len(targets))]
				abs := filepath.Join(root, p)
				op := rng.IntN(9)
				log = append(log, fmt.Sprintf("%d %s", op, p))
				_ = os.MkdirAll(filepath.Dir(abs), 0o755)
				switch op {
				case 0:
					_ = os.WriteFile(abs, []byte(`{"changed": true, "disableAllHooks": true}`), 0o644)
				case 1:
					_ = os.RemoveAll(abs)
				case 2:
					_ = os.Chmod(abs, 0o600)
				case 3:
					_ = os.RemoveAll(abs)
					_ = os.Symlink("/tmp", abs)
				case 4:
					_ = os.RemoveAll(abs)
					_ = os.MkdirAll(filepath.Join(abs, "inner"), 0o755)
				case 5:
					_ = os.Link(abs, filepath.Join(root, "link-"+strings.ReplaceAll(p, "/", "_")))
					_ = os.WriteFile(filepath.Join(root, "link-"+strings.ReplaceAll(p, "/", "_")), []byte("via link"), 0o644)
				case 6:
					_ = os.Rename(abs, filepath.Join(root, "moved-"+fmt.Sprint(rng.IntN(100))))
				case 7:
					f, err := os.OpenFile(abs, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
					if err == nil {
						_, _ = f.WriteString("x")
						_ = f.Close()
					}
				case 8:
					_ = os.WriteFile(filepath.Join(root, ".des/policies", fmt.Sprintf("f%d.rego", rng.IntN(5))), []byte("package x"), 0o644)
				}
			}
			rep, err := c.End(ctx, "toolu_r", false)
			if err != nil {
				t.Fatalf("ops %v: %v", log, err)
			}
			after := snapshotTree(t, c)
			for key, want := range before {
				if got := after[key]; got != want && !slices.Contains(rep.Accepted, key) {
					t.Errorf("ops %v: %s is %q, want %q (report %+v)", log, key, got, want, rep)
				}
			}
			// Nothing new in a protected directory, and no new guarded document.
			for _, dir := range []string{".des/policies", ".des/runs"} {
				_ = filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
					if err != nil || d.IsDir() {
						return nil
					}
					if _, ok := before[c.key(p)]; !ok {
						t.Errorf("ops %v: new file %s left", log, p)
					}
					return nil
				})
			}
			for _, p := range []string{".des/state.json", "docs/feature/x/steps/02-02.json", ".isdlc/projects/p/state.json"} {
				if data, err := os.ReadFile(filepath.Join(root, p)); err == nil && strings.Contains(p, "/steps/") && !looksLikeStep(data) {
					continue // a new file that is not shaped like a step file is not DES's
				}
				if _, err := os.Lstat(filepath.Join(root, p)); err == nil && before[p] == "" {
					t.Errorf("ops %v: new guarded document %s left", log, p)
				}
			}
		})
	}
}
