package fileio

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteAtomicInFollowsNoLink(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	victim := filepath.Join(outside, ".bashrc")
	if err := os.WriteFile(victim, []byte("echo original\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(root, "a", "f.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "dir")); err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomicIn(root, "a/f.json", []byte("{}"), false); !errors.Is(err, ErrNotRegular) {
		t.Errorf("a link at the file: err = %v, want ErrNotRegular", err)
	}
	if err := WriteAtomicIn(root, "dir/.bashrc", []byte("{}"), true); !errors.Is(err, ErrNotRealDir) {
		t.Errorf("a link above the file: err = %v, want ErrNotRealDir", err)
	}
	if err := WriteAtomicIn(root, "../x", []byte("{}"), true); err == nil {
		t.Error("a path out of the root was written")
	}
	if got, _ := os.ReadFile(victim); string(got) != "echo original\n" {
		t.Errorf("the file outside was changed: %q", got)
	}
	// The ordinary case: created (with its directories), then replaced
	// keeping its mode.
	if err := WriteAtomicIn(root, "b/c/g.json", []byte("1"), true); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, "b", "c", "g.json")
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomicIn(root, "b/c/g.json", []byte("2"), false); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode after replace: %v %v", fi, err)
	}
	if got, _ := os.ReadFile(p); string(got) != "2" {
		t.Errorf("content = %q", got)
	}
	if ents, _ := os.ReadDir(filepath.Dir(p)); len(ents) != 1 {
		t.Errorf("leftovers: %v", ents)
	}
}
