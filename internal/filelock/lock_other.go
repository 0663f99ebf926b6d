//go:build !windows && (!unix || aix || (solaris && !illumos))

package filelock

import (
	"os"
	"path/filepath"
)

func open(path string) (locker, error) { return &exclLock{path: path}, nil }

func holderHint(path string) string { return exclHint(path) }

// openIn locks by creating the file, which os.Root cannot hold across
// calls on these systems: the path under dir's name is the lock.
func openIn(dir *os.Root, name string) (locker, error) {
	return &exclLock{path: filepath.Join(dir.Name(), name)}, nil
}
