package audit

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var retDay = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// dailyTrail appends two entries on each of days days from retDay, without
// retention, and returns the log's directory.
func dailyTrail(t *testing.T, days int) string {
	t.Helper()
	dir := t.TempDir()
	l := mustOpen(t, dir)
	for d := range days {
		at := retDay.AddDate(0, 0, d)
		err := l.Append(context.Background(),
			Entry{Time: at, Event: HookError, Fields: map[string]any{"error": fmt.Sprintf("day %d a", d)}},
			Entry{Time: at.Add(time.Hour), Event: HookError, Fields: map[string]any{"error": fmt.Sprintf("day %d b", d)}})
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		if !strings.HasPrefix(de.Name(), ".") && de.Name() != ArchiveDir {
			out = append(out, de.Name())
		}
	}
	return out
}

func TestRetentionOnAppend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := dailyTrail(t, 10) // 2026-03-01 .. 2026-03-10
	now := retDay.AddDate(0, 0, 10)
	l := mustOpen(t, dir, WithRetention(3), fixedClock(now))
	// The first append of a new day archives at most 4 files past the
	// retention (2026-03-01 .. 03-07 are), oldest first.
	if err := l.Append(ctx, hookError(nil)); err != nil {
		t.Fatal(err)
	}
	want := []string{"audit-2026-03-01.log.gz", "audit-2026-03-02.log.gz", "audit-2026-03-03.log.gz", "audit-2026-03-04.log.gz"}
	if diff := cmp.Diff(want, names(t, filepath.Join(dir, ArchiveDir))); diff != "" {
		t.Errorf("archives (-want +got):\n%s", diff)
	}
	// Later appends that day take the fast path and archive nothing.
	if err := l.Append(ctx, hookError(nil)); err != nil {
		t.Fatal(err)
	}
	if n := len(names(t, filepath.Join(dir, ArchiveDir))); n != 4 {
		t.Errorf("%d archives after a second append the same day, want 4", n)
	}
	// Archive catches up: 03-05 .. 03-07 (03-08 is exactly 3 days old).
	done, err := l.Archive(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 3 || filepath.Base(done[2]) != "audit-2026-03-07.log.gz" {
		t.Errorf("Archive = %v", done)
	}
	if diff := cmp.Diff([]string{"audit-2026-03-08.log", "audit-2026-03-09.log", "audit-2026-03-10.log", "audit-2026-03-11.log"}, names(t, dir)); diff != "" {
		t.Errorf("day files (-want +got):\n%s", diff)
	}
	assertIntact(t, dir, 22)
	if rep := mustVerify(t, dir); rep.Files != 11 {
		t.Errorf("Verify read %d files, want 11", rep.Files)
	}
	// Read finds archived entries, in trail order, with their seqs.
	es, err := l.Read(ctx, Query{})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 22 || es[0].Fields["error"] != "day 0 a" || es[0].Seq != 1 || es[21].Seq != 22 {
		t.Errorf("Read: %d entries, first %+v", len(es), es[0])
	}
	es, err = l.Read(ctx, Query{Since: retDay.AddDate(0, 0, 1), Until: retDay.AddDate(0, 0, 1).Add(time.Minute)})
	if err != nil || len(es) != 1 || es[0].Fields["error"] != "day 1 a" || es[0].Seq != 3 {
		t.Errorf("Read of an archived day = %+v, %v", es, err)
	}
	// An archive is the day file, gzip-compressed; ReadFile reads it.
	arch := filepath.Join(dir, ArchiveDir, "audit-2026-03-02.log.gz")
	if es, err := ReadFile(arch); err != nil || len(es) != 2 || es[1].Seq != 4 {
		t.Errorf("ReadFile(archive) = %+v, %v", es, err)
	}
	raw, err := os.ReadFile(arch)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil || zr.Name != "audit-2026-03-02.log" {
		t.Errorf("gzip header: name %q, err %v", zr.Name, err)
	}
	// Without a retention, Archive does nothing.
	if done, err := mustOpen(t, dir).Archive(ctx, now); err != nil || done != nil {
		t.Errorf("Archive without retention = %v, %v", done, err)
	}
}

// Lines written for a date whose day file was archived go to a new day file
// beside the archive; archiving it again adds a gzip member.
func TestArchiveAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := dailyTrail(t, 2) // 03-01, 03-02
	now := retDay.AddDate(0, 0, 30)
	l := mustOpen(t, dir, WithRetention(3), fixedClock(now))
	if _, err := l.Archive(ctx, now); err != nil {
		t.Fatal(err)
	}
	if got := names(t, dir); len(got) != 0 {
		t.Fatalf("day files left: %v", got)
	}
	// All day files archived and the head record gone: the head is read
	// from the newest archive, and an entry stamped 03-01 goes to 03-02.
	mustRemove(t, filepath.Join(dir, HeadFile))
	if err := l.Append(ctx, Entry{Time: retDay, Event: HookError, Fields: map[string]any{"error": "late"}}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"audit-2026-03-02.log"}, names(t, dir)); diff != "" {
		t.Errorf("day files (-want +got):\n%s", diff)
	}
	assertIntact(t, dir, 5)
	if _, err := l.Archive(ctx, now); err != nil {
		t.Fatal(err)
	}
	members, err := readMembers(filepath.Join(dir, ArchiveDir, "audit-2026-03-02.log.gz"))
	if err != nil || len(members) != 2 {
		t.Fatalf("members = %d, %v; want 2", len(members), err)
	}
	assertIntact(t, dir, 5)
	if diff := cmp.Diff([]int64{1, 2, 3, 4, 5}, seqs(t, l)); diff != "" {
		t.Errorf("seqs (-want +got):\n%s", diff)
	}
}

// A crash between the rename of the archive and the removal of the day file
// leaves both; the next archiving removes the day file only.
func TestArchiveAfterCrash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := dailyTrail(t, 3)
	day0 := filepath.Join(dir, "audit-2026-03-01.log")
	saved, err := os.ReadFile(day0)
	if err != nil {
		t.Fatal(err)
	}
	now := retDay.AddDate(0, 0, 2)
	l := mustOpen(t, dir, WithRetention(1), fixedClock(now))
	if _, err := l.Archive(ctx, now); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(day0, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	// The day file beside its own archived copy is an interrupted archive,
	// not tampering: the trail is intact and read once.
	assertIntact(t, dir, 6)
	if got, err := l.Read(ctx, Query{}); err != nil || len(got) != 6 {
		t.Errorf("Read = %d entries, %v; want 6, the copy not read twice", len(got), err)
	}
	// A day file that differs from the archive's last member is not such a
	// copy: it is reported.
	if err := os.WriteFile(day0, append(saved[:len(saved)-2:len(saved)-2], "X\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if rep := mustVerify(t, dir); rep.Intact() {
		t.Error("a day file differing from its archive is reported intact")
	}
	if err := os.WriteFile(day0, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Archive(ctx, now); err != nil {
		t.Fatal(err)
	}
	members, err := readMembers(filepath.Join(dir, ArchiveDir, "audit-2026-03-01.log.gz"))
	if err != nil || len(members) != 1 {
		t.Errorf("members = %d, %v; want 1", len(members), err)
	}
	assertIntact(t, dir, 6)
}

func TestVerifyFindsEditInArchive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := dailyTrail(t, 3)
	now := retDay.AddDate(0, 0, 2)
	if _, err := mustOpen(t, dir, WithRetention(1)).Archive(ctx, now); err != nil {
		t.Fatal(err)
	}
	arch := filepath.Join(dir, ArchiveDir, "audit-2026-03-01.log.gz")
	data, err := readArchive(arch)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(bytes.Replace(data, []byte("day 0 a"), []byte("day 0 X"), 1))
	zw.Close()
	if err := os.WriteFile(arch, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := mustVerify(t, dir)
	if rep.Intact() || rep.Break.Kind != BreakEdited || rep.Break.File != arch || rep.Break.Line != 1 {
		t.Errorf("break = %v, want edited at %s:1", rep.Break, arch)
	}
}

// A damaged archive is a broken trail (exit 1 from hook audit verify), not
// a check that could not run: archives are written whole, so damage is not
// a crash.
func TestVerifyFindsDamagedArchive(t *testing.T) {
	t.Parallel()
	for name, damage := range map[string]func([]byte) []byte{
		"truncated": func(b []byte) []byte { return b[:len(b)/2] },
		"emptied":   func([]byte) []byte { return nil },
		"garbage":   func([]byte) []byte { return []byte("not gzip at all\n") },
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir := dailyTrail(t, 3)
			if _, err := mustOpen(t, dir, WithRetention(1)).Archive(ctx, retDay.AddDate(0, 0, 2)); err != nil {
				t.Fatal(err)
			}
			arch := filepath.Join(dir, ArchiveDir, "audit-2026-03-01.log.gz")
			data, err := os.ReadFile(arch)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(arch, damage(data), 0o644); err != nil {
				t.Fatal(err)
			}
			rep := mustVerify(t, dir)
			if rep.Intact() || rep.Break.Kind != BreakMalformed || rep.Break.File != arch {
				t.Errorf("break = %v, want malformed at %s", rep.Break, arch)
			}
		})
	}
}
