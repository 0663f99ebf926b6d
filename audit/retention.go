package audit

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/deterministic-exec/des/internal/fileio"
)

// maxArchivePerAppend bounds the day files one Append compresses, so that a
// long backlog (retention just switched on) does not hold the lock for long;
// later appends take the rest.
const maxArchivePerAppend = 4

// Archive compresses every day file dated more than the retention's days
// before now's UTC date (with [WithRetention](90) and now on 2026-03-14,
// those of 2025-12-13 and before) into "archive/audit-YYYY-MM-DD.log.gz",
// under the directory lock. Each file is archived atomically: the archive
// is written to a temporary file, synced and renamed into place before the
// day file is removed, so that a crash leaves the day file, its archive or
// both, never neither. Lines are never deleted: an archive that exists
// already gets the day file as one more gzip member. Append does the same,
// for at most 4 files per call, so Archive is needed only to catch up at
// once. It returns the archives written, and does nothing without a
// retention.
func (l *Log) Archive(ctx context.Context, now time.Time) ([]string, error) {
	if l.retention <= 0 {
		return nil, nil
	}
	dir, unlock, err := l.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	days, err := listDays(l.dir)
	if err != nil {
		return nil, err
	}
	return l.archive(dir, days, now, -1)
}

// archive compresses up to limit (all when negative) of days, the day files
// oldest first, that are past the retention at now. dir is the log
// directory the lock opened: the archives are written, and the day files
// removed, inside it.
func (l *Log) archive(dir *os.Root, days []source, now time.Time, limit int) ([]string, error) {
	cutoff := utcDate(now).AddDate(0, 0, -l.retention)
	var done []string
	for _, d := range days {
		if !d.day.Before(cutoff) || limit == 0 {
			break
		}
		path, err := archiveDay(dir, d)
		if err != nil {
			return done, err
		}
		done = append(done, path)
		limit--
	}
	return done, nil
}

// maxArchiveSize bounds an archive read to add a member: a day file's lines
// are at most MaxLineSize each, and a larger archive is not DES's.
const maxArchiveSize = 1 << 30

// archiveDay moves one day file into its archive; see Log.Archive.
func archiveDay(dir *os.Root, d source) (string, error) {
	day := filepath.Base(d.path)
	name := filepath.Join(ArchiveDir, day+".gz")
	arch := filepath.Join(dir.Name(), name)
	fail := func(err error) (string, error) {
		return "", fmt.Errorf("audit: archive %s: %w", d.path, err)
	}
	data, err := fileio.ReadBoundedIn(dir, day, maxArchiveSize)
	if err != nil {
		return fail(err)
	}
	if err := dir.Mkdir(ArchiveDir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fail(err)
	}
	old, err := fileio.ReadBoundedIn(dir, name, maxArchiveSize)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		old = nil
	case err != nil:
		return fail(err)
	default:
		members, err := readMembersOf(old)
		if err != nil {
			// Adding a member to what does not decompress would bury
			// the day's lines in it: it stays for Verify to report.
			return fail(fmt.Errorf("%s: %w", arch, err))
		}
		// A crash after the rename and before the removal leaves the day
		// file as the archive's last member already: remove it only.
		if len(members) > 0 && bytes.Equal(members[len(members)-1], data) {
			return arch, removeDay(dir, day, d.path)
		}
	}
	var buf bytes.Buffer
	buf.Write(old)
	zw := gzip.NewWriter(&buf)
	zw.Name = day
	if _, err := zw.Write(data); err != nil {
		return fail(err)
	}
	if err := zw.Close(); err != nil {
		return fail(err)
	}
	adir, err := dir.OpenRoot(ArchiveDir)
	if err != nil {
		return fail(err)
	}
	defer adir.Close()
	if err := fileio.WriteAtomicAt(adir, day+".gz", buf.Bytes()); err != nil {
		return fail(err)
	}
	return arch, removeDay(dir, day, d.path)
}

func removeDay(dir *os.Root, name, path string) error {
	if err := dir.Remove(name); err != nil {
		return fmt.Errorf("audit: archive %s: archived, but not removed: %w", path, err)
	}
	if err := fileio.SyncDir(dir.Name()); err != nil {
		return fmt.Errorf("audit: archive %s: sync directory: %w", path, err)
	}
	return nil
}
