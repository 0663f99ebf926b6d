//go:build !unix

package gate_test

import "errors"

func mkfifo(string) error { return errors.ErrUnsupported }
