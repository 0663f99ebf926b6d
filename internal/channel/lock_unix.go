//go:build unix && !aix && !(solaris && !illumos)

package channel

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// StartLock is the flock on a server's lock file. It is not
// internal/filelock's Lock because the client hands it to the server it
// starts (as an inherited descriptor): the lock then stays held, even after
// the client exits, until the new server listens or dies, so a racing client
// never starts a second one. flock belongs to the open file description,
// which the child shares.
type StartLock struct{ f *os.File }

// LockFD is the descriptor number under which a started server inherits the
// lock (the first of exec.Cmd.ExtraFiles).
const LockFD = 3

// TryLock takes the lock at path without waiting; ok is false when another
// holder has it.
func TryLock(path string) (l *StartLock, ok bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("lock %s: %w", path, err)
	}
	switch err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB); {
	case err == nil:
		return &StartLock{f: f}, true, nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		_ = f.Close()
		return nil, false, nil
	default:
		_ = f.Close()
		return nil, false, fmt.Errorf("lock %s: %w", path, err)
	}
}

// AcquireLock polls TryLock until it succeeds or ctx ends.
func AcquireLock(ctx context.Context, path string) (*StartLock, error) {
	delay := 200 * time.Microsecond
	for {
		l, ok, err := TryLock(path)
		if err != nil || ok {
			return l, err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("lock %s: held by another process: %w", path, ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, 10*time.Millisecond)
	}
}

// AdoptLock wraps a lock inherited as f (see LockFD).
func AdoptLock(f *os.File) *StartLock { return &StartLock{f: f} }

// File is the lock's open file, to hand to a child process.
func (l *StartLock) File() *os.File { return l.f }

// Unlock releases the lock, for every process sharing it, and closes it.
func (l *StartLock) Unlock() error {
	err := flock(l.f, syscall.LOCK_UN)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Close closes this process's descriptor without releasing the lock, which
// a child that shares it keeps.
func (l *StartLock) Close() error { return l.f.Close() }

func flock(f *os.File, how int) error {
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
