package fileio

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// WriteAtomicIn is WriteAtomic for rel (slash-separated) below root, for a
// process outside the agent's sandbox: nothing is followed. The directory
// of rel is opened with OpenDirIn (a link at it or at a parent is refused;
// with create, missing directories are made), the temporary file is made
// and renamed within it, and a link, FIFO or directory found at rel is
// refused (ErrNotRegular) instead of written through. The rename replaces
// whatever name is at rel then, never the file a link there names. The
// mode is kept from the regular file replaced, else 0o644.
func WriteAtomicIn(root, rel string, data []byte, create bool) error {
	rel = filepath.Clean(filepath.FromSlash(rel))
	dirRel, base := filepath.Split(rel)
	if !filepath.IsLocal(rel) || base == "" {
		return fmt.Errorf("write %s atomically: not a file below %s", rel, root)
	}
	if dirRel == "" {
		dirRel = "."
	}
	d, err := OpenDirIn(root, dirRel, create)
	if err != nil {
		return fmt.Errorf("write %s atomically: %w", rel, err)
	}
	defer d.Close()
	if err := WriteAtomicAt(d, base, data); err != nil {
		return fmt.Errorf("write %s atomically: %w", rel, err)
	}
	return nil
}

// WriteAtomicAt is WriteAtomicIn for name, a plain file name, in the open
// directory d: a link, FIFO or directory at name is refused
// (ErrNotRegular), and the temporary file is made and renamed within d.
func WriteAtomicAt(d *os.Root, name string, data []byte) error {
	mode := fs.FileMode(0o644)
	switch fi, err := d.Lstat(name); {
	case err == nil && !fi.Mode().IsRegular():
		return fmt.Errorf("%w (%s): DES does not write through it; remove it", ErrNotRegular, fi.Mode().Type())
	case err == nil:
		mode = fi.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	return replaceIn(d, name, data, mode)
}

// replaceIn writes data to a new temporary file in d (".base.tmp-DIGITS",
// the name WriteAtomic's leftovers have), renames it to base and syncs d.
func replaceIn(d *os.Root, base string, data []byte, mode fs.FileMode) (err error) {
	var tmp string
	var f *os.File
	for range 100 {
		tmp = "." + base + ".tmp-" + strconv.FormatUint(rand.Uint64(), 10)
		if f, err = d.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil || !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	renamed := false
	defer func() {
		if !renamed {
			f.Close() // a second Close only reports an error we ignore
			d.Remove(tmp)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(mode); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = d.Rename(tmp, base); err != nil {
		return err
	}
	renamed = true
	if err := syncRoot(d); err != nil {
		return fmt.Errorf("sync directory: %w", err)
	}
	return nil
}

// syncRoot makes a rename in d durable (SyncDir for an os.Root).
func syncRoot(d *os.Root) error {
	f, err := d.Open(".")
	if err != nil {
		return err
	}
	defer f.Close()
	return syncOpenDir(f)
}
