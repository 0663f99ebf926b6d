package audit

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
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
	if !q.Since.IsZero() && e.Time.Before(q.Since) {
		return false
	}
	return q.Until.IsZero() || e.Time.Before(q.Until)
}

// skipFile reports whether a day file cannot hold an entry of q's time
// range, judged by its date alone.
func (q Query) skipFile(path string) bool {
	name := filepath.Base(path)
	day, err := time.Parse(time.DateOnly, strings.TrimSuffix(strings.TrimPrefix(name, "audit-"), ".log"))
	if err != nil {
		return false
	}
	if !q.Since.IsZero() && !day.AddDate(0, 0, 1).After(q.Since) {
		return true
	}
	return !q.Until.IsZero() && !day.Before(q.Until)
}

// Read returns the entries that match q, in trail order (oldest day file
// first, lines in file order). A directory that does not exist yet holds no
// entries. A line that does not parse is an error wrapping
// [ErrMalformedLine] naming the file and line: a reader that decides on the
// trail must not decide on part of it.
func (l *Log) Read(ctx context.Context, q Query) ([]Entry, error) {
	files, err := l.Files()
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("audit: read %s: %w", l.dir, err)
		}
		if q.skipFile(f) {
			continue
		}
		entries, err := ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if q.match(e) {
				out = append(out, e)
			}
		}
	}
	return out, nil
}
