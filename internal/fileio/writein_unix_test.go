//go:build unix

package fileio

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteAtomicInReplacesALinkNotItsTarget(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "bashrc")
	if err := os.WriteFile(target, []byte("user's"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, "x.json")); err != nil {
		t.Fatal(err)
	}
	d, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, sync := range []bool{false, true} {
		if err := WriteAtomicIn(d, "x.json", []byte("des's"), 0o640, sync); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(target); string(b) != "user's" {
			t.Errorf("the link's target became %q", b)
		}
		fi, err := os.Lstat(filepath.Join(dir, "x.json"))
		if b, _ := os.ReadFile(filepath.Join(dir, "x.json")); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o640 || string(b) != "des's" {
			t.Errorf("x.json: %v %v %q", fi.Mode(), err, b)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
}
