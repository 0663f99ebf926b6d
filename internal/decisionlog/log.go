package decisionlog

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/deterministic-exec/des/internal/fileio"
)

// MaxEventBytes bounds one event as JSON when it is pushed, OPA's default
// upload_size_limit_bytes: an event over it loses its input, then its
// result (see encode), so that every pushed event fits one upload.
const MaxEventBytes = 32 << 10

// MaxRecordBytes bounds one event as JSON in the files kept here. It is
// larger than what a push sends: a decision is replayed from its input, and
// a finished subagent's input (its step file, its run) passes 32 KiB.
const MaxRecordBytes = 1 << 20

// MinMaxBytes is the smallest bound of the kept files Open accepts.
const MinMaxBytes = 2 * MaxEventBytes

// Log appends events to a directory of JSON-lines files: one file a day,
// named by the event's UTC date (2026-01-02.jsonl), split into numbered
// parts (2026-01-02.1.jsonl, ...) of a quarter of the bound at most, so the
// oldest can go without losing the newest. It is safe for concurrent use by
// any number of processes: each event is one write(2) of one line to a file
// opened with O_APPEND, so lines never interleave, and nothing else is ever
// rewritten in place.
type Log struct {
	dir      string
	root     string // with rel, see OpenIn; "" for Open
	rel      string
	mask     []string
	maxBytes int64
	maxAge   time.Duration
	part     int64

	mu  sync.Mutex
	cur segment // the file this Log appended to last; day "" before the first
}

// Options says what a Log keeps.
type Options struct {
	Mask     []string      // JSON pointers erased from every event (see Mask)
	MaxBytes int64         // bound of the kept files, at least MinMaxBytes
	MaxAge   time.Duration // the days kept, the newest file's included (whole days); 0 keeps all
}

// Open returns the log kept in dir (created on the first event), erasing
// the mask's JSON pointers from every event and keeping at most MaxBytes of
// files: when a new file would pass it, the oldest go first, and so do the
// files of days before the MaxAge that ends with the new file's day. Processes racing to
// start a file can pass the bound by an event or two, never more.
func Open(dir string, o Options) *Log {
	maxBytes := max(o.MaxBytes, MinMaxBytes)
	return &Log{dir: dir, mask: slices.Clone(o.Mask), maxBytes: maxBytes, maxAge: o.MaxAge, part: maxBytes / 4}
}

// OpenIn is Open for the directory rel (slash-separated) below root, the
// project: the directory is opened from root without following a link at any
// of rel's components, so that a link a sandboxed command put at ".des" is
// refused like one at the log directory itself.
func OpenIn(root, rel string, o Options) *Log {
	l := Open(filepath.Join(root, filepath.FromSlash(rel)), o)
	l.root, l.rel = root, rel
	return l
}

// Append masks ev, bounds it (MaxEventBytes) and appends it. ev's input and
// result must be the event's own (see Document): the mask edits them.
func (l *Log) Append(ev Event) error {
	// The directory or a file of it replaced by a link (a sandboxed
	// command can, where the hook, unsandboxed, cannot be made to) would
	// send the events elsewhere, and pruning would remove files there.
	if err := notLink(l.dir); err != nil {
		return err
	}
	Mask(&ev, l.mask)
	line, err := encode(ev, MaxRecordBytes)
	if err != nil {
		return err
	}
	target, err := l.target(ev.Timestamp.UTC().Format(dayLayout), int64(len(line)))
	if err != nil {
		return err
	}
	path := filepath.Join(l.dir, target.name())
	if err := notLink(path); err != nil {
		return err
	}
	f, err := l.open(target.name())
	if err != nil {
		return err
	}
	_, err = f.Write(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("decision log %s: %w", path, err)
	}
	return nil
}

// open opens the log file name for appending without ever leaving the
// directory: a sandboxed command can swap the directory or the file for a
// link between notLink's look and the open, so the open goes through an
// os.Root (no link out of it is followed) of the directory that is at
// l.dir itself, not a link's target.
func (l *Log) open(name string) (*os.File, error) {
	r, err := l.openRoot(false)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	// O_NONBLOCK: a named pipe put there fails to open without a reader
	// (and is refused below with one) instead of holding the hook forever.
	f, err := r.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return nil, fmt.Errorf("decision log %s: %w", filepath.Join(l.dir, name), err)
	}
	// A regular file, and the one at name, not a link's target inside
	// the directory (another log file, the push state).
	fi, err := f.Stat()
	li, lerr := r.Lstat(name)
	// And one with no other name: a hard link the agent made to a file of
	// the user's (~/.bashrc) passes both checks above, and the file opened
	// is appended to in place.
	if err != nil || lerr != nil || !fi.Mode().IsRegular() || !os.SameFile(fi, li) || fileio.LinkCount(fi) > 1 {
		f.Close()
		return nil, fmt.Errorf("decision log: %s is not a regular file of its own (a named pipe, a link, a hard link?); des does not write to it: remove it and des starts the log again", filepath.Join(l.dir, name))
	}
	return f, nil
}

// openRoot opens the directory at l.dir, refusing a link's target (and,
// for OpenIn, a link at any component below the root), creating it first
// with create.
func (l *Log) openRoot(create bool) (*os.Root, error) {
	if l.root != "" {
		r, err := fileio.OpenDirIn(l.root, l.rel, create)
		if err != nil {
			return nil, fmt.Errorf("decision log: %s: %w; des does not write through it: remove it and des starts the log again", l.dir, err)
		}
		return r, nil
	}
	if create {
		if err := os.MkdirAll(l.dir, 0o755); err != nil {
			return nil, fmt.Errorf("decision log: %w", err)
		}
	}
	return openDir(l.dir)
}

// openDir opens dir as an os.Root, refusing a link at dir itself (what is
// opened must be what is at dir).
func openDir(dir string) (*os.Root, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("decision log: %w", err)
	}
	in, err := r.Stat(".")
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("decision log: %w", err)
	}
	if at, err := os.Lstat(dir); err != nil || !os.SameFile(in, at) {
		r.Close()
		return nil, fmt.Errorf("decision log: %s was replaced while des wrote to it (a symbolic link?); des does not write through it: remove it and des starts the log again", dir)
	}
	return r, nil
}

func notLink(p string) error {
	if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("decision log: %s is a symbolic link; des does not write through it: remove it and des starts the log again", p)
	}
	return nil
}

// target is the file the next line of n bytes goes to: the last part of
// the day, or a new part when that one is full. Only when a new file starts
// is the directory listed (the last part may have moved on in another
// process) and the oldest files dropped.
func (l *Log) target(day string, n int64) (segment, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur.day == day {
		fi, err := os.Stat(filepath.Join(l.dir, l.cur.name()))
		if err == nil && (fi.Size() == 0 || fi.Size()+n <= l.part) {
			return l.cur, nil
		}
	}
	if err := l.ensureDir(); err != nil {
		return segment{}, err
	}
	names, err := segmentNames(l.dir)
	if err != nil {
		return segment{}, err
	}
	seq := -1
	for _, s := range names {
		if s.day == day {
			seq = s.seq
		}
	}
	target := segment{day: day, seq: max(seq, 0)}
	if seq >= 0 {
		fi, err := os.Stat(filepath.Join(l.dir, target.name()))
		switch {
		case err == nil && fi.Size() > 0 && fi.Size()+n > l.part:
			target.seq++
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return segment{}, fmt.Errorf("decision log %s: %w", l.dir, err)
		}
	}
	if target.seq != seq {
		if err := l.prune(names, l.maxBytes-l.part, l.oldestDay(day)); err != nil {
			return segment{}, err
		}
	}
	l.cur = target
	return target, nil
}

// ensureDir creates the directory with a .gitignore that ignores it all:
// decision logs are this machine's, never the project's tracked files.
func (l *Log) ensureDir() error {
	if _, err := os.Stat(l.dir); err == nil {
		return nil
	}
	// Created exclusively: a link a sandboxed command put there between
	// the two calls is never written through (O_EXCL does not follow it).
	// Through the root of the directory at l.dir: not a link's target.
	r, err := l.openRoot(true)
	if err != nil {
		return err
	}
	defer r.Close()
	f, err := r.OpenFile(".gitignore", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("decision log: %w", err)
	}
	_, err = f.WriteString("# des decision logs: this machine's, pushed with `des-hook logs push`\n*\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("decision log: %w", err)
	}
	return nil
}

// oldestDay is the first day kept when a file of day starts: "" keeps all.
// A MaxAge of n days keeps n days, day included.
func (l *Log) oldestDay(day string) string {
	t, err := timeParseDay(day)
	if l.maxAge <= 0 || err != nil {
		return ""
	}
	return t.Add(-l.maxAge).AddDate(0, 0, 1).Format(dayLayout)
}

// prune removes the files of days before oldest, then the oldest files
// until the rest hold at most keep bytes. Two processes pruning at once
// remove the same files: a file already gone counts as removed.
func (l *Log) prune(names []segment, keep int64, oldest string) error {
	// Through the directory at l.dir: swapped for a link after Append's
	// look, it would have files of the link's target removed.
	r, err := l.openRoot(false)
	if err != nil {
		return err
	}
	defer r.Close()
	sizes := make([]int64, len(names))
	var total int64
	for i, s := range names {
		fi, err := r.Lstat(s.name())
		if err == nil {
			sizes[i] = fi.Size()
			total += sizes[i]
		}
	}
	for i := 0; i < len(names) && (total > keep || names[i].day < oldest); i++ {
		err := r.Remove(names[i].name())
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("decision log: drop the oldest file: %w", err)
		}
		total -= sizes[i]
	}
	return nil
}

const (
	dayLayout = "2006-01-02"
	fileExt   = ".jsonl"
)

// segment is one file of the log: a day and its part number.
type segment struct {
	day string
	seq int
}

func (s segment) name() string {
	if s.seq == 0 {
		return s.day + fileExt
	}
	return s.day + "." + strconv.Itoa(s.seq) + fileExt
}

func parseSegment(name string) (segment, bool) {
	base, ok := strings.CutSuffix(name, fileExt)
	if !ok {
		return segment{}, false
	}
	day, num, hasNum := strings.Cut(base, ".")
	s := segment{day: day}
	if _, err := timeParseDay(day); err != nil {
		return segment{}, false
	}
	if hasNum {
		n, err := strconv.Atoi(num)
		if err != nil || n < 1 || strconv.Itoa(n) != num {
			return segment{}, false
		}
		s.seq = n
	}
	return s, true
}

// segmentNames lists the log's files, oldest first.
func segmentNames(dir string) ([]segment, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("decision log: %w", err)
	}
	var out []segment
	for _, e := range entries {
		if s, ok := parseSegment(e.Name()); ok && e.Type().IsRegular() {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b segment) int { return cmp.Or(cmp.Compare(a.day, b.day), cmp.Compare(a.seq, b.seq)) })
	return out, nil
}
