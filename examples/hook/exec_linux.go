package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/deterministic-exec/des/internal/channel"
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

// readStdinPolled reads stdin through Go's poller when it is a pipe or a
// socket (as Claude Code gives it), so the deadline needs no goroutine
// parked in read(2) and no thread of its own. It reads a duplicate of
// descriptor 0 made non-blocking for the read and blocking again after (the
// flag is shared by both descriptors). ok is false when stdin cannot be
// polled (a regular file, a terminal): readStdin then reads it as before.
func readStdinPolled(within time.Duration) (b []byte, err error, ok bool) {
	fd, err := syscall.Dup(0)
	if err != nil {
		return nil, nil, false
	}
	syscall.CloseOnExec(fd)
	if syscall.SetNonblock(fd, true) != nil {
		syscall.Close(fd)
		return nil, nil, false
	}
	f := os.NewFile(uintptr(fd), "stdin")
	defer f.Close()
	defer syscall.SetNonblock(fd, false) // before the close above
	if f.SetReadDeadline(time.Now().Add(within)) != nil {
		return nil, nil, false // not pollable
	}
	b, err = io.ReadAll(io.LimitReader(f, channel.MaxStdin+1))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, fmt.Errorf("%w (%v)", errStdinOpen, within), true
	}
	return b, err, true
}
