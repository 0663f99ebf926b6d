//go:build linux

package gate

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/internal/testenv"
	"golang.org/x/sys/unix"
)

// An agent that keeps exchanging .des/runs with a FIFO (renameat2
// RENAME_EXCHANGE) can land the swap between fileio.OpenDirIn's Lstat and its
// open: the open must fail, never block.
func TestOpenRealDirNeverBlocksOnASwappedFIFO(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	runs := filepath.Join(root, ".des", "runs")
	fifo := filepath.Join(root, ".des", "fifo")
	if err := os.MkdirAll(runs, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	stop := testenv.Meanwhile(t, func() { // the agent
		_ = unix.Renameat2(unix.AT_FDCWD, runs, unix.AT_FDCWD, fifo, unix.RENAME_EXCHANGE)
	})
	t.Cleanup(func() {
		stop()
		for _, p := range []string{runs, fifo} { // release a blocked open, if any
			if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
		}
	})
	deadline := time.Now().Add(testenv.Pick(300*time.Millisecond, 3*time.Second))
	for i := 0; time.Now().Before(deadline); i++ {
		done := make(chan struct{})
		go func() {
			defer close(done)
			if i%2 == 0 {
				_, _ = PruneRuns(context.Background(), nil, root, ".des/runs", time.Now(), 10)
			} else if d, err := fileio.OpenDirIn(root, ".des/runs", true); err == nil {
				d.Close()
			}
		}()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			t.Fatalf("call %d did not return in 2s: blocked opening a FIFO swapped in for .des/runs", i)
		}
	}
}

// A FIFO at a record's name is no record, and reading it does not block.
func TestReadRecordNeverBlocksOnAFIFO(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "toolu_x.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan bool)
	go func() {
		var r Run
		ok, _ := readRecord(dir, "toolu_x.json", &r)
		done <- ok
	}()
	select {
	case ok := <-done:
		if ok {
			t.Error("a FIFO read as a record")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("readRecord blocked on a FIFO")
	}
}
