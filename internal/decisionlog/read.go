package decisionlog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"path/filepath"

	"github.com/deterministic-exec/des/internal/fileio"
)

// Recorded is an event as read back from the log, with where it was kept.
type Recorded struct {
	Event
	File string // the log file's path
	Line int    // 1-based
}

// Events reads the events kept in dir, oldest file first and in the order
// they were appended. A line that is not an event (a file cut short, a line
// over MaxRecordBytes) is yielded as a *LineError with the line's place, and
// reading goes on; a file that cannot be read ends it with that error.
// Numbers keep their text (json.Number), as policies read them.
func Events(dir string) iter.Seq2[Recorded, error] {
	return func(yield func(Recorded, error) bool) {
		names, err := segmentNames(dir)
		if err != nil {
			yield(Recorded{}, err)
			return
		}
		for _, s := range names {
			if !readFile(filepath.Join(dir, s.name()), yield) {
				return
			}
		}
	}
}

// LineError is a line of a log file that is not an event.
type LineError struct {
	File   string
	Line   int
	Reason string
}

func (e *LineError) Error() string {
	return fmt.Sprintf("decision log %s:%d: %s", e.File, e.Line, e.Reason)
}

func readFile(path string, yield func(Recorded, error) bool) bool {
	f, _, err := fileio.OpenRegular(path)
	if errors.Is(err, fs.ErrNotExist) {
		return true // pruned meanwhile
	}
	if err != nil {
		return yield(Recorded{}, fmt.Errorf("decision log: %w", err))
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	for n := 1; ; n++ {
		line, over, err := readLine(r, MaxRecordBytes)
		last := errors.Is(err, io.EOF)
		if err != nil && !last {
			return yield(Recorded{}, fmt.Errorf("decision log %s: %w", path, err))
		}
		if len(bytes.TrimSpace(line)) > 0 || over {
			rec := Recorded{File: path, Line: n}
			var lerr error
			if over {
				lerr = &LineError{File: path, Line: n, Reason: fmt.Sprintf("over %d bytes, not an event des writes", MaxRecordBytes)}
			} else if last {
				lerr = &LineError{File: path, Line: n, Reason: "no newline at its end: being written, or cut short"}
			} else {
				if derr := decodeNumbers(line, &rec.Event); derr != nil {
					lerr = &LineError{File: path, Line: n, Reason: "not an event: " + derr.Error()}
				}
			}
			if !yield(rec, lerr) {
				return false
			}
		}
		if last {
			return true
		}
	}
}
