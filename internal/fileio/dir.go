package fileio

import (
	"errors"
	"fmt"
	"io/fs"
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

// OpenDirBelow opens the directory dir for des's own files: below root
// (root "" is none) as OpenDirIn opens it, no link at dir or its parents
// inside the root; elsewhere (a directory a program or a setting chose
// outside the project) as it is, links included. With create, missing
// directories are made (0o755).
func OpenDirBelow(root, dir string, create bool) (*os.Root, error) {
	if root != "" {
		if rel, err := filepath.Rel(root, dir); err == nil && filepath.IsLocal(rel) {
			return OpenDirIn(root, rel, create)
		}
	}
	if create {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	return os.OpenRoot(dir)
}
