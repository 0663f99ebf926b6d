//go:build unix && !aix && !(solaris && !illumos)

package channel

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/deterministic-exec/des/internal/flock"
)

// StartLock is the flock on a server's lock file. It is not
// internal/filelock's Lock because the client hands it to the server it
// starts (as an inherited descriptor): the lock then stays held, even after
// the client exits, until the new server listens or dies, so a racing client
// never starts a second one. flock belongs to the open file description,
// which the child shares. Both take the flock through internal/flock.
type StartLock struct{ f *os.File }

// LockFD is the descriptor number under which a started server inherits the
// lock (the first of exec.Cmd.ExtraFiles).
const LockFD = 3

// TryLock takes the lock at path without waiting; ok is false when another
// holder has it.
func TryLock(path string) (l *StartLock, ok bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("lock %s: %w", path, err)
	}
	switch ok, err := flock.TryLock(f); {
	case ok:
		return &StartLock{f: f}, true, nil
	case err == nil:
		_ = f.Close()
		return nil, false, nil
	default:
		_ = f.Close()
		return nil, false, fmt.Errorf("lock %s: %w", path, err)
	}
}

// AcquireLock polls TryLock until it succeeds or ctx ends.
func AcquireLock(ctx context.Context, path string) (*StartLock, error) {
	delay := 200 * time.Microsecond
	for {
		l, ok, err := TryLock(path)
		if err != nil || ok {
			return l, err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("lock %s: held by another process: %w", path, ctx.Err())
		case <-t.C:
		}
		delay = min(2*delay, 10*time.Millisecond)
	}
}

// AdoptLock wraps a lock inherited as f (see LockFD).
func AdoptLock(f *os.File) *StartLock { return &StartLock{f: f} }

// File is the lock's open file, to hand to a child process.
func (l *StartLock) File() *os.File { return l.f }

// Unlock releases the lock, for every process sharing it, and closes it.
func (l *StartLock) Unlock() error {
	err := flock.Unlock(l.f)
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Close closes this process's descriptor without releasing the lock, which
// a child that shares it keeps.
func (l *StartLock) Close() error { return l.f.Close() }

// The lock file also records how the last start went, so that a companion
// whose server dies before it listens is not restarted by every call (each
// restart costs a process start beside the hook): "starting" written by the
// client before it starts the server, "listening <pid>" by the server once
// it listens.
const (
	markStarting  = "starting\n"
	markListening = "listening "
)

// MarkStarting records that a server is being started.
func (l *StartLock) MarkStarting() error { return l.mark(markStarting) }

// MarkListening records that the server pid listens.
func (l *StartLock) MarkListening(pid int) error {
	return l.mark(markListening + strconv.Itoa(pid) + "\n")
}

func (l *StartLock) mark(s string) error {
	if err := l.f.Truncate(0); err != nil {
		return err
	}
	_, err := l.f.WriteAt([]byte(s), 0)
	return err
}

// FailedStart reports when the last start was made, if its server never
// listened and that was less than within ago. Only meaningful under the lock:
// a server still starting holds it.
func (l *StartLock) FailedStart(within time.Duration) (time.Time, bool) {
	buf := make([]byte, len(markStarting))
	n, _ := l.f.ReadAt(buf, 0)
	fi, err := l.f.Stat()
	if err != nil || string(buf[:n]) != markStarting {
		return time.Time{}, false
	}
	return fi.ModTime(), time.Since(fi.ModTime()) < within
}
