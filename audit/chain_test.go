package audit

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

// seqs returns the Seq of every entry of the trail, in trail order.
func seqs(t *testing.T, l *Log) []int64 {
	t.Helper()
	es, err := l.Read(context.Background(), Query{})
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, e := range es {
		out = append(out, e.Seq)
	}
	return out
}

func assertIntact(t *testing.T, dir string, lines int) {
	t.Helper()
	rep := mustVerify(t, dir)
	if !rep.Intact() || rep.Lines != lines {
		t.Fatalf("Verify = %+v (break %v), want intact with %d lines", rep, rep.Break, lines)
	}
}

// A line is never written to a file older than the line before it: an
// entry stamped before the newest day goes to the newest day file.
func TestLateEntryGoesToNewestFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	l := mustOpen(t, dir)
	newer := day.AddDate(0, 0, 2)
	if err := l.Append(ctx, Entry{Time: newer, Event: HookError, Fields: map[string]any{"error": "newer"}}); err != nil {
		t.Fatal(err)
	}
	// In one batch too: the older entry after the newer one follows it.
	err := l.Append(ctx,
		Entry{Time: day, Event: HookError, Fields: map[string]any{"error": "late"}},
		Entry{Time: newer.AddDate(0, 0, 1), Event: HookError, Fields: map[string]any{"error": "next day"}},
		Entry{Time: day, Event: HookError, Fields: map[string]any{"error": "late again"}})
	if err != nil {
		t.Fatal(err)
	}
	files, err := l.Files()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, FileName(newer)), filepath.Join(dir, FileName(newer.AddDate(0, 0, 1)))}
	if diff := cmp.Diff(want, files); diff != "" {
		t.Fatalf("files (-want +got):\n%s", diff)
	}
	es, err := ReadFile(files[1])
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[1].Fields["error"] != "late again" || !es[1].Time.Equal(day) {
		t.Errorf("newest file holds %+v", es)
	}
	assertIntact(t, dir, 4)
}

// The head record only saves the search for the head: when it is missing,
// stale or wrong, Append finds the head in the files.
func TestHeadRecordFallback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, spoil := range map[string]func(t *testing.T, dir string){
		"missing": func(t *testing.T, dir string) { mustRemove(t, filepath.Join(dir, HeadFile)) },
		"garbled": func(t *testing.T, dir string) {
			if err := os.WriteFile(filepath.Join(dir, HeadFile), []byte("nonsense"), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		// A crash between writing lines and the record: the file grew.
		"stale size": func(t *testing.T, dir string) {
			rec, _, _, err := readHead(dir)
			if err != nil {
				t.Fatal(err)
			}
			rec.Size--
			rec.Seq = 1
			if err := writeHeadAt(dir, rec, -1, false); err != nil {
				t.Fatal(err)
			}
		},
		"names another file": func(t *testing.T, dir string) {
			rec, _, _, err := readHead(dir)
			if err != nil {
				t.Fatal(err)
			}
			rec.File = FileName(day.AddDate(0, 0, -5))
			if err := writeHeadAt(dir, rec, -1, false); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			l := mustOpen(t, dir, fixedClock(day))
			if err := l.Append(ctx, hookError(nil), hookError(nil)); err != nil {
				t.Fatal(err)
			}
			spoil(t, dir)
			if err := l.Append(ctx, hookError(nil)); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]int64{1, 2, 3}, seqs(t, l)); diff != "" {
				t.Errorf("seqs (-want +got):\n%s", diff)
			}
			assertIntact(t, dir, 3)
		})
	}
}

// A crash after lines went to a new day file and before the head record
// was written leaves a record that names the older file. The next append
// still continues from the newest line, whether it is dated a later day, or
// the record's day (an explicit Time, or a clock stepped back), which must
// not fork the chain behind the record.
func TestCrashBeforeHeadRecord(t *testing.T) {
	t.Parallel()
	for name, next := range map[string]time.Time{
		"later day":    day.AddDate(0, 0, 2),
		"record's day": day,
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			l := mustOpen(t, dir)
			if err := l.Append(ctx, Entry{Time: day, Event: HookError, Fields: map[string]any{"error": "a"}}); err != nil {
				t.Fatal(err)
			}
			rec, _, _, err := readHead(dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Append(ctx, Entry{Time: day.AddDate(0, 0, 1), Event: HookError, Fields: map[string]any{"error": "b"}}); err != nil {
				t.Fatal(err)
			}
			if err := writeHeadAt(dir, rec, -1, false); err != nil { // as if the second append died before its record
				t.Fatal(err)
			}
			if err := l.Append(ctx, Entry{Time: next, Event: HookError, Fields: map[string]any{"error": "c"}}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]int64{1, 2, 3}, seqs(t, l)); diff != "" {
				t.Errorf("seqs (-want +got):\n%s", diff)
			}
			assertIntact(t, dir, 3)
		})
	}
}

// Append does not chain behind a last line it cannot read: that would bury
// the damage under new lines.
func TestAppendRefusesBrokenHead(t *testing.T) {
	t.Parallel()
	for name, tail := range map[string]string{
		"torn":      `{"timestamp":"2026-03-14T15:09:26Z","ev`,
		"not json":  "{oops}\n",
		"bad seq":   `{"timestamp":"2026-03-14T15:09:26Z","event":"HOOK_ERROR","seq":-1,"prev":""}` + "\n",
		"not entry": "[]\n",
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			l := mustOpen(t, dir, fixedClock(day))
			if err := l.Append(context.Background(), hookError(nil)); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, FileName(day))
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString(tail); err != nil {
				t.Fatal(err)
			}
			f.Close()
			before, _ := os.ReadFile(path)
			err = l.Append(context.Background(), hookError(nil))
			if !errors.Is(err, ErrMalformedLine) || !strings.Contains(err.Error(), path) {
				t.Errorf("err = %v, want ErrMalformedLine naming %s", err, path)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Errorf("file changed")
			}
		})
	}
}

// The head of the chain is found in the newest non-empty file, an archive
// included, and the caller's entries are left as they were.
func TestHeadBehindEmptyFile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	l := mustOpen(t, dir, fixedClock(day))
	if err := l.Append(ctx, hookError(nil)); err != nil {
		t.Fatal(err)
	}
	mustRemove(t, filepath.Join(dir, HeadFile))
	if err := os.WriteFile(filepath.Join(dir, FileName(day.AddDate(0, 0, 1))), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	entries := []Entry{hookError(nil)}
	if err := l.Append(ctx, entries...); err != nil {
		t.Fatal(err)
	}
	if !entries[0].Time.IsZero() {
		t.Errorf("Append stamped the caller's entry: %v", entries[0].Time)
	}
	if diff := cmp.Diff([]int64{1, 2}, seqs(t, l)); diff != "" {
		t.Errorf("seqs (-want +got):\n%s", diff)
	}
	assertIntact(t, dir, 2)
}

func TestConcurrentChains(t *testing.T) {
	t.Parallel()
	// The concurrency tests in audit_test.go check the chain too; this one
	// mixes days, so that goroutines race to create a new day file.
	ctx := context.Background()
	dir := t.TempDir()
	done := make(chan error)
	for g := range 8 {
		go func() {
			l := mustOpen(t, dir)
			var err error
			for i := range 50 {
				e := hookError(map[string]any{"g": g})
				e.Time = day.Add(time.Duration(i) * time.Hour)
				if err = l.Append(ctx, e); err != nil {
					break
				}
			}
			done <- err
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	assertIntact(t, dir, 400)
}

// Appends running while Verify reads must not make the trail look broken:
// no half-written line, no head record ahead of the lines Verify read.
func TestVerifyWhileAppending(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	l := mustOpen(t, dir, fixedClock(day))
	if err := l.Append(ctx, hookError(nil)); err != nil {
		t.Fatal(err)
	}
	var appendErr error // the first; read once stop has waited for the appends
	stop := testenv.Meanwhile(t, func() {
		if err := l.Append(ctx, hookError(map[string]any{"pad": strings.Repeat("p", 3000)})); err != nil && appendErr == nil {
			appendErr = err
		}
	})
	for range 20 {
		rep := mustVerify(t, dir)
		if !rep.Intact() {
			t.Errorf("Verify during appends: %v", rep.Break)
			break
		}
	}
	stop()
	if appendErr != nil {
		t.Fatal(appendErr)
	}
}

// writeHeadAt is writeHead for the directory at path dir.
func writeHeadAt(dir string, rec headRecord, oldLen int, sync bool) error {
	d, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return writeHead(d, rec, oldLen, sync)
}
