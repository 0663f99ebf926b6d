// Package fileio reads and writes the files DES keeps on disk the way each
// of its packages needs: a bounded read of a regular file (never a FIFO or
// a device, which would block or never end), an atomic replacement, and the
// directory sync that makes a rename durable.
package fileio

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// ErrTooLarge is wrapped when a file exceeds the bound of ReadBounded.
var ErrTooLarge = errors.New("file too large")

// ErrNotRegular is wrapped when a path is a FIFO, a device or a directory.
var ErrNotRegular = errors.New("not a regular file")

// OpenRegular opens path for reading if, links followed, it is a regular
// file. It stats before opening: opening a FIFO for reading would block.
// The open does not block either (O_NONBLOCK) and what it opened is checked
// again: a FIFO swapped in after the stat would hold the reader forever.
func OpenRegular(path string) (*os.File, fs.FileInfo, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, fi.Mode().Type())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	if fi, err = f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, fi.Mode().Type())
		}
		return nil, nil, err
	}
	return f, fi, nil
}

// ReadBounded reads a regular file of at most limit bytes; a larger one is
// an error wrapping ErrTooLarge, a missing one wraps fs.ErrNotExist.
func ReadBounded(path string, limit int64) ([]byte, error) {
	f, fi, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := readLimited(f, fi.Size(), limit)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return data, nil
}

// ReadBoundedIn is ReadBounded for name (a slash path) inside root, so that
// a link cannot lead the read out of it. Its errors do not repeat name:
// callers say which document it was.
func ReadBoundedIn(root *os.Root, name string, limit int64) ([]byte, error) {
	name = filepath.FromSlash(name)
	fi, err := root.Stat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w (%s)", ErrNotRegular, fi.Mode().Type())
	}
	// Opened without blocking and checked again: a FIFO swapped in after
	// the Stat would hold the reader forever.
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w (%s)", ErrNotRegular, fi.Mode().Type())
	}
	return readLimited(f, fi.Size(), limit)
}

// readLimited reads f, whose Stat gave size, refusing more than limit bytes.
func readLimited(f *os.File, size, limit int64) ([]byte, error) {
	if size > limit {
		return nil, fmt.Errorf("%w: %d bytes, over the %d MiB limit", ErrTooLarge, size, limit>>20)
	}
	// Sized from Stat to read in one go; the file may grow between Stat and
	// read, and the limit holds anyway.
	b := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead))
	if _, err := b.ReadFrom(io.LimitReader(f, limit+1)); err != nil {
		return nil, err
	}
	data := b.Bytes()
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: over the %d MiB limit", ErrTooLarge, limit>>20)
	}
	return data, nil
}

// WriteAtomic replaces the file at path with data so that a reader (or
// a crash) sees either the old content or the new, never a mix: it writes a
// temporary file in the same directory, syncs it, gives it the original
// file's permissions (0o644 for a new file), renames it over path and syncs
// the directory. When path is a symbolic link, the file it points to is
// replaced and the link kept. On any error the temporary file is removed and
// the original is untouched.
func WriteAtomic(path string, data []byte) error {
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

	return replace(target, data, mode, os.Rename)
}

// replace is WriteAtomic once the target and its mode are known;
// rename is a parameter so a test can make the last step fail.
func replace(target string, data []byte, mode fs.FileMode, rename func(from, to string) error) (err error) {
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
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("write %s atomically: sync directory: %w", target, err)
	}
	return nil
}
