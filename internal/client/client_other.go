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
