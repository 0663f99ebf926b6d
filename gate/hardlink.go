package gate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/deterministic-exec/des/internal/fileio"
)

// A file with more than one hard link is one file under several names: a
// write to any name writes them all. So a write to a multiply linked file
// is judged as a write to the guarded document or protected file it is
// (os.SameFile), found by walking only where those can be: the project for
// guarded documents (a glob test on each name, a stat only of the names a
// glob matches), the protected roots for DES's files. Singly linked files,
// nearly every file, cost one lstat.

// maxLinkScan bounds the directory entries read to find the other names of
// a multiply linked file.
const maxLinkScan = 100000

// ErrLinkScan is wrapped when DES cannot finish looking for the other names
// of a multiply linked file: it cannot tell whether the write reaches a
// guarded document, so where that matters it fails closed.
var ErrLinkScan = errors.New("too many files to look through for the other names of a hard-linked file")

// multiplyLinked returns the FileInfo of abs when it is a regular file with
// more than one hard link, else nil.
func multiplyLinked(abs string) fs.FileInfo {
	fi, err := os.Lstat(abs)
	if err != nil || !fi.Mode().IsRegular() || fileio.LinkCount(fi) < 2 {
		return nil
	}
	return fi
}

// sameFileIn walks dirs (absolute; a file is looked at alone) for another
// name of the file fi describes, accepted by keep (given the absolute path,
// before any stat: it must be cheap), and returns its absolute path, or ""
// when there is none. .git and node_modules are not looked into: DES's
// files and guarded documents are not there.
func sameFileIn(fi fs.FileInfo, dirs []string, keep func(abs string) bool) (string, error) {
	seen := 0
	var found string
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
			if seen++; seen > maxLinkScan {
				return fmt.Errorf("%w: more than %d entries under %s", ErrLinkScan, maxLinkScan, dir)
			}
			if err != nil {
				return nil // unreadable: nothing DES could find there either
			}
			if e.IsDir() {
				if p != dir && (e.Name() == ".git" || e.Name() == "node_modules") {
					return filepath.SkipDir
				}
				return nil
			}
			if !e.Type().IsRegular() || !keep(p) {
				return nil
			}
			if other, err := os.Lstat(p); err == nil && os.SameFile(fi, other) {
				found = p
				return filepath.SkipAll
			}
			return nil
		})
		if err != nil || found != "" {
			return found, err
		}
	}
	return "", nil
}

// documentLink returns the root-relative path and kind of the guarded
// document that rel (root-relative, or absolute outside the root; existing
// or not) is another hard link of, or "" when it is none. A hard link
// outside the root (in the temporary directory, say) writes the document
// as surely as one inside.
func (d DocumentWrite) documentLink(rel string) (kind, doc string, err error) {
	abs := filepath.FromSlash(rel)
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(d.Root, abs)
	}
	fi := multiplyLinked(abs)
	if fi == nil {
		return "", "", nil
	}
	root, err := resolvePath(d.Root)
	if err != nil {
		return "", "", err
	}
	found, err := sameFileIn(fi, []string{root}, func(abs string) bool {
		r, ok := within(root, abs)
		return ok && d.globKind(r) != ""
	})
	if err != nil || found == "" {
		return "", "", err
	}
	doc, _ = within(root, found)
	kind, _ = d.kindOf(doc, nil)
	return kind, doc, nil
}

// protectedLink returns the ProjectPath of the protected file that rel is
// another hard link of, or "" when it is none.
func (t ToolUse) protectedLink(rel string) (string, error) {
	abs := filepath.FromSlash(rel)
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(t.Root, abs)
	}
	fi := multiplyLinked(abs)
	if fi == nil {
		return "", nil
	}
	var dirs []string
	for _, r := range append([]string{DESDir}, t.Protected...) {
		p := filepath.FromSlash(t.normalize(r))
		if !filepath.IsAbs(p) {
			p = filepath.Join(t.Root, p)
		}
		dirs = append(dirs, p)
	}
	found, err := sameFileIn(fi, dirs, func(string) bool { return true })
	if err != nil || found == "" {
		return "", err
	}
	return t.normalize(found), nil
}
