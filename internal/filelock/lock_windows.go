//go:build windows

package filelock

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// winLock is held with LockFileEx on the first byte of the file; Windows
// releases it when its holder's handle closes.
type winLock struct{ f *os.File }

func open(path string) (locker, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &winLock{f: f}, nil
}

func openIn(dir *os.Root, name string) (locker, error) {
	f, err := dir.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &winLock{f: f}, nil
}

func (l *winLock) tryLock() (bool, error) {
	err := l.control(func(h windows.Handle) error {
		var ol windows.Overlapped
		return windows.LockFileEx(h, windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ol)
	})
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
		return false, nil
	}
	return err == nil, err
}

func (l *winLock) unlock() error {
	err := l.control(func(h windows.Handle) error {
		var ol windows.Overlapped
		return windows.UnlockFileEx(h, 0, 1, 0, &ol)
	})
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (l *winLock) close() error { return l.f.Close() }

func (l *winLock) control(fn func(windows.Handle) error) error {
	rc, err := l.f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(windows.Handle(fd)) }); err != nil {
		return err
	}
	return ferr
}

// holderHint has nothing to add: Windows releases a dead holder's lock.
func holderHint(string) string { return "" }
