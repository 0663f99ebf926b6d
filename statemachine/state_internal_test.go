package statemachine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestNextStateVersion(t *testing.T) {
	t.Parallel()
	v := func(n int64) *int64 { return &n }
	cases := []struct {
		disk, base *int64
		want       int64
		stale      bool
	}{
		{nil, nil, 1, false},
		{nil, v(0), 1, false},
		{nil, v(7), 8, false},
		{v(5), v(5), 6, false},
		{v(5), v(6), 7, false},
		{v(0), v(0), 1, false},
		{v(5), v(4), 0, true},
		{v(5), nil, 0, true},
		{v(0), nil, 0, true},
	}
	for _, c := range cases {
		got, err := nextStateVersion(c.disk, c.base)
		if c.stale != errors.Is(err, ErrStaleState) || got != c.want || (!c.stale && err != nil) {
			t.Errorf("nextStateVersion(%v, %v) = %d, %v; want %d, stale %v", deref(c.disk), deref(c.base), got, err, c.want, c.stale)
		}
	}
	if _, err := nextStateVersion(nil, v(1<<63-1)); err == nil || errors.Is(err, ErrStaleState) {
		t.Errorf("overflow: %v", err)
	}
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestWriteStateLockTimeout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	target, err := stateTarget(path)
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := lockState(context.Background(), target+".lock")
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseState([]byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	_, err = WriteState(path, s, WithLockTimeout(50*time.Millisecond))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("held lock: err = %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("gave up after %v", d)
	}
	if _, err := WriteState(path, s, WithLockTimeout(0)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("zero timeout: err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := WriteState(path, s, WithContext(ctx)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: err = %v", err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("a write happened without the lock")
	}

	unlock()
	if v, err := WriteState(path, s, WithLockTimeout(0)); err != nil || v != 1 {
		t.Errorf("free lock, zero timeout: %d, %v", v, err)
	}
}

func TestWithStateVersionCopies(t *testing.T) {
	t.Parallel()
	doc, err := ParseObject([]byte(`{"a": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	d := withStateVersion(doc, 3)
	if got := string(d.appendJSON(nil)); got != `{"state_version":3,"a":1}` {
		t.Errorf("copy = %s", got)
	}
	if got := string(doc.appendJSON(nil)); got != `{"a":1}` {
		t.Errorf("original = %s", got)
	}
}
