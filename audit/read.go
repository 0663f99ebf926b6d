package audit

import (
	"bytes"
	"fmt"
	"strings"
)

// ReadFile parses a day file, or an archive when path ends in ".gz". A line
// that does not parse, or a last line without its newline (a torn write),
// is an error wrapping [ErrMalformedLine] that names the file and the
// 1-based line number; other errors are I/O errors. It does not check the
// hash chain: that is [Verify].
func ReadFile(path string) ([]Entry, error) {
	s := source{path: path, archive: strings.HasSuffix(path, ".gz")}
	data, err := s.read(-1)
	if err != nil {
		return nil, err
	}
	var entries []Entry
	err = eachLine(path, data, func(n int, line []byte) error {
		var e Entry
		if err := e.decode(line); err != nil {
			return fmt.Errorf("audit: read %s: line %d: %w: %w", path, n, ErrMalformedLine, err)
		}
		entries = append(entries, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return entries, nil
}

// eachLine calls fn with each line of data (newline cut) and its 1-based
// number; a last line without its newline is an error wrapping
// ErrMalformedLine.
func eachLine(path string, data []byte, fn func(n int, line []byte) error) error {
	for n := 1; len(data) > 0; n++ {
		end := bytes.IndexByte(data, '\n')
		if end < 0 {
			return fmt.Errorf("audit: read %s: line %d: %w: no trailing newline (torn write?)", path, n, ErrMalformedLine)
		}
		if err := fn(n, data[:end]); err != nil {
			return err
		}
		data = data[end+1:]
	}
	return nil
}
