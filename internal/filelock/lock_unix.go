// syscall.Flock is missing on AIX and Solaris (but present on illumos).

//go:build unix && !aix && !(solaris && !illumos)

package filelock

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/deterministic-exec/des/internal/flock"
)

// flockLock is held with flock(2). The lock belongs to the open file, so two
// goroutines of one process exclude each other too, and the kernel releases
// it when its holder dies.
type flockLock struct{ f *os.File }

func open(path string) (locker, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%w: it is a symbolic link, not a lock file; remove it", err)
	}
	if err != nil {
		return nil, err
	}
	return &flockLock{f: f}, nil
}

func openIn(dir *os.Root, name string) (locker, error) {
	f, err := dir.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &flockLock{f: f}, nil
}

func (l *flockLock) tryLock() (bool, error) { return flock.TryLock(l.f) }

func (l *flockLock) unlock() error {
	err := flock.Unlock(l.f)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (l *flockLock) close() error { return l.f.Close() }

// holderHint has nothing to add: the kernel releases a dead holder's lock.
func holderHint(string) string { return "" }
