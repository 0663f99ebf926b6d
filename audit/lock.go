package audit

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/deterministic-exec/des/internal/filelock"
)

// lockName is the lock file in the log directory. Every append from every
// process holds an exclusive lock on it while it writes.
const lockName = ".lock"

// lock takes this Log's in-process lock and then the directory's file lock,
// giving up when ctx is done. The returned func releases both.
func (l *Log) lock(ctx context.Context) (unlock func(), err error) {
	path := filepath.Join(l.dir, lockName)
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("audit: lock %s: %w", path, ctx.Err())
	}
	fl, err := filelock.Acquire(ctx, path)
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(l.dir, 0o755); err == nil {
			fl, err = filelock.Acquire(ctx, path)
		}
	}
	if err != nil {
		<-l.sem
		return nil, fmt.Errorf("audit: %w", err)
	}
	return func() {
		if err := fl.Unlock(); err != nil {
			l.logger.Warn("audit: unlock", "file", path, "err", err)
		}
		<-l.sem
	}, nil
}
