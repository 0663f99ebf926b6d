//go:build linux

package audit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/testenv"
	"golang.org/x/sys/unix"
)

// exchangeWithFIFO makes a FIFO beside path and, until the test ends,
// keeps exchanging the two (renameat2 RENAME_EXCHANGE), as an agent's
// background loop would. A reader left blocked on the FIFO is released at
// the end.
func exchangeWithFIFO(t *testing.T, path string) {
	t.Helper()
	fifo := path + ".fifo"
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	stop := testenv.Meanwhile(t, func() {
		_ = unix.Renameat2(unix.AT_FDCWD, path, unix.AT_FDCWD, fifo, unix.RENAME_EXCHANGE)
	})
	t.Cleanup(func() {
		stop()
		for _, p := range []string{path, fifo} {
			if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
		}
	})
}

// returnsWithin runs call repeatedly for a second (a fifth of one by
// default: DES_TEST_LONG=1 takes the second), failing when one does
// not return within 2s: blocked opening a FIFO.
func returnsWithin(t *testing.T, what string, call func()) {
	t.Helper()
	deadline := time.Now().Add(testenv.Pick(200*time.Millisecond, time.Second))
	for i := 0; time.Now().Before(deadline); i++ {
		done := make(chan struct{})
		go func() { defer close(done); call() }()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			t.Fatalf("%s (call %d) did not return in 2s: blocked opening a FIFO swapped in", what, i)
		}
	}
}

// A day file beside its archive (a crash between the archive's rename and
// the day file's removal) is compared with the archive's last member by
// Verify and Read (AppendNew's too, under the lock). A FIFO exchanged for
// the day file between the listing and that read must not hold them.
func TestVerifyAndReadNeverBlockOnADayFileSwappedForAFIFO(t *testing.T) {
	t.Parallel()
	dir := dailyTrail(t, 2)
	day := filepath.Join(dir, "audit-2026-03-01.log")
	data, err := os.ReadFile(day)
	if err != nil {
		t.Fatal(err)
	}
	now := retDay.AddDate(0, 0, 30)
	l := mustOpen(t, dir, WithRetention(3), fixedClock(now))
	if _, err := l.Archive(context.Background(), now); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(day, data, 0o644); err != nil { // the crash's leftover
		t.Fatal(err)
	}
	exchangeWithFIFO(t, day)
	returnsWithin(t, "Verify", func() { _, _ = Verify(context.Background(), dir) })
	returnsWithin(t, "Read", func() { _, _ = l.Read(context.Background(), Query{}) })
}

// Retention removes each archived day file and syncs the log directory,
// the one the lock opened: not whatever is at its path by then, a FIFO
// exchanged for it.
func TestArchiveNeverBlocksOnTheDirectorySwappedForAFIFO(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, ".des", "audit")
	now := retDay.AddDate(0, 0, 60)
	l := mustOpen(t, dir, WithRoot(root), WithRetention(3), fixedClock(now))
	if err := appendWithin(t, l); err != nil {
		t.Fatal(err)
	}
	real, err := os.OpenRoot(dir) // follows the directory wherever the exchange puts it
	if err != nil {
		t.Fatal(err)
	}
	defer real.Close()
	exchangeWithFIFO(t, dir)
	returnsWithin(t, "Archive", func() {
		for d := range 20 { // old day files for retention to archive
			_ = real.WriteFile(FileName(retDay.AddDate(0, 0, d)), fmt.Appendf(nil, "day %d\n", d), 0o644)
		}
		_, _ = l.Archive(context.Background(), now)
	})
}
