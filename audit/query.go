package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"time"
)

// Query selects entries of the trail. Every non-zero field narrows the
// selection; the zero Query selects every entry.
type Query struct {
	// Events keeps entries of any of these types.
	Events []EventType
	// StepFile keeps entries whose "step_file" field equals it exactly
	// (project-relative, slash-separated, as the gates write it).
	StepFile string
	// Since keeps entries at or after this instant.
	Since time.Time
	// Until keeps entries before this instant.
	Until time.Time
}

func (q Query) match(e Entry) bool {
	if len(q.Events) > 0 && !slices.Contains(q.Events, e.Event) {
		return false
	}
	if q.StepFile != "" {
		if s, _ := e.Fields["step_file"].(string); s != q.StepFile {
			return false
		}
	}
	return q.inRange(e.Time)
}

func (q Query) inRange(t time.Time) bool {
	if !q.Since.IsZero() && t.Before(q.Since) {
		return false
	}
	return q.Until.IsZero() || t.Before(q.Until)
}

// skipDay reports whether a file of the given date cannot hold an entry of
// q's time range. A line's file is never dated before the line's own date,
// but may be dated after it (Append writes a late line to the newest file):
// so a file that ends before Since is skipped, while a file dated after
// Until may still hold earlier lines and is read.
func (q Query) skipDay(day time.Time) bool {
	return !q.Since.IsZero() && !day.AddDate(0, 0, 1).After(q.Since)
}

// Read returns the entries that match q, in trail order: archives and day
// files by date (an archive before the day file of the same date), lines in
// file order. Entries carry their Seq. A directory that does not exist yet
// holds no entries.
//
// Read is fast on a large trail: files that end before q.Since are not
// read, and a line is decoded only when its bytes can match q, judged from
// the "timestamp" and "event" at its start and from q.StepFile as JSON
// writes it. A line that is decoded and does not parse, and a torn last
// line of a file other than the newest, are errors wrapping
// [ErrMalformedLine] naming the file and line: a reader that decides on the
// trail must not decide on part of it. Read takes no lock, so the newest
// file's unterminated last line is taken as a line another process is still
// writing, and left out. A damaged line that cannot match is not decoded, and Read does not
// check the hash chain: [Verify] does both.
func (l *Log) Read(ctx context.Context, q Query) ([]Entry, error) {
	srcs, err := listTrail(l.dir)
	if err != nil {
		return nil, err
	}
	f := newPrefilter(q)
	var out []Entry
	var sums [][sha256.Size]byte // of out's lines, newline included, for markAttested
	for i, s := range srcs {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("audit: read %s: %w", l.dir, err)
		}
		if q.skipDay(s.day) {
			continue
		}
		data, err := s.read(-1)
		if err != nil {
			return nil, err
		}
		if i == len(srcs)-1 {
			// Read takes no lock: the newest file may end in a line another
			// process is still writing. It is not written yet, not torn.
			data = data[:bytes.LastIndexByte(data, '\n')+1]
		}
		err = eachLine(s.path, data, func(n int, line []byte) error {
			if !f.maybe(line) {
				return nil
			}
			var e Entry
			if err := e.decode(line); err != nil {
				return fmt.Errorf("audit: read %s: line %d: %w: %w", s.path, n, ErrMalformedLine, err)
			}
			if q.match(e) {
				out = append(out, e)
				if l.attestFile != "" {
					sums = append(sums, sha256.Sum256(line[:len(line)+1])) // eachLine's line is followed by its newline
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	l.markAttested(out, sums)
	return out, nil
}

// prefilter rejects lines that cannot match a query from their bytes.
type prefilter struct {
	q        Query
	stepFile []byte // q.StepFile as a JSON string, quotes included
}

func newPrefilter(q Query) prefilter {
	f := prefilter{q: q}
	if q.StepFile != "" {
		f.stepFile = appendString(nil, q.StepFile)
	}
	return f
}

var (
	prefixTimestamp = []byte(`{"timestamp":"`)
	prefixEvent     = []byte(`","event":"`)
)

// maybe reports whether line may match. It is never false for a line
// Append wrote that matches; a line in another form is left to the decoder.
func (f prefilter) maybe(line []byte) bool {
	// A line with escapes may spell the step file otherwise than Append
	// would (a legacy line's "\/"): only the decoder can tell.
	if f.stepFile != nil && !bytes.Contains(line, f.stepFile) && bytes.IndexByte(line, '\\') < 0 {
		return false
	}
	if len(f.q.Events) == 0 && f.q.Since.IsZero() && f.q.Until.IsZero() {
		return true
	}
	rest, ok := bytes.CutPrefix(line, prefixTimestamp)
	if !ok {
		return true
	}
	i := bytes.IndexByte(rest, '"')
	if i < 0 {
		return true
	}
	ts := rest[:i]
	rest, ok = bytes.CutPrefix(rest[i:], prefixEvent)
	if !ok {
		return true
	}
	j := bytes.IndexByte(rest, '"')
	if j < 0 || bytes.IndexByte(rest[:j], '\\') >= 0 {
		return true
	}
	if len(f.q.Events) > 0 && !slices.ContainsFunc(f.q.Events, func(ev EventType) bool { return string(rest[:j]) == string(ev) }) {
		return false
	}
	if f.q.Since.IsZero() && f.q.Until.IsZero() {
		return true
	}
	t, err := time.Parse(time.RFC3339Nano, string(ts))
	return err != nil || f.q.inRange(t)
}
