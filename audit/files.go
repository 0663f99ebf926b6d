package audit

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/deterministic-exec/des/internal/fileio"
)

// ArchiveDir is the directory, inside the log directory, that holds the
// compressed day files: "archive/audit-YYYY-MM-DD.log.gz".
const ArchiveDir = "archive"

// ArchiveName returns the name of the archive of the day file of day's UTC
// date: "audit-YYYY-MM-DD.log.gz".
func ArchiveName(day time.Time) string { return FileName(day) + ".gz" }

// source is one file of the trail: a day file or an archive.
type source struct {
	day     time.Time // the UTC date in the name
	path    string
	archive bool
}

// parseDay returns the date of a day file's name ("audit-YYYY-MM-DD.log"
// plus suffix), rejecting names that are not exactly that.
func parseDay(name, suffix string) (time.Time, bool) {
	date, ok := strings.CutPrefix(name, "audit-")
	if !ok {
		return time.Time{}, false
	}
	if date, ok = strings.CutSuffix(date, ".log"+suffix); !ok {
		return time.Time{}, false
	}
	t, err := time.Parse(time.DateOnly, date)
	if err != nil || t.Format(time.DateOnly) != date {
		return time.Time{}, false
	}
	return t, true
}

func isDayFile(name string) bool {
	_, ok := parseDay(name, "")
	return ok
}

// listDir returns the regular files of dir whose names parse as days with
// suffix, oldest first. A directory that does not exist has none.
func listDir(dir, suffix string, archive bool) ([]source, error) {
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit: list %s: %w", dir, err)
	}
	var out []source
	for _, de := range des { // sorted by name, and the names sort by date
		if day, ok := parseDay(de.Name(), suffix); ok && de.Type().IsRegular() {
			out = append(out, source{day: day, path: filepath.Join(dir, de.Name()), archive: archive})
		}
	}
	return out, nil
}

func listDays(dir string) ([]source, error) { return listDir(dir, "", false) }

func listArchives(dir string) ([]source, error) {
	return listDir(filepath.Join(dir, ArchiveDir), ".gz", true)
}

// listTrail returns the archives and day files of dir in trail order: by
// date, and an archive before the day file of the same date (a day file is
// archived only once it is complete, and lines written later for that date
// go to a new day file).
func listTrail(dir string) ([]source, error) {
	days, err := listDays(dir)
	if err != nil {
		return nil, err
	}
	archives, err := listArchives(dir)
	if err != nil {
		return nil, err
	}
	archived := map[time.Time]string{}
	for _, a := range archives {
		archived[a.day] = a.path
	}
	// A crash between an archive's rename and its day file's removal
	// leaves the day file beside its own copy, the archive's last member:
	// that is one day, not the same lines twice (Archive removes it later).
	days = slices.DeleteFunc(days, func(d source) bool {
		arch, ok := archived[d.day]
		return ok && archivedAlready(arch, d.path)
	})
	all := append(archives, days...)
	slices.SortStableFunc(all, func(a, b source) int { return a.day.Compare(b.day) })
	return all, nil
}

// archivedAlready reports whether the day file at path is the last member
// of the archive arch.
func archivedAlready(arch, path string) bool {
	members, err := readMembers(arch)
	if err != nil || len(members) == 0 {
		return false
	}
	data, err := fileio.ReadBounded(path, maxArchiveSize) // never waits on a FIFO swapped in
	return err == nil && bytes.Equal(members[len(members)-1], data)
}

// read returns the content of a trail file: a day file as it is (at most
// limit bytes when limit >= 0), an archive decompressed. A day file archived
// since it was listed is read from its archive.
func (s source) read(limit int64) ([]byte, error) {
	if s.archive {
		return readArchive(s.path)
	}
	f, _, err := fileio.OpenRegular(s.path) // never waits on a FIFO swapped in
	if errors.Is(err, fs.ErrNotExist) {
		arch := filepath.Join(filepath.Dir(s.path), ArchiveDir, filepath.Base(s.path)+".gz")
		members, aerr := readMembers(arch)
		if aerr != nil || len(members) == 0 {
			return nil, fmt.Errorf("audit: read %s: %w", s.path, err)
		}
		data := members[len(members)-1] // the day file archived last
		if limit >= 0 && int64(len(data)) > limit {
			data = data[:limit]
		}
		return data, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit: read %s: %w", s.path, err)
	}
	defer f.Close()
	var r io.Reader = f
	if limit >= 0 {
		r = io.LimitReader(f, limit)
	}
	var buf bytes.Buffer
	if fi, err := f.Stat(); err == nil {
		buf.Grow(int(min(fi.Size(), 1<<30)) + 1)
	}
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, fmt.Errorf("audit: read %s: %w", s.path, err)
	}
	return buf.Bytes(), nil
}

// readArchive decompresses a whole archive, every gzip member in turn.
func readArchive(path string) ([]byte, error) {
	members, err := readMembers(path)
	if err != nil {
		return nil, err
	}
	return bytes.Join(members, nil), nil
}

// readMembers decompresses each gzip member of an archive: one per day file
// archived under its name.
func readMembers(path string) ([][]byte, error) {
	f, _, err := fileio.OpenRegular(path)
	if err != nil {
		return nil, fmt.Errorf("audit: read %s: %w", path, err)
	}
	defer f.Close()
	members, err := membersOf(f)
	if err != nil {
		return nil, fmt.Errorf("audit: read %s: %w", path, err)
	}
	return members, nil
}

// readMembersOf is readMembers for an archive's content.
func readMembersOf(data []byte) ([][]byte, error) { return membersOf(bytes.NewReader(data)) }

func membersOf(r io.Reader) ([][]byte, error) {
	br := bufio.NewReader(r)
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errArchiveCorrupt, err)
	}
	var members [][]byte
	for {
		zr.Multistream(false)
		data, err := io.ReadAll(zr)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errArchiveCorrupt, err)
		}
		members = append(members, data)
		if err := zr.Reset(br); errors.Is(err, io.EOF) {
			return members, nil
		} else if err != nil {
			return nil, fmt.Errorf("%w: %w", errArchiveCorrupt, err)
		}
	}
}

// errArchiveCorrupt marks an archive that opens but does not decompress.
// Archives are written whole and renamed into place, so a damaged one is
// a broken trail, not a crash.
var errArchiveCorrupt = errors.New("the archive does not decompress")
