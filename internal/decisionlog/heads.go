package decisionlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/deterministic-exec/des/internal/fileio"
)

// RecordedHead is an audit head an event of the log recorded, with where
// and when.
type RecordedHead struct {
	AuditHead
	Time time.Time // the event's timestamp
	File string    // the log file
	Line int       // 1-based line in File
}

// headKey marks the lines worth decoding.
var headKey = []byte(`"des_audit_head":`)

// AuditHeads reads the audit heads the events of the log in dir recorded,
// oldest file first. A missing directory has none; a line that does not
// parse is passed over (the log is appended to by many processes, and
// the push reads it the same way). Files that are not regular files of
// their own (a FIFO, a link) are an error: the log was tampered with.
func AuditHeads(dir string) ([]RecordedHead, error) {
	names, err := segmentNames(dir)
	if err != nil {
		return nil, err
	}
	var out []RecordedHead
	for _, s := range names {
		path := filepath.Join(dir, s.name())
		heads, err := fileHeads(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // pruned meanwhile
		}
		if err != nil {
			return out, err
		}
		out = append(out, heads...)
	}
	return out, nil
}

func fileHeads(path string) ([]RecordedHead, error) {
	f, _, err := fileio.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	var out []RecordedHead
	for n := 1; ; n++ {
		line, err := longLine(r, MaxRecordBytes)
		if len(line) > 0 && bytes.Contains(line, headKey) {
			var ev struct {
				Timestamp time.Time  `json:"timestamp"`
				AuditHead *AuditHead `json:"des_audit_head"`
			}
			if json.Unmarshal(line, &ev) == nil && ev.AuditHead != nil {
				out = append(out, RecordedHead{AuditHead: *ev.AuditHead, Time: ev.Timestamp, File: path, Line: n})
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return out, fmt.Errorf("decision log %s: %w", path, err)
		}
	}
	return out, nil
}

// longLine reads the next line of r, without its newline; a line over max
// bytes (no event des writes is) is read past and returned empty.
func longLine(r *bufio.Reader, max int) ([]byte, error) {
	line, _, err := readLine(r, max)
	return line, err
}

// readLine is longLine, saying whether the line was over max.
func readLine(r *bufio.Reader, max int) (line []byte, over bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if !over {
			line = append(line, chunk...)
			if len(line) > max {
				line, over = nil, true
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(line, []byte{'\n'}), over, err
	}
}
