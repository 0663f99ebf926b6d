package fileio

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A failure after the temporary file exists (here the rename) removes it
// and leaves the original as it was.
func TestReplaceRenameFailure(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "01-01.json")
	if err := os.WriteFile(path, []byte("original"), 0o644); err != nil {
		t.Fatal(err)
	}
	var tmp string
	boom := errors.New("boom")
	err := replace(path, []byte("new"), 0o644, func(from, _ string) error {
		tmp = from
		if data, err := os.ReadFile(from); err != nil || string(data) != "new" {
			t.Errorf("temporary file before rename: %q, %v", data, err)
		}
		return boom
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), path) {
		t.Errorf("err = %v, want boom naming the file", err)
	}
	if !strings.HasPrefix(filepath.Base(tmp), ".01-01.json.tmp-") || filepath.Dir(tmp) != dir {
		t.Errorf("temporary file %s: want .01-01.json.tmp-* beside the target", tmp)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temporary file not removed: %v", err)
	}
	if data, _ := os.ReadFile(path); string(data) != "original" {
		t.Errorf("original changed: %q", data)
	}
}
