package audit

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"
)

// lockName is the lock file in the log directory. Every append from every
// process holds an exclusive lock on it while it writes.
const lockName = ".lock"

// Bounds of the sleep between attempts to take a busy file lock: short at
// first, since appends hold the lock for microseconds, and capped so that a
// waiter notices a released lock quickly.
const (
	minLockDelay = 200 * time.Microsecond
	maxLockDelay = 10 * time.Millisecond
)

// lock takes this Log's in-process lock and then the directory's file lock,
// giving up when ctx is done. The returned func releases both.
func (l *Log) lock(ctx context.Context) (unlock func(), err error) {
	path := filepath.Join(l.dir, lockName)
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("audit: lock %s: %w", path, ctx.Err())
	}
	f, err := l.lockFile(ctx, path)
	if err != nil {
		<-l.sem
		return nil, err
	}
	return func() {
		if err := unlockFile(f); err != nil {
			// Closing the file below releases the lock anyway.
			l.logger.Warn("audit: unlock", "file", path, "err", err)
		}
		if err := f.Close(); err != nil {
			l.logger.Warn("audit: close lock file", "file", path, "err", err)
		}
		<-l.sem
	}, nil
}

// lockFile opens (creating dir and file if needed) and exclusively locks the
// lock file at path. It polls with a non-blocking lock rather than blocking,
// so that ctx can interrupt a wait on a stuck peer.
func (l *Log) lockFile(ctx context.Context, path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(l.dir, 0o755); err != nil {
			return nil, fmt.Errorf("audit: lock %s: %w", path, err)
		}
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	}
	if err != nil {
		return nil, fmt.Errorf("audit: lock %s: %w", path, err)
	}
	delay := minLockDelay
	for waited := false; ; waited = true {
		ok, err := tryLockFile(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("audit: lock %s: %w", path, err)
		}
		if ok {
			return f, nil
		}
		if !waited {
			l.logger.Debug("audit: waiting for lock", "file", path)
		}
		// Jitter keeps contending processes from retrying in lockstep.
		t := time.NewTimer(delay/2 + rand.N(delay/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, fmt.Errorf("audit: lock %s: %w", path, ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, maxLockDelay)
	}
}
