//go:build !unix

package gate

import "errors"

func makeFIFO(string) error { return errors.ErrUnsupported }
