package gate_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deterministic-exec/des/gate"
)

// makeRecords writes each name below dir with content "{}".
func makeRecords(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, name := range names {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// cutoffAfter returns a cutoff later than every change made so far, and
// waits until files changed next are after it.
func cutoffAfter(t *testing.T) time.Time {
	t.Helper()
	time.Sleep(20 * time.Millisecond)
	c := time.Now()
	time.Sleep(20 * time.Millisecond)
	return c
}

func TestPruneRunsRemovesOldRecordsOnly(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, ".des", "runs")
	makeRecords(t, dir, "toolu_old.json", "prompt-abc.json", "toolu_old.stop.json", "agent-a1.run.json", ".run-123", "notes.txt", "pending/toolu_x.json")
	target := filepath.Join(t.TempDir(), "outside.json")
	makeRecords(t, filepath.Dir(target), filepath.Base(target))
	if err := os.Symlink(target, filepath.Join(dir, "link.json")); err != nil {
		t.Fatal(err)
	}
	cutoff := cutoffAfter(t)
	makeRecords(t, dir, "toolu_new.json")
	// Made to look old: the change time says otherwise.
	backdated := filepath.Join(dir, "toolu_backdated.json")
	makeRecords(t, dir, filepath.Base(backdated))
	old := cutoff.Add(-48 * time.Hour)
	if err := os.Chtimes(backdated, old, old); err != nil {
		t.Fatal(err)
	}
	w := &recordingWrites{}
	n, err := gate.PruneRuns(context.Background(), w, root, ".des/runs", cutoff, 100)
	if err != nil || n != 5 {
		t.Fatalf("PruneRuns = %d, %v; want 5", n, err)
	}
	var left []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			left = append(left, filepath.ToSlash(rel))
		}
		return nil
	})
	slices.Sort(left)
	if want := []string{"link.json", "notes.txt", "pending/toolu_x.json", "toolu_backdated.json", "toolu_new.json"}; !slices.Equal(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
	if _, err := os.Stat(target); err != nil {
		t.Errorf("the link's target: %v", err)
	}
	if len(w.settles) != 1 || len(w.settles[0]) != 5 || len(w.expected) != 5 || filepath.Dir(w.settles[0][0]) != dir {
		t.Errorf("announced %v, settled %v: want the five removals announced and settled together", w.expected, w.settles)
	}

	// The limit bounds one call; the rest go at the next.
	makeRecords(t, dir, "a.json", "b.json", "c.json")
	cutoff = cutoffAfter(t)
	if n, err := gate.PruneRuns(context.Background(), nil, root, ".des/runs", cutoff, 2); n != 2 || err != nil {
		t.Errorf("with limit 2: %d, %v", n, err)
	}
	// Five are older than this cutoff: a, b, c and the two kept above.
	for _, want := range []int{2, 1, 0} {
		if n, err := gate.PruneRuns(context.Background(), nil, root, ".des/runs", cutoff, 2); n != want || err != nil {
			t.Errorf("the rest: %d, %v; want %d", n, err, want)
		}
	}
	if n, err := gate.PruneRuns(context.Background(), nil, root, ".des/absent", cutoff, 2); n != 0 || err != nil {
		t.Errorf("no directory: %d, %v", n, err)
	}
}

// A runs directory (or a parent) replaced by a link is not followed: DES
// runs outside the sandbox, and the link could lead anywhere.
func TestPruneRunsFollowsNoLinkedDirectory(t *testing.T) {
	t.Parallel()
	for _, link := range []string{".des/runs", ".des"} {
		t.Run(link, func(t *testing.T) {
			root := t.TempDir()
			outside := t.TempDir()
			makeRecords(t, outside, "settings.json", "runs/settings.json")
			cutoff := cutoffAfter(t)
			if err := os.MkdirAll(filepath.Join(root, filepath.Dir(link)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, filepath.Join(root, link)); err != nil {
				t.Fatal(err)
			}
			n, err := gate.PruneRuns(context.Background(), nil, root, ".des/runs", cutoff, 200)
			if n != 0 || err == nil {
				t.Errorf("PruneRuns = %d, %v; want an error and nothing removed", n, err)
			}
			for _, f := range []string{"settings.json", "runs/settings.json"} {
				if _, err := os.Stat(filepath.Join(outside, f)); err != nil {
					t.Errorf("%s outside the project: %v", f, err)
				}
			}
		})
	}
	// A regular file (or a pipe) where the directory should be.
	root := t.TempDir()
	makeRecords(t, root, ".des/runs")
	if _, err := gate.PruneRuns(context.Background(), nil, root, ".des/runs", time.Now(), 200); err == nil || errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file as the runs directory: %v", err)
	}
}

// Gate 1 does not write its run records through a runs directory (or a
// parent) the agent replaced by a link: it fails, as any record it cannot
// write, and nothing lands outside the project.
func TestGate1RecordsFollowNoLinkedDirectory(t *testing.T) {
	t.Parallel()
	for _, link := range []string{".des/runs", ".des"} {
		t.Run(link, func(t *testing.T) {
			p := newProject(t, nil)
			outside := t.TempDir()
			if err := os.MkdirAll(filepath.Join(outside, "runs"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(p.root, filepath.Dir(link)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.RemoveAll(filepath.Join(p.root, link)); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, filepath.Join(p.root, link)); err != nil {
				t.Fatal(err)
			}
			p.writeStep(stepRel, todoStep())
			_, err := p.eng.PreInvocation(t.Context(), gate.Invocation{Prompt: render(t, "execute-step", todoStep()), ToolUseID: "toolu_01", SessionID: "sess", AgentType: "software-crafter"})
			if err == nil {
				t.Error("Gate 1 recorded its run through a link")
			}
			var found []string
			_ = filepath.WalkDir(outside, func(path string, d os.DirEntry, err error) error {
				// (The audit trail, below .des too, is the audit package's.)
				if err == nil && !d.IsDir() && !strings.Contains(filepath.ToSlash(path), "/audit/") {
					found = append(found, path)
				}
				return nil
			})
			if len(found) != 0 {
				t.Errorf("records written outside the project: %v", found)
			}
		})
	}
}
