package main

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

// handOver replaces this process with the companion, stdin, stdout and
// stderr untouched: the companion is then the process Claude Code or the
// shell started. It returns only when exec failed, having said why.
func handOver(self, companion string, args []string) {
	err := syscall.Exec(companion, append([]string{companion}, args...), companionEnv(self))
	fmt.Fprintf(os.Stderr, "des-hook: cannot run %s: %v\n", companion, err)
}

// pipeMax is the largest event handed over through a pipe: well within the
// smallest capacity Linux gives a pipe when a user holds many (4 KiB pages,
// 16 of them by default), so writing it never waits for a reader.
const pipeMax = 60 << 10

// handOverWithStdin runs the companion on stdin, which this process has
// read already. A small event goes through a pipe that becomes the
// companion's stdin, and the companion replaces this process (no child to
// wait for); a larger one, or a pipe that would not take it at once, goes to
// a child process whose outputs pass through.
func handOverWithStdin(self, companion string, stdin []byte) {
	if len(stdin) <= pipeMax {
		if r, w, err := os.Pipe(); err == nil {
			_ = w.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			_, err = w.Write(stdin)
			w.Close()
			if err == nil && syscall.Dup3(int(r.Fd()), 0, 0) == nil {
				handOver(self, companion, nil)
			}
			r.Close()
		}
	}
	runChild(self, companion, nil, bytesReader(stdin))
}
