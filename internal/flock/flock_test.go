//go:build unix && !aix && !(solaris && !illumos)

package flock_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/deterministic-exec/des/internal/flock"
)

// Two open files of one path exclude each other, and Unlock frees the lock
// while the file stays open.
func TestTryLockUnlock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	open := func() *os.File {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.Close() })
		return f
	}
	a, b := open(), open()
	if ok, err := flock.TryLock(a); !ok || err != nil {
		t.Fatalf("first TryLock = %v, %v", ok, err)
	}
	if ok, err := flock.TryLock(b); ok || err != nil {
		t.Fatalf("second TryLock while held = %v, %v; want false, nil", ok, err)
	}
	if err := flock.Unlock(a); err != nil {
		t.Fatal(err)
	}
	if ok, err := flock.TryLock(b); !ok || err != nil {
		t.Fatalf("TryLock after Unlock = %v, %v", ok, err)
	}
	if err := flock.Unlock(b); err != nil {
		t.Fatal(err)
	}
	if ok, err := flock.TryLock(a); !ok || err != nil {
		t.Fatalf("TryLock again on the still open file = %v, %v", ok, err)
	}
}

// A closed file is an error, not a lock.
func TestTryLockClosed(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "lock"))
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	if ok, err := flock.TryLock(f); ok || err == nil {
		t.Fatalf("TryLock on a closed file = %v, %v; want an error", ok, err)
	}
}
