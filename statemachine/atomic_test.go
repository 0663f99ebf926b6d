package statemachine_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/statemachine"
)

// noTempFiles fails when a temporary file of WriteFileAtomic is left in dir.
func noTempFiles(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

func TestWriteFileAtomicReplacesAndKeepsMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "01-01.json")
	if err := os.WriteFile(path, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil { // regardless of the umask
		t.Fatal(err)
	}
	if err := statemachine.WriteFileAtomic(path, []byte("new content")); err != nil {
		t.Fatal(err)
	}
	if got := string(readFile(t, path)); got != "new content" {
		t.Errorf("content = %q", got)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v, want 0640 kept", fi.Mode().Perm())
	}
	noTempFiles(t, dir)
}

func TestWriteFileAtomicNewFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "new.json")
	if err := statemachine.WriteFileAtomic(path, []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v, want 0644", fi.Mode().Perm())
	}
	noTempFiles(t, dir)
}

// Through a symlink, the file it points to is replaced and the link kept.
func TestWriteFileAtomicFollowsSymlink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	real := filepath.Join(dir, "real.json")
	link := filepath.Join(dir, "link.json")
	if err := os.WriteFile(real, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real.json", link); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	if err := statemachine.WriteFileAtomic(link, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link replaced by a file: %v %v", fi.Mode(), err)
	}
	if got := string(readFile(t, real)); got != "new" {
		t.Errorf("target content = %q", got)
	}
	noTempFiles(t, dir)
}

func TestWriteFileAtomicFailureKeepsOriginal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	// The target is a directory (with a file in it): refused, untouched.
	target := filepath.Join(dir, "step.json")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	inside := filepath.Join(target, "keep")
	if err := os.WriteFile(inside, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := statemachine.WriteFileAtomic(target, []byte("new")); err == nil {
		t.Error("writing over a directory succeeded")
	}
	if got := string(readFile(t, inside)); got != "x" {
		t.Errorf("directory content changed: %q", got)
	}
	noTempFiles(t, dir)

	// The directory does not exist.
	if err := statemachine.WriteFileAtomic(filepath.Join(dir, "nope", "a.json"), []byte("x")); err == nil {
		t.Error("writing into a missing directory succeeded")
	}

	// The directory is not writable (root ignores permissions: skipped then).
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(ro, "01-01.json")
	if err := os.WriteFile(path, []byte("original"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(ro, 0o755) })
	if os.Geteuid() == 0 {
		t.Log("running as root: the read-only directory case cannot fail, skipped")
		return
	}
	if err := statemachine.WriteFileAtomic(path, []byte("new")); err == nil {
		t.Error("writing into a read-only directory succeeded")
	}
	if got := string(readFile(t, path)); got != "original" {
		t.Errorf("original changed: %q", got)
	}
	noTempFiles(t, ro)
}
