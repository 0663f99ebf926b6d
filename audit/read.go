package audit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
)

// ReadFile parses the day file at path. A line that does not parse, or a
// last line without its newline (a torn write), is an error wrapping
// [ErrMalformedLine] that names the file and the 1-based line number; other
// errors are I/O errors.
func ReadFile(path string) ([]Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("audit: read %s: %w", path, err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var entries []Entry
	for n := 1; ; n++ {
		b, err := r.ReadBytes('\n')
		switch {
		case errors.Is(err, io.EOF) && len(b) == 0:
			return entries, nil
		case errors.Is(err, io.EOF):
			return nil, fmt.Errorf("audit: read %s: line %d: %w: no trailing newline (torn write?)", path, n, ErrMalformedLine)
		case err != nil:
			return nil, fmt.Errorf("audit: read %s: %w", path, err)
		}
		var e Entry
		if err := e.decode(b[:len(b)-1]); err != nil {
			return nil, fmt.Errorf("audit: read %s: line %d: %w: %w", path, n, ErrMalformedLine, err)
		}
		entries = append(entries, e)
	}
}
