//go:build !unix

package decisionlog

import "errors"

func mkfifo(string) error { return errors.New("no named pipes") }
