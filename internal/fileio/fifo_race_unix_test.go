//go:build unix

package fileio

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/testenv"
)

// A named pipe swapped in between OpenRegular's stat and its open (a
// sandboxed command can do it in a directory it may write, .des/decisions)
// never blocks the reader: opened for reading with no writer, it would
// wait forever (logs push, and the warm server's pusher with the push lock
// held).
func TestOpenRegularNeverWaitsOnASwappedPipe(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "2026-01-02.jsonl")
	plain, pipe := filepath.Join(dir, "plain.tmp"), filepath.Join(dir, "pipe.tmp")
	defer testenv.Meanwhile(t, func() {
		os.WriteFile(plain, []byte("{}\n"), 0o644)
		os.Rename(plain, p)
		if syscall.Mkfifo(pipe, 0o644) == nil {
			os.Rename(pipe, p)
		}
	})()
	deadline := time.Now().Add(testenv.Pick(300*time.Millisecond, 2*time.Second))
	for i := 0; time.Now().Before(deadline); i++ {
		opened := make(chan struct{})
		go func() {
			if f, _, err := OpenRegular(p); err == nil {
				f.Close()
			}
			close(opened)
		}()
		select {
		case <-opened:
		case <-time.After(3 * time.Second):
			// Let the blocked open go before the test ends.
			if w, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
			t.Fatalf("OpenRegular still waits after 3s (open %d)", i+1)
		}
	}
}
