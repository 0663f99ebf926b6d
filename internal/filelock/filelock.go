// Package filelock takes exclusive locks on files, shared by every process
// that opens the same path: flock(2) on Unix, LockFileEx on Windows, and
// elsewhere the creation of the file itself (O_EXCL).
//
// Acquire polls a non-blocking lock rather than blocking, so that a caller's
// context can end a wait on a stuck holder: a hook must never hang.
package filelock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"
)

// Bounds of the sleep between attempts: short at first, since holders keep
// the lock for micro- to milliseconds, and capped so that a released lock is
// noticed quickly.
const (
	minDelay = 200 * time.Microsecond
	maxDelay = 10 * time.Millisecond
)

// ErrHeld is wrapped, with the context's error, when Acquire gives up on a
// lock another holder kept until the caller's deadline.
var ErrHeld = errors.New("held by another process, which did not release it in time")

// locker is the platform's lock on one open file.
type locker interface {
	tryLock() (bool, error) // take the lock without waiting; false when another holder has it
	unlock() error          // release the lock and close
	close() error           // close without holding the lock
}

// Lock is an exclusive lock, held until Unlock.
type Lock struct {
	path string
	l    locker
}

// Acquire opens (creating it, mode 0o644) the file at path and takes an
// exclusive lock on it, retrying with a jittered back-off until ctx is done;
// the error then wraps ErrHeld and ctx.Err() and names the file (and, where holding the
// lock is the file's existence, who holds it). The directory must exist.
//
// A symbolic link at path is refused (where the system can tell, on Unix):
// a lock file is made by its lockers, and a link there is someone else's.
func Acquire(ctx context.Context, path string) (*Lock, error) {
	l, err := open(path)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return acquire(ctx, path, l)
}

// AcquireIn is Acquire for the file name inside dir, opened through dir
// (an [os.Root]): no link, at name or above it, takes the lock file out of
// that directory.
func AcquireIn(ctx context.Context, dir *os.Root, name string) (*Lock, error) {
	path := filepath.Join(dir.Name(), name)
	l, err := openIn(dir, name)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return acquire(ctx, path, l)
}

func acquire(ctx context.Context, path string, l locker) (*Lock, error) {
	delay := minDelay
	for {
		ok, err := l.tryLock()
		if err != nil {
			_ = l.close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if ok {
			return &Lock{path: path, l: l}, nil
		}
		// Jitter keeps contending processes from retrying in lockstep.
		t := time.NewTimer(delay/2 + rand.N(delay/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			_ = l.close()
			return nil, fmt.Errorf("lock %s: %w: %w%s", path, ErrHeld, ctx.Err(), holderHint(path))
		case <-t.C:
		}
		delay = min(2*delay, maxDelay)
	}
}

// Unlock releases the lock. Closing the file releases it in any case.
func (l *Lock) Unlock() error {
	if err := l.l.unlock(); err != nil {
		return fmt.Errorf("unlock %s: %w", l.path, err)
	}
	return nil
}
