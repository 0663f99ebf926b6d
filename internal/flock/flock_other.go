//go:build !unix || aix || (solaris && !illumos)

package flock

import (
	"errors"
	"os"
)

// TryLock is not supported here.
func TryLock(*os.File) (bool, error) { return false, errors.ErrUnsupported }

// Unlock is not supported here.
func Unlock(*os.File) error { return errors.ErrUnsupported }
