package filelock

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestAcquireExcludesAndReleases(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	l, err := Acquire(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
	defer cancel()
	if _, err := Acquire(ctx, path); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), path) {
		t.Errorf("second holder: err = %v, want a deadline naming the file", err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	l2, err := Acquire(t.Context(), path)
	if err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	_ = l2.Unlock()
}

func TestAcquireMissingDirectory(t *testing.T) {
	if _, err := Acquire(t.Context(), filepath.Join(t.TempDir(), "no", "x.lock")); err == nil {
		t.Error("a lock in a missing directory was taken")
	}
}

// The O_EXCL fallback, run on every platform.
func TestExclLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	a, b := &exclLock{path: path}, &exclLock{path: path}
	if ok, err := a.tryLock(); !ok || err != nil {
		t.Fatalf("first: %v %v", ok, err)
	}
	if ok, err := b.tryLock(); ok || err != nil {
		t.Fatalf("second while held: %v %v", ok, err)
	}
	if hint := exclHint(path); !strings.Contains(hint, "pid ") {
		t.Errorf("hint = %q, want the holder", hint)
	}
	if err := a.unlock(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Error("unlock left the lock file")
	}
	if ok, err := b.tryLock(); !ok || err != nil {
		t.Fatalf("after release: %v %v", ok, err)
	}
	_ = b.unlock()
}

func TestExclLockImpossiblePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := (&exclLock{path: filepath.Join(path, "x")}).tryLock(); err == nil {
		t.Error("no error for a lock under a regular file")
	}
}
