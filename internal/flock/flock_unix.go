// syscall.Flock is missing on AIX and Solaris (but present on illumos).

//go:build unix && !aix && !(solaris && !illumos)

package flock

import (
	"errors"
	"os"
	"syscall"
)

// TryLock takes an exclusive lock on f without waiting; ok is false when
// another open file holds it.
func TryLock(f *os.File) (ok bool, err error) {
	err = call(f, syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

// Unlock releases f's lock, for every process sharing the open file; f
// stays open.
func Unlock(f *os.File) error { return call(f, syscall.LOCK_UN) }

func call(f *os.File, how int) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		for {
			// A signal may interrupt even a non-blocking flock.
			if ferr = syscall.Flock(int(fd), how); ferr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	return ferr
}
