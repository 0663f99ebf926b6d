package audit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/deterministic-exec/des/internal/filelock"
)

// lockName is the lock file in the log directory. Every append from every
// process holds an exclusive lock on it while it writes.
const lockName = ".lock"

// lock takes this Log's in-process lock, opens the log directory (see
// [WithRoot]) and takes the directory's file lock, giving up when ctx is
// done. The returned func releases both and closes the directory; the
// appender writes through that directory.
// LockWait bounds the wait for the trail's lock.
const LockWait = 3 * time.Second

func (l *Log) lock(ctx context.Context) (dir *os.Root, unlock func(), err error) {
	path := filepath.Join(l.dir, lockName)
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("audit: lock %s: %w", path, ctx.Err())
	}
	if dir, err = l.openDir(); err != nil {
		<-l.sem
		return nil, nil, err
	}
	// An append holds the lock for milliseconds; a holder that keeps it for
	// seconds is stuck or hostile (an agent's `flock .des/audit/.lock sleep
	// 120 &`), and waiting for the caller's whole deadline would make every
	// hook call that long.
	lctx, cancel := context.WithTimeout(ctx, LockWait)
	defer cancel()
	fl, err := filelock.AcquireIn(lctx, dir, lockName)
	if err != nil {
		err = notDESFile(dir, lockName, err)
		dir.Close()
		<-l.sem
		return nil, nil, fmt.Errorf("audit: %w", err)
	}
	return dir, func() {
		if err := fl.Unlock(); err != nil {
			l.logger.Warn("audit: unlock", "file", path, "err", err)
		}
		dir.Close()
		<-l.sem
	}, nil
}
