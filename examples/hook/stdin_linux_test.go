package main

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// withStdin makes f this process's descriptor 0 for the test's duration.
func withStdin(t *testing.T, f *os.File) {
	t.Helper()
	saved, err := syscall.Dup(0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Dup3(int(f.Fd()), 0, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Dup3(saved, 0, 0)
		_ = syscall.Close(saved)
	})
}

func stdinBlocking(t *testing.T) bool {
	t.Helper()
	fl, _, errno := syscall.Syscall(syscall.SYS_FCNTL, 0, syscall.F_GETFL, 0)
	if errno != 0 {
		t.Fatal(errno)
	}
	return fl&syscall.O_NONBLOCK == 0
}

// The event is read through the poller from a pipe, and from a regular file
// (which the poller does not take) as before; either way stdin is left in
// blocking mode for the companion a fallback hands it to.
func TestReadStdin(t *testing.T) {
	t.Setenv(deadlineEnv, "")
	const event = `{"hook_event_name":"PreToolUse"}`

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	withStdin(t, r)
	if _, err := w.WriteString(event); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if _, _, ok := readStdinPolled(time.Second); !ok {
		t.Fatal("a pipe was not read through the poller")
	}
	if !stdinBlocking(t) {
		t.Error("stdin left non-blocking after a polled read")
	}

	r2, w2, _ := os.Pipe()
	defer r2.Close()
	withStdin(t, r2)
	w2.WriteString(event)
	w2.Close()
	if got, err := readStdin(); err != nil || string(got) != event {
		t.Errorf("pipe: %q, %v", got, err)
	}

	p := filepath.Join(t.TempDir(), "event.json")
	if err := os.WriteFile(p, []byte(event), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	withStdin(t, f)
	if _, _, ok := readStdinPolled(time.Second); ok {
		t.Error("a regular file was taken as pollable")
	}
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	if got, err := readStdin(); err != nil || string(got) != event {
		t.Errorf("regular file: %q, %v", got, err)
	}
	if !stdinBlocking(t) {
		t.Error("stdin left non-blocking after reading a file")
	}
}

// A writer that never closes stdin: the read ends at the deadline.
func TestReadStdinNeverClosed(t *testing.T) {
	t.Setenv(deadlineEnv, "150")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	withStdin(t, r)
	w.WriteString(`{"hook_event_name":`)
	start := time.Now()
	_, err = readStdin()
	if !errors.Is(err, errStdinOpen) {
		t.Errorf("err = %v, want errStdinOpen", err)
	}
	if d := time.Since(start); d < 100*time.Millisecond || d > 2*time.Second {
		t.Errorf("gave up after %v, want about 150ms", d)
	}
	if !stdinBlocking(t) {
		t.Error("stdin left non-blocking after a read cut off by the deadline")
	}
}
