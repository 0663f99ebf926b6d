//go:build !windows && (!unix || aix || (solaris && !illumos))

package audit

import (
	"errors"
	"fmt"
	"os"
)

// tryLockFile fails: this platform has no flock or LockFileEx, and an
// unlocked append would not be safe across processes.
func tryLockFile(*os.File) (bool, error) {
	return false, fmt.Errorf("file locking: %w", errors.ErrUnsupported)
}

func unlockFile(*os.File) error { return errors.ErrUnsupported }
