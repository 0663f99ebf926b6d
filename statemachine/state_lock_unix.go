// syscall.Flock is missing on AIX and Solaris (but present on illumos).

//go:build unix && !aix && !(solaris && !illumos)

package statemachine

import (
	"errors"
	"os"
	"syscall"
)

// lockFileExistence reports whether holding a state lock is the lock file's
// existence (exclLock) rather than a lock the system releases when its
// holder dies.
const lockFileExistence = false

// flockLock is a state lock held with flock(2) on the sidecar file. The
// lock belongs to the open file, so two goroutines of one process exclude
// each other too, and the kernel releases it when its holder dies.
type flockLock struct{ f *os.File }

func openFileLock(path string) (fileLocker, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &flockLock{f: f}, nil
}

func (l *flockLock) tryLock() (bool, error) {
	err := flockFile(l.f, syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

func (l *flockLock) unlock() error {
	err := flockFile(l.f, syscall.LOCK_UN)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (l *flockLock) close() error { return l.f.Close() }

func flockFile(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if ferr = syscall.Flock(int(fd), how); ferr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}
