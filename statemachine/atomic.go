package statemachine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFileAtomic replaces the file at path with data so that a reader (or
// a crash) sees either the old content or the new, never a mix: it writes a
// temporary file in the same directory, syncs it, gives it the original
// file's permissions (0o644 for a new file), renames it over path and syncs
// the directory. When path is a symbolic link, the file it points to is
// replaced and the link kept. On any error the temporary file is removed and
// the original is untouched.
func WriteFileAtomic(path string, data []byte) error {
	target := path
	if real, err := filepath.EvalSymlinks(path); err == nil {
		target = real
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("write %s atomically: %w", path, err)
	}
	mode := fs.FileMode(0o644)
	switch fi, err := os.Stat(target); {
	case err == nil && !fi.Mode().IsRegular():
		return fmt.Errorf("write %s atomically: not a regular file (%s)", path, fi.Mode().Type())
	case err == nil:
		mode = fi.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("write %s atomically: %w", path, err)
	}

	return replaceFile(target, data, mode, os.Rename)
}

// replaceFile is WriteFileAtomic once the target and its mode are known;
// rename is a parameter so a test can make the last step fail.
func replaceFile(target string, data []byte, mode fs.FileMode, rename func(from, to string) error) (err error) {
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s atomically: %w", target, err)
	}
	tmp, renamed := f.Name(), false
	defer func() {
		if err != nil && !renamed {
			f.Close() // a second Close only reports an error we ignore
			os.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return fmt.Errorf("write %s atomically: %w", target, err)
	}
	// CreateTemp makes the file 0o600; Chmod is not subject to the umask.
	if err = f.Chmod(mode); err != nil {
		return fmt.Errorf("write %s atomically: %w", target, err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("write %s atomically: sync: %w", target, err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("write %s atomically: %w", target, err)
	}
	if err = rename(tmp, target); err != nil {
		return fmt.Errorf("write %s atomically: %w", target, err)
	}
	renamed = true
	// The rename is durable only once the directory entry is on disk.
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("write %s atomically: sync directory: %w", target, err)
	}
	return nil
}
