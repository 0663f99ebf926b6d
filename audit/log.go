package audit

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Option configures a [Log].
type Option func(*Log)

// WithClock sets the clock used to stamp entries whose Time is zero; the
// stamped time also picks the day file. The default is [time.Now]; nil keeps
// the default.
func WithClock(now func() time.Time) Option {
	return func(l *Log) {
		if now != nil {
			l.now = now
		}
	}
}

// WithLogger sets the logger for diagnostics (lock waits at debug level,
// failures to release the lock at warn level). The default discards
// everything; nil keeps the default.
func WithLogger(lg *slog.Logger) Option {
	return func(l *Log) {
		if lg != nil {
			l.logger = lg
		}
	}
}

// WithFsync makes each Append fsync every day file it wrote to before
// returning. The default is false.
func WithFsync(on bool) Option {
	return func(l *Log) { l.fsync = on }
}

// Log appends entries to the day files of one directory. It is safe for
// concurrent use; other processes may append to the same directory at the
// same time. Create it with [Open].
type Log struct {
	dir    string
	now    func() time.Time
	logger *slog.Logger
	fsync  bool
	// sem serialises this Log's appends so that its own goroutines queue on
	// a channel (which honours ctx) instead of polling the file lock.
	sem chan struct{}
}

// Open returns a Log writing to dir. It creates nothing: the directory and
// files appear on the first Append. dir must not be empty.
func Open(dir string, opts ...Option) (*Log, error) {
	if dir == "" {
		return nil, errors.New("audit: open: empty directory name")
	}
	l := &Log{
		dir:    filepath.Clean(dir),
		now:    time.Now,
		logger: slog.New(slog.DiscardHandler),
		sem:    make(chan struct{}, 1),
	}
	for _, opt := range opts {
		if opt != nil {
			opt(l)
		}
	}
	return l, nil
}

// Dir returns the directory of the log, cleaned by [filepath.Clean].
func (l *Log) Dir() string { return l.dir }

// FileName returns the name of the day file for the UTC date of day:
// "audit-YYYY-MM-DD.log".
func FileName(day time.Time) string {
	return "audit-" + day.UTC().Format(time.DateOnly) + ".log"
}

// Files returns the full paths of the day files present in the directory,
// oldest first. A directory that does not exist yet has no files.
func (l *Log) Files() ([]string, error) {
	des, err := os.ReadDir(l.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit: list %s: %w", l.dir, err)
	}
	var files []string
	for _, de := range des { // sorted by name, and the names sort by date
		if de.Type().IsRegular() && isDayFile(de.Name()) {
			files = append(files, filepath.Join(l.dir, de.Name()))
		}
	}
	return files, nil
}

func isDayFile(name string) bool {
	date, ok := strings.CutPrefix(name, "audit-")
	if !ok {
		return false
	}
	date, ok = strings.CutSuffix(date, ".log")
	if !ok {
		return false
	}
	t, err := time.Parse(time.DateOnly, date)
	return err == nil && t.Format(time.DateOnly) == date
}

// Append writes entries, one line each, under one acquisition of the
// directory lock; see the package documentation for the exact steps. An
// entry with a zero Time is stamped with the Log's clock once the lock is
// held. Appending no entries does nothing.
//
// Errors: ctx's error if it is done before the lock is held (wrapped, naming
// the lock file); [ErrMissingEvent], [ErrReservedField] or [ErrEntryTooLarge]
// (wrapped, naming the entry's index) with nothing written; or the I/O error,
// naming the file and how many lines were written.
func (l *Log) Append(ctx context.Context, entries ...Entry) error {
	if l == nil || l.sem == nil {
		return errors.New("audit: append: Log not created by Open")
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("audit: lock %s: %w", filepath.Join(l.dir, lockName), err)
	}
	if len(entries) == 0 {
		return nil
	}
	// Check before locking so that a bad call creates nothing.
	for i, e := range entries {
		if err := e.check(); err != nil {
			return fmt.Errorf("audit: append to %s: entry %d: %w", l.dir, i, err)
		}
	}
	unlock, err := l.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	// Encode under the lock: stamps then follow file order, and a hash chain
	// will need the previous line, which only the lock holder may read.
	lines := make([]line, len(entries))
	for i, e := range entries {
		if e.Time.IsZero() {
			e.Time = l.now()
		}
		path := filepath.Join(l.dir, FileName(e.Time))
		data, err := e.encode()
		if err != nil {
			return fmt.Errorf("audit: append to %s: entry %d: %w", path, i, err)
		}
		data = append(data, '\n')
		if len(data) > MaxLineSize {
			return fmt.Errorf("audit: append to %s: entry %d: %w (%d bytes, max %d)",
				path, i, ErrEntryTooLarge, len(data), MaxLineSize)
		}
		lines[i] = line{path: path, data: data}
	}
	return l.write(lines)
}

// line is one encoded entry and the day file it goes to.
type line struct {
	path string
	data []byte
}

// write appends each line with a single write call, opening each day file
// once per batch, then syncs (if asked) and closes the files.
func (l *Log) write(lines []line) (err error) {
	var opened []*os.File
	defer func() {
		for _, f := range opened {
			if err == nil && l.fsync {
				if serr := f.Sync(); serr != nil {
					err = fmt.Errorf("audit: append to %s: sync: %w", f.Name(), serr)
				}
			}
			if cerr := f.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("audit: append to %s: %w", f.Name(), cerr)
			}
		}
	}()
	files := make(map[string]*os.File)
	for n, ln := range lines {
		f := files[ln.path]
		if f == nil {
			f, err = os.OpenFile(ln.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return fmt.Errorf("audit: append to %s: %d of %d lines written: %w", ln.path, n, len(lines), err)
			}
			files[ln.path] = f
			opened = append(opened, f)
		}
		if _, err = f.Write(ln.data); err != nil {
			return fmt.Errorf("audit: append to %s: %d of %d lines written: %w", ln.path, n, len(lines), err)
		}
	}
	return nil
}
