package fileio

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

func TestReadBoundedIn(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ok.json"), []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.json"), make([]byte, 2<<20+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "x.json"), []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "x.json"), filepath.Join(dir, "out.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if data, err := ReadBoundedIn(root, "ok.json", 2<<20); err != nil || string(data) != `{}` {
		t.Errorf("ok.json: %q, %v", data, err)
	}
	if _, err := ReadBoundedIn(root, "big.json", 2<<20); !errors.Is(err, ErrTooLarge) {
		t.Errorf("big.json: %v, want ErrTooLarge", err)
	}
	if _, err := ReadBoundedIn(root, "sub", 2<<20); !errors.Is(err, ErrNotRegular) {
		t.Errorf("a directory: %v, want ErrNotRegular", err)
	}
	if _, err := ReadBoundedIn(root, "missing.json", 2<<20); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing: %v, want fs.ErrNotExist", err)
	}
	if data, err := ReadBoundedIn(root, "out.json", 2<<20); err == nil {
		t.Errorf("a link out of the root was read: %q", data)
	}
}
