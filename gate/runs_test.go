package gate_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/deterministic-exec/des/gate"
)

func TestPruneRunsRemovesOldRecordsOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "runs")
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	old, fresh := now.Add(-gate.RunRetention-time.Minute), now.Add(-time.Hour)
	files := map[string]time.Time{
		"toolu_old.json": old, "prompt-abc.json": old, "toolu_old.stop.json": old, "agent-a1.run.json": old, ".run-123": old,
		"toolu_new.json": fresh, "notes.txt": old, "pending/toolu_x.json": old,
	}
	for name, at := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	target := filepath.Join(t.TempDir(), "outside.json")
	if err := os.WriteFile(target, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, "link.json")); err != nil {
		t.Fatal(err)
	}
	w := &recordingWrites{}
	n, err := gate.PruneRuns(context.Background(), w, dir, now.Add(-gate.RunRetention), 100)
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
	if want := []string{"link.json", "notes.txt", "pending/toolu_x.json", "toolu_new.json"}; !slices.Equal(left, want) {
		t.Errorf("left %v, want %v", left, want)
	}
	if _, err := os.Stat(target); err != nil {
		t.Errorf("the link's target: %v", err)
	}
	if len(w.settles) != 1 || len(w.settles[0]) != 5 || len(w.expected) != 5 {
		t.Errorf("announced %v, settled %v: want the five removals announced and settled together", w.expected, w.settles)
	}

	// The limit bounds one call; the rest go at the next.
	for _, name := range []string{"a.json", "b.json", "c.json"} {
		p := filepath.Join(dir, name)
		_ = os.WriteFile(p, []byte("{}"), 0o644)
		_ = os.Chtimes(p, old, old)
	}
	if n, err := gate.PruneRuns(context.Background(), nil, dir, now.Add(-gate.RunRetention), 2); n != 2 || err != nil {
		t.Errorf("with limit 2: %d, %v", n, err)
	}
	if n, err := gate.PruneRuns(context.Background(), nil, dir, now.Add(-gate.RunRetention), 2); n != 1 || err != nil {
		t.Errorf("the rest: %d, %v", n, err)
	}
	if n, err := gate.PruneRuns(context.Background(), nil, filepath.Join(dir, "absent"), now, 2); n != 0 || err != nil {
		t.Errorf("no directory: %d, %v", n, err)
	}
}
