//go:build !windows && (!unix || aix || (solaris && !illumos))

package statemachine

// lockFileExistence reports whether holding a state lock is the lock file's
// existence (exclLock) rather than a lock the system releases when its
// holder dies.
const lockFileExistence = true

// openFileLock falls back to an O_EXCL lock file where the system offers no
// flock or LockFileEx.
func openFileLock(path string) (fileLocker, error) { return &exclLock{path: path}, nil }
