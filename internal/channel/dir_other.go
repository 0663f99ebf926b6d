//go:build !unix

package channel

import (
	"errors"
	"fmt"
)

// RuntimeDir is not supported here: there is no decision server on this
// platform, and the client always decides in-process.
func RuntimeDir(func(string) (string, bool)) (string, error) {
	return "", fmt.Errorf("des runtime directory: %w", errors.ErrUnsupported)
}

// EnsureDir is not supported here either.
func EnsureDir(dir string) (string, error) {
	return "", fmt.Errorf("des runtime directory %s: %w", dir, errors.ErrUnsupported)
}
