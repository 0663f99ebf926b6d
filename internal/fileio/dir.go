package fileio

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// OpenDirIn opens the directory rel (slash-separated) below root for a
// process outside the agent's sandbox: a link at rel or at any of its
// parents is refused (ErrNotRealDir), what is opened is checked to be what
// was looked at (a swap in between is refused too), and a FIFO swapped in
// never blocks the open. With create, missing directories are made (0o755).
func OpenDirIn(root, rel string, create bool) (*os.Root, error) {
	dir, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	for _, part := range strings.Split(filepath.ToSlash(filepath.Clean(filepath.FromSlash(rel))), "/") {
		fi, err := dir.Lstat(part)
		if create && errors.Is(err, fs.ErrNotExist) {
			if err = dir.Mkdir(part, 0o755); err == nil || errors.Is(err, fs.ErrExist) {
				fi, err = dir.Lstat(part)
			}
		}
		if err == nil && !fi.IsDir() {
			err = fmt.Errorf("%s is not a directory (%v): %w", part, fi.Mode().Type(), ErrNotRealDir)
		}
		var next *os.Root
		if err == nil {
			// As a middle component ("part/."), part is opened as a
			// directory only: a FIFO swapped in after the Lstat fails
			// instead of blocking the open.
			next, err = dir.OpenRoot(part + "/.")
		}
		if err == nil {
			if now, serr := next.Stat("."); serr != nil || !os.SameFile(fi, now) {
				next.Close()
				err = fmt.Errorf("%s changed while it was opened: %w", part, ErrNotRealDir)
			}
		}
		dir.Close()
		if err != nil {
			return nil, err
		}
		dir = next
	}
	return dir, nil
}

// ErrNotRealDir is wrapped by OpenDirIn for a link, a file or a swap where
// a directory should be.
var ErrNotRealDir = errors.New("not a real directory")

// WriteAtomicIn is WriteAtomic for name inside d: the temporary file is
// made in d (".NAME.tmp-DIGITS", never an existing file) and renamed over
// name, which replaces whatever name was, a link included, never a link's
// target. With sync, the file and the directory are synced.
func WriteAtomicIn(d *os.Root, name string, data []byte, perm fs.FileMode, sync bool) (err error) {
	var tmp string
	var f *os.File
	for range 100 {
		tmp = fmt.Sprintf(".%s.tmp-%d", filepath.Base(name), rand.Uint64())
		if f, err = d.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm); !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("write %s atomically: %w", name, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			d.Remove(tmp)
			err = fmt.Errorf("write %s atomically: %w", name, err)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Chmod(perm); err != nil { // not subject to the umask, as WriteAtomic
		return err
	}
	if sync {
		if err = f.Sync(); err != nil {
			return err
		}
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = d.Rename(tmp, name); err != nil {
		return err
	}
	if sync {
		return SyncDir(filepath.Join(d.Name(), filepath.Dir(name)))
	}
	return nil
}
