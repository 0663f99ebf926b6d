package filelock

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"
)

// exclLock is the lock of systems without flock or LockFileEx: holding it
// is having created the file (O_EXCL), and releasing it removing the file.
// A holder that dies leaves the file, and the lock, behind.
type exclLock struct {
	path string
	f    *os.File
}

func (l *exclLock) tryLock() (bool, error) {
	f, err := os.OpenFile(l.path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	// Who holds it, for whoever finds it left behind.
	host, _ := os.Hostname()
	_, _ = fmt.Fprintf(f, "pid %d on %s since %s\n", os.Getpid(), host, time.Now().UTC().Format(time.RFC3339))
	l.f = f
	return true, nil
}

func (l *exclLock) unlock() error {
	err := os.Remove(l.path)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (l *exclLock) close() error { return nil }

// exclHint says who holds an O_EXCL lock file, for a timeout's message.
func exclHint(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	return fmt.Sprintf(" (the lock file is held by %s; remove it if that process is gone)", strings.TrimSpace(string(b)))
}
