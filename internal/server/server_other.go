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
