//go:build !linux

package client

import (
	"context"
	"errors"
	"fmt"

	"github.com/deterministic-exec/des/internal/channel"
)

// Call always falls back on this platform: there is no decision server.
func (c *Client) Call(context.Context, *channel.Request) (*channel.Reply, error) {
	return nil, fmt.Errorf("%w: %w", ErrNotAccepted, errors.ErrUnsupported)
}

// NoteFallback records nothing here: every event is decided in process.
func (c *Client) NoteFallback(error) {}

// Probe reports that there is no decision server on this platform.
func (c *Client) Probe(context.Context) (pid int, sock string, err error) {
	return 0, "", fmt.Errorf("%w: %w", ErrNotAccepted, errors.ErrUnsupported)
}

// LastFallback has nothing to read here.
func (c *Client) LastFallback() (channel.Fallback, bool, error) {
	return channel.Fallback{}, false, nil
}
