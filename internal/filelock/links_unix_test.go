//go:build unix && !aix && !(solaris && !illumos)

package filelock

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A lock file is made by its lockers; a link at its name is someone else's,
// and following it would create or open a file wherever it points.
func TestAcquireRefusesLink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "created-by-des")
	path := filepath.Join(dir, "x.lock")
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	if l, err := Acquire(context.Background(), path); err == nil || !strings.Contains(err.Error(), "remove it") {
		if l != nil {
			l.Unlock()
		}
		t.Errorf("Acquire through a link: %v, want an error that says to remove it", err)
	}
	if _, err := os.Lstat(target); err == nil {
		t.Errorf("Acquire created %s through the link", target)
	}
}

func TestAcquireInStaysInside(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "created-by-des")
	if err := os.Symlink(target, filepath.Join(dir, "x.lock")); err != nil {
		t.Fatal(err)
	}
	d, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if l, err := AcquireIn(context.Background(), d, "x.lock"); err == nil {
		l.Unlock()
		t.Error("AcquireIn followed a link out of its directory")
	}
	if _, err := os.Lstat(target); err == nil {
		t.Errorf("AcquireIn created %s through the link", target)
	}
	l, err := AcquireIn(context.Background(), d, "y.lock")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := AcquireIn(ctxDone(), d, "y.lock"); err == nil {
		t.Error("a second AcquireIn of a held lock succeeded")
	}
	l.Unlock()
}

func ctxDone() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
