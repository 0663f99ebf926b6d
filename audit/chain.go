package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/deterministic-exec/des/internal/fileio"
)

// HeadFile is the file, inside the log directory, where Append records the
// seq and hash of the last line it wrote: `{"seq":N,"sha256":"..."}`.
// Verify compares the end of the trail with it, so that lines or day files
// cut from the end are found.
const HeadFile = ".head"

// zeroHash is the "prev" of the first line of a trail.
var zeroHash = strings.Repeat("0", 64)

// lineHash is the hex SHA-256 of a line, its newline included: the next
// line's "prev".
func lineHash(line []byte) string {
	sum := sha256.Sum256(line)
	return hex.EncodeToString(sum[:])
}

// chainHead is where the next line of the trail goes.
type chainHead struct {
	seq  int64     // seq of the last line; 0 when the trail is empty or ends with unchained lines
	hash string    // lineHash of the last line; zeroHash when the trail is empty
	day  time.Time // date of the newest day file or archive; zero when there is none
	days []source  // the day files, oldest first
}

// findHead finds the last line of the trail: the last line of the newest
// non-empty day file, read backwards from its end, else of the newest
// archive. Only the holder of the directory lock may call it.
func findHead(dir string) (chainHead, error) {
	h := chainHead{hash: zeroHash}
	days, err := listDays(dir)
	if err != nil {
		return h, err
	}
	h.days = days
	if len(days) > 0 {
		h.day = days[len(days)-1].day
	}
	for i := len(days) - 1; i >= 0; i-- {
		line, err := tailLine(days[i].path)
		if err != nil {
			return h, err
		}
		if line != nil {
			return h.at(days[i].path, line)
		}
	}
	archives, err := listArchives(dir)
	if err != nil {
		return h, err
	}
	if h.day.IsZero() && len(archives) > 0 {
		h.day = archives[len(archives)-1].day
	}
	for i := len(archives) - 1; i >= 0; i-- {
		data, err := archives[i].read(-1)
		if err != nil {
			return h, err
		}
		if len(data) == 0 {
			continue
		}
		if data[len(data)-1] != '\n' {
			return h, fmt.Errorf("audit: %s: last line: %w: no trailing newline (torn write?)", archives[i].path, ErrMalformedLine)
		}
		start := bytes.LastIndexByte(data[:len(data)-1], '\n') + 1
		return h.at(archives[i].path, data[start:])
	}
	return h, nil
}

// at sets h to follow line, the last line of the trail, found in path.
func (h chainHead) at(path string, line []byte) (chainHead, error) {
	var e Entry
	if err := e.decode(line[:len(line)-1]); err != nil {
		// The chain cannot go on from a line whose place in it is unknown;
		// appending behind it would bury the damage under new lines.
		return h, fmt.Errorf("audit: %s: last line: %w: %w", path, ErrMalformedLine, err)
	}
	h.seq, h.hash = e.Seq, lineHash(line)
	return h, nil
}

// tailLine returns the last line of the file at path, newline included,
// reading backwards from the end in growing chunks; nil when the file is
// empty. A last line without its newline is an error wrapping
// ErrMalformedLine.
func tailLine(path string) ([]byte, error) {
	f, fi, err := fileio.OpenRegular(path) // never waits on a FIFO swapped in
	if err != nil {
		return nil, fmt.Errorf("audit: read %s: %w", path, err)
	}
	defer f.Close()
	size := fi.Size()
	if size == 0 {
		return nil, nil
	}
	for chunk := int64(4096); ; chunk *= 4 {
		n := min(chunk, size)
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, size-n); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("audit: read %s: %w", path, err)
		}
		if buf[n-1] != '\n' {
			return nil, fmt.Errorf("audit: %s: last line: %w: no trailing newline (torn write?)", path, ErrMalformedLine)
		}
		if i := bytes.LastIndexByte(buf[:n-1], '\n'); i >= 0 {
			return buf[i+1:], nil
		}
		if n == size {
			return buf, nil
		}
	}
}

// headRecord is the content of HeadFile: the seq and hash of the last line
// written, and the day file it went to with that file's size after the
// write. The file and size let the next Append skip the search for the head
// while the file is exactly as the record left it.
type headRecord struct {
	Seq    int64  `json:"seq"`
	SHA256 string `json:"sha256"`
	File   string `json:"file"`
	Size   int64  `json:"size"`
}

// writeHead records the last line written in dir. The record is rewritten
// in place, and a reader takes its first line, so the file is cut only when
// the record is shorter than the oldLen bytes it replaces (-1: unknown).
// Something else at its name (a link, a hard link, a FIFO) is removed and
// the record written anew: the record only spares findHead's reading.
func writeHead(dir *os.Root, rec headRecord, oldLen int, sync bool) error {
	data := fmt.Appendf(nil, `{"seq":%d,"sha256":"%s","file":"%s","size":%d}`+"\n", rec.Seq, rec.SHA256, rec.File, rec.Size)
	f, err := openRegularIn(dir, HeadFile, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		if fi, lerr := dir.Lstat(HeadFile); lerr != nil || (fi.Mode().IsRegular() && fileio.LinkCount(fi) < 2) || dir.Remove(HeadFile) != nil {
			return err
		}
		if f, err = openRegularIn(dir, HeadFile, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err != nil {
			return err
		}
		oldLen = -1
	}
	_, err = f.WriteAt(data, 0)
	if err == nil && (oldLen < 0 || len(data) < oldLen) {
		err = f.Truncate(int64(len(data)))
	}
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readHead reads HeadFile in the directory at dir, as readHeadIn.
func readHead(dir string) (rec headRecord, ok bool, size int, err error) {
	f, _, err := fileio.OpenRegular(filepath.Join(dir, HeadFile))
	return readHeadFrom(f, err)
}

// readHeadIn reads HeadFile in dir; ok is false when there is none, and
// size is the file's length (-1 when unknown).
func readHeadIn(dir *os.Root) (rec headRecord, ok bool, size int, err error) {
	f, err := openRegularIn(dir, HeadFile, os.O_RDONLY, 0)
	return readHeadFrom(f, err)
}

// readHeadFrom reads the record from f, opened with error err.
func readHeadFrom(f *os.File, err error) (rec headRecord, ok bool, size int, _ error) {
	if errors.Is(err, fs.ErrNotExist) {
		return rec, false, 0, nil
	}
	if err != nil {
		return rec, false, -1, err
	}
	defer f.Close()
	// One read: a record is under 200 bytes. Not os.ReadFile, whose fstat
	// costs as much again.
	buf := make([]byte, 512)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return rec, false, -1, err
	}
	data := buf[:n]
	first, _, _ := bytes.Cut(data, []byte{'\n'})
	dec := json.NewDecoder(bytes.NewReader(first))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return rec, true, len(data), fmt.Errorf("%s does not parse: %w", HeadFile, err)
	}
	if rec.Seq < 1 || len(rec.SHA256) != 64 || strings.Trim(rec.SHA256, "0123456789abcdef") != "" {
		return rec, true, len(data), fmt.Errorf("%s holds %q, not a seq and a SHA-256", HeadFile, first)
	}
	return rec, true, len(data), nil
}

// recordedHead is the head of the chain as HeadFile records it, when the
// file it names is still exactly as the record left it and holds no date
// before last, the newest date of the lines to write (they all go there),
// and no day file for the day after it exists. Anything else (no record, a
// file that changed, a new day) is left to findHead.
func recordedHead(dir *os.Root, rec headRecord, last time.Time) (chainHead, bool) {
	day, ok := parseDay(rec.File, "")
	if !ok || last.After(day) {
		return chainHead{}, false
	}
	// A crash between a line and its head record can leave the line in a
	// newer day file than the record names; an entry dated earlier must
	// not then be chained behind the record. The day after the record's is
	// where such a line is (the clock's day when it was written).
	if _, err := dir.Lstat(FileName(day.AddDate(0, 0, 1))); err == nil {
		return chainHead{}, false
	}
	fi, err := dir.Lstat(rec.File)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != rec.Size {
		return chainHead{}, false
	}
	return chainHead{seq: rec.Seq, hash: rec.SHA256, day: day}, true
}
