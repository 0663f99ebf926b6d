package integrity

import (
	"os"
	"path/filepath"
	"testing"
)

// swapBeforeRestore makes the agent's racer deterministic: just before the
// checker restores key, swap runs (a background loop in sandboxed Bash
// can land there: the check runs outside the sandbox, after the call).
// It sets the package's hook: the tests that call it are not parallel.
func swapBeforeRestore(t *testing.T, key string, swap func()) {
	t.Helper()
	beforeRestore = func(k string) {
		if k == key {
			swap()
		}
	}
	t.Cleanup(func() { beforeRestore = nil })
}

// A file the agent wrote in a watched tree is removed; a directory above it
// swapped for a link to the user's home must not carry the removal there.
func TestRemovalDoesNotFollowALinkSwappedIn(t *testing.T) {
	root, c := project(t)
	home := t.TempDir()
	write(t, home, ".ssh/id_ed25519", "key")
	swapBeforeRestore(t, ".des/runs/sub/.ssh/id_ed25519", func() {
		if err := os.Rename(filepath.Join(root, ".des/runs/sub"), filepath.Join(root, ".des/runs/sub.was")); err != nil {
			t.Error(err)
		}
		if err := os.Symlink(home, filepath.Join(root, ".des/runs/sub")); err != nil {
			t.Error(err)
		}
	})
	call(t, c, "toolu_a", func() { write(t, root, ".des/runs/sub/.ssh/id_ed25519", "new") })
	if _, err := os.Stat(filepath.Join(home, ".ssh", "id_ed25519")); err != nil {
		t.Errorf("the user's ~/.ssh was removed through a link in .des/runs: %v", err)
	}
}

// A step file the agent changed is restored; a link swapped in for it must
// not carry the restore (the step's content, which the agent chose) to the
// user's ~/.bashrc.
func TestRestoreDoesNotWriteThroughALinkSwappedIn(t *testing.T) {
	root, c := project(t)
	bashrc := filepath.Join(t.TempDir(), ".bashrc")
	if err := os.WriteFile(bashrc, []byte("echo original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const step = "docs/feature/x/steps/01-01.json"
	swapBeforeRestore(t, step, func() {
		_ = os.Remove(filepath.Join(root, step))
		if err := os.Symlink(bashrc, filepath.Join(root, step)); err != nil {
			t.Error(err)
		}
	})
	call(t, c, "toolu_a", func() { write(t, root, step, `{"task_id": "changed"}`) })
	if got, _ := os.ReadFile(bashrc); string(got) != "echo original\n" {
		t.Errorf("~/.bashrc was rewritten through a link: %q", got)
	}
}
