package taskgraph_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/deterministic-exec/des/internal/taskgraph"
)

// swapDirOnExpect is the agent's racer made deterministic: when Sync
// announces its write (after reading the graph), the graph's directory is
// swapped for a link to a directory whose active_task_graph.json is a link
// to the user's ~/.bashrc. The sync runs outside the sandbox.
type swapDirOnExpect struct{ dir, to string }

func (s swapDirOnExpect) Expect(string, []byte) error {
	_ = os.Rename(s.dir, s.dir+".was")
	return os.Symlink(s.to, s.dir)
}

func (swapDirOnExpect) Settle(context.Context, string) error { return nil }

func TestSyncDoesNotWriteThroughADirectorySwappedIn(t *testing.T) {
	path := example(t)
	bashrc := filepath.Join(t.TempDir(), ".bashrc")
	if err := os.WriteFile(bashrc, []byte("echo original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	evil := t.TempDir()
	if err := os.Symlink(bashrc, filepath.Join(evil, filepath.Base(path))); err != nil {
		t.Fatal(err)
	}
	phase := first(t, path)
	_, _ = taskgraph.Sync(context.Background(), path, phase, taskgraph.Outcome{}, swapDirOnExpect{filepath.Dir(path), evil})
	if got, _ := os.ReadFile(bashrc); string(got) != "echo original\n" {
		t.Errorf("~/.bashrc was rewritten through the swapped directory: %q", got)
	}
}

// A lock file beside the graph is opened by name: a link there (the graph's
// directory is not the sandbox's to deny, only the graph) makes DES create
// the file it names, outside the project.
func TestSyncLockDoesNotCreateAFileThroughALink(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("filelock refuses a link at the lock file on Unix (O_NOFOLLOW)")
	}
	path := example(t)
	victim := filepath.Join(t.TempDir(), ".bash_profile") // absent: bash then reads ~/.profile
	if err := os.Symlink(victim, path+".lock"); err != nil {
		t.Fatal(err)
	}
	_, _ = taskgraph.Sync(context.Background(), path, first(t, path), taskgraph.Outcome{}, nil)
	if _, err := os.Lstat(victim); err == nil {
		t.Errorf("Sync created %s outside the project through the link at its lock file", victim)
	}
}

func first(t *testing.T, path string) string {
	t.Helper()
	g := load(t, path)
	return g.Waves[g.CurrentWave].Phases[0].PhaseID
}
