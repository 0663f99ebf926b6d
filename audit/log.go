package audit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
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

// WithRetention makes the Log compress day files older than days days into
// the archive directory ([ArchiveDir]) as it appends; see [Log.Archive]. 0,
// the default, or less keeps every day file as it is.
func WithRetention(days int) Option {
	return func(l *Log) { l.retention = max(days, 0) }
}

// Log appends entries to the day files of one directory. It is safe for
// concurrent use; other processes may append to the same directory at the
// same time. Create it with [Open].
type Log struct {
	dir       string
	root      string // see WithRoot; "" for none
	now       func() time.Time
	logger    *slog.Logger
	fsync     bool
	retention int
	// witnessDir is where the chain's head is witnessed; "" keeps none.
	witnessDir string
	// attestFile records the lines this Log wrote; "" keeps none.
	attestFile  string
	attestStart bool // whether this Log creates attestFile
	// anchors are Verify's (WithAnchors); a Log ignores them.
	anchors []Anchor
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
// oldest first; archives are not among them. A directory that does not
// exist yet has no files.
func (l *Log) Files() ([]string, error) {
	days, err := listDays(l.dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, d := range days {
		files = append(files, d.path)
	}
	return files, nil
}

// Append writes entries, one line each, under one acquisition of the
// directory lock; see the package documentation for the exact steps. An
// entry with a zero Time is stamped with the Log's clock once the lock is
// held. Appending no entries does nothing.
//
// Errors: ctx's error if it is done before the lock is held (wrapped, naming
// the lock file); [ErrMissingEvent], [ErrReservedField], [ErrSchema] or
// [ErrEntryTooLarge] (wrapped, naming the entry's index) with nothing
// written; [ErrMalformedLine] when the last line of the trail does not
// parse, with nothing written; or the I/O error, naming the file and how
// many lines were written.
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
	bodies, err := l.prepare(entries)
	if err != nil {
		return err
	}
	dir, unlock, err := l.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return l.appendLocked(dir, entries, bodies)
}

// AppendNew is Append for entries that must be recorded once within a
// window, such as an escalation repeated by every retry: under the trail's
// lock it reads the entries that match q (as Read does) and appends each
// entry that dup does not report as already recorded, dup seeing the
// entries found and those of this call kept before it. It returns how many
// entries it appended. Because every appender in every process takes the
// same lock, two calls cannot both find nothing and both append.
//
// Entries with a zero Time are stamped before dup sees them. Errors are
// those of Append and of Read; on an error nothing is appended.
func (l *Log) AppendNew(ctx context.Context, q Query, dup func(recorded []Entry, e Entry) bool, entries ...Entry) (int, error) {
	if l == nil || l.sem == nil {
		return 0, errors.New("audit: append: Log not created by Open")
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("audit: lock %s: %w", filepath.Join(l.dir, lockName), err)
	}
	if len(entries) == 0 {
		return 0, nil
	}
	bodies, err := l.prepare(entries)
	if err != nil {
		return 0, err
	}
	dir, unlock, err := l.lock(ctx)
	if err != nil {
		return 0, err
	}
	defer unlock()
	recorded, err := l.Read(ctx, q)
	if err != nil {
		return 0, err
	}
	var keep []Entry
	var keepBodies [][]byte
	for i, e := range entries {
		if e.Time.IsZero() {
			e.Time = l.now()
		}
		if dup(recorded, e) {
			continue
		}
		recorded = append(recorded, e)
		keep, keepBodies = append(keep, e), append(keepBodies, bodies[i])
	}
	if len(keep) == 0 {
		return 0, nil
	}
	return len(keep), l.appendLocked(dir, keep, keepBodies)
}

// prepare checks, encodes and validates entries before locking, so that a
// bad call creates nothing and the lock is held only to chain and write.
func (l *Log) prepare(entries []Entry) ([][]byte, error) {
	bodies := make([][]byte, len(entries))
	for i, e := range entries {
		if err := e.check(); err != nil {
			return nil, fmt.Errorf("audit: append to %s: entry %d: %w", l.dir, i, err)
		}
		body, err := encodeFields(e.Fields)
		if err != nil {
			return nil, fmt.Errorf("audit: append to %s: entry %d: %w", l.dir, i, err)
		}
		ts := placeholderTime
		if !e.Time.IsZero() {
			ts = e.Time.UTC().Format(time.RFC3339Nano)
		}
		if err := validate(e, ts, body); err != nil {
			return nil, fmt.Errorf("audit: append to %s: entry %d: %w", l.dir, i, err)
		}
		bodies[i] = body
	}
	return bodies, nil
}

// appendLocked chains and writes entries, whose bodies prepare made, with
// the lock held, into dir, the log directory the lock opened.
func (l *Log) appendLocked(dir *os.Root, entries []Entry, bodies [][]byte) (err error) {
	// Stamp under the lock, so that stamps follow file order; on a copy, so
	// that the caller's entries stay as they were.
	entries = slices.Clone(entries)
	var last time.Time
	for i := range entries {
		if entries[i].Time.IsZero() {
			entries[i].Time = l.now()
		}
		if d := utcDate(entries[i].Time); d.After(last) {
			last = d
		}
	}
	rec, _, recLen, _ := readHeadIn(dir) // a bad record only means the slow way
	head, fast := recordedHead(dir, rec, last)
	if !fast {
		if head, err = findHead(l.dir); err != nil {
			return fmt.Errorf("audit: append to %s: %w", l.dir, err)
		}
		// Once a day, or after a crash: bounded, and never a reason to
		// lose the entries; a failure is logged and the next new day tries
		// again.
		if l.retention > 0 {
			if _, err := l.archive(dir, head.days, l.now(), maxArchivePerAppend); err != nil {
				l.logger.Warn("audit: retention", "dir", l.dir, "err", err)
			}
		}
	}
	lines := make([]line, len(entries))
	day, seq, prev := head.day, head.seq, head.hash
	for i, e := range entries {
		// A line's file is never older than the line before it, so that the
		// chain runs through the files in date order.
		if d := utcDate(e.Time); d.After(day) {
			day = d
		}
		seq++
		name := FileName(day)
		path := filepath.Join(l.dir, name)
		data := encodeLine(nil, e.Time, e.Event, seq, prev, bodies[i])
		if len(data) > MaxLineSize {
			return fmt.Errorf("audit: append to %s: entry %d: %w (%d bytes, max %d)",
				path, i, ErrEntryTooLarge, len(data), MaxLineSize)
		}
		prev = lineHash(data)
		lines[i] = line{name: name, path: path, data: data}
	}
	size, err := l.write(dir, lines)
	if err != nil {
		return err
	}
	// Whether des attested lines of this trail before: then it had a
	// witness, and a missing one is not started again (advanceWitness).
	attestedBefore, _ := lastAttestation(l.attestFile)
	l.attest(head.seq+1, lines)
	rec = headRecord{Seq: seq, SHA256: prev, File: FileName(day), Size: size}
	if err := writeHead(dir, rec, recLen, l.fsync); err != nil {
		return fmt.Errorf("audit: append to %s: %d lines written, but the head record %s was not updated: %w",
			l.dir, len(lines), HeadFile, err)
	}
	if l.witnessDir != "" {
		moved, err := l.advanceWitness(head, rec, attestedBefore)
		switch {
		case errors.Is(err, errBadWitness):
			l.logger.Warn("audit: witness unusable, left as it is for Verify to report", "dir", l.dir, "err", err)
		case err != nil:
			return fmt.Errorf("audit: append to %s: %d lines written, but the witness %s was not updated: %w",
				l.dir, len(lines), WitnessPath(l.witnessDir, l.dir), err)
		case !moved:
			l.logger.Warn("audit: the trail does not continue its witness (deleted, cut or rewritten?); the witness stays where it was", "dir", l.dir, "witness", WitnessPath(l.witnessDir, l.dir))
		}
	}
	return nil
}

// placeholderTime stands for a timestamp Append sets under the lock when an
// entry is checked against its schema before.
const placeholderTime = "2006-01-02T15:04:05Z"

// utcDate is the start of t's UTC day.
func utcDate(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// line is one encoded entry and the day file it goes to: name in the log
// directory, path for messages.
type line struct {
	name, path string
	data       []byte
}

// write appends each line with a single write call, opening each day file
// once per batch, then syncs (if asked) and closes the files. It returns the
// size of the last line's file after the write.
func (l *Log) write(dir *os.Root, lines []line) (size int64, err error) {
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
			f, err = openRegularIn(dir, ln.name, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return 0, fmt.Errorf("audit: append to %s: %d of %d lines written: %w", ln.path, n, len(lines), err)
			}
			files[ln.path] = f
			opened = append(opened, f)
		}
		if _, err = f.Write(ln.data); err != nil {
			return 0, fmt.Errorf("audit: append to %s: %d of %d lines written: %w", ln.path, n, len(lines), err)
		}
	}
	// With O_APPEND the offset is the end of the file after each write.
	if size, err = files[lines[len(lines)-1].path].Seek(0, io.SeekCurrent); err != nil {
		return 0, fmt.Errorf("audit: append to %s: %w", lines[len(lines)-1].path, err)
	}
	return size, nil
}
