//go:build !linux

package server

import (
	"context"
	"errors"
	"net"

	"github.com/deterministic-exec/des/internal/channel"
)

// Listen is not supported on this platform.
func Listen(context.Context, string, string, *channel.StartLock) (*net.UnixListener, error) {
	return nil, errors.ErrUnsupported
}

// Serve is not supported on this platform.
func Serve(context.Context, *net.UnixListener, Handler, Options) error { return errors.ErrUnsupported }

// Self is not supported on this platform: clients never start or trust a
// server here, and decide in process.
func Self() (exe, buildID, key string, err error) { return "", "", "", errors.ErrUnsupported }

// Inherited finds nothing on this platform: no client hands a lock over.
func Inherited(func(string) (string, bool)) (dir string, lock *channel.StartLock) { return "", nil }
