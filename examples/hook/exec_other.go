//go:build !linux

package main

import (
	"os"
	"time"
)

// handOver runs the companion as a child with this process's stdin and
// passes its exit status through (no exec here); it does not return.
func handOver(self, companion string, args []string) {
	code := runChild(self, companion, args, os.Stdin)
	if len(args) == 0 {
		code = 0 // hook mode
	}
	os.Exit(code)
}

// handOverWithStdin runs the companion as a child on stdin, already read.
func handOverWithStdin(self, companion string, stdin []byte) {
	runChild(self, companion, nil, bytesReader(stdin))
}

// readStdinPolled: stdin is read by readStdin's goroutine here.
func readStdinPolled(time.Duration) ([]byte, error, bool) { return nil, nil, false }
