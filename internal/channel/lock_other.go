//go:build !unix || aix || (solaris && !illumos)

package channel

import (
	"context"
	"errors"
	"os"
	"time"
)

// StartLock is not available on this platform: there is no server here.
type StartLock struct{ f *os.File }

// LockFD is the descriptor number under which a started server inherits the lock.
const LockFD = 3

// TryLock is not supported here.
func TryLock(string) (*StartLock, bool, error) { return nil, false, errors.ErrUnsupported }

// AcquireLock is not supported here.
func AcquireLock(context.Context, string) (*StartLock, error) { return nil, errors.ErrUnsupported }

// AdoptLock wraps an inherited lock.
func AdoptLock(f *os.File) *StartLock { return &StartLock{f: f} }

// File is the lock's open file.
func (l *StartLock) File() *os.File { return l.f }

// Unlock closes the file.
func (l *StartLock) Unlock() error { return l.f.Close() }

// Close closes the file.
func (l *StartLock) Close() error { return l.f.Close() }

// MarkStarting does nothing here.
func (l *StartLock) MarkStarting() error { return errors.ErrUnsupported }

// MarkListening does nothing here.
func (l *StartLock) MarkListening(int) error { return errors.ErrUnsupported }

// FailedStart reports nothing here.
func (l *StartLock) FailedStart(time.Duration) (time.Time, bool) { return time.Time{}, false }
