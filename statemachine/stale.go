package statemachine

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// StaleWork is a phase left IN_PROGRESS for longer than the stale threshold.
type StaleWork struct {
	File      string // dir joined with the file name
	Phase     string // phase_name ("" when the entry has none)
	StartedAt time.Time
	Age       time.Duration
}

// ScanStale lists the phases IN_PROGRESS, in the *.json files directly in
// dir, whose started_at (see ParseTimestamp) is more than threshold before
// now. Results are sorted by file, then phase.
//
// The scan serves Gate 1, which validates only the step it runs: a file that
// is not a JSON object, cannot be read, is not a regular file or is over
// MaxStepFileSize is skipped, and so is a phase whose started_at does not
// parse. A missing dir has no stale work. Only the phase log is looked at,
// with the same key rules and log location as ParseStep, and files are read
// by a few workers at once.
func ScanStale(dir string, now time.Time, threshold time.Duration) ([]StaleWork, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("scan %s for stale work: %w", dir, err)
	}
	var files []fs.DirEntry
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
			files = append(files, e)
		}
	}

	results := make([][]StaleWork, len(files))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), 8, len(files)) {
		wg.Go(func() {
			var buf []byte // reused from file to file: nothing kept points into it
			for {
				i := int(next.Add(1) - 1)
				if i >= len(files) {
					return
				}
				path := filepath.Join(dir, files[i].Name())
				var data []byte
				data, buf = readStepForScan(path, files[i], buf)
				results[i] = staleIn(path, data, now, threshold)
			}
		})
	}
	wg.Wait()

	var out []StaleWork
	for _, r := range results {
		out = append(out, r...)
	}
	slices.SortFunc(out, func(a, b StaleWork) int {
		return cmp.Or(strings.Compare(a.File, b.File), strings.Compare(a.Phase, b.Phase), a.StartedAt.Compare(b.StartedAt))
	})
	return out, nil
}

// readStepForScan reads a regular file of at most MaxStepFileSize into buf
// (grown as needed); nil data when the file is to be skipped.
func readStepForScan(path string, e fs.DirEntry, buf []byte) (data, newBuf []byte) {
	// The directory listing usually tells the type for free; a symbolic
	// link is followed, and anything but a regular file (a FIFO would block
	// the open) is skipped.
	if !e.Type().IsRegular() {
		fi, err := os.Stat(path)
		if err != nil || !fi.Mode().IsRegular() {
			return nil, buf
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, buf
	}
	defer f.Close()
	buf = buf[:0]
	if cap(buf) == 0 {
		buf = make([]byte, 0, 64<<10) // most step files fit at once
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):min(cap(buf), MaxStepFileSize+1)])
		buf = buf[:len(buf)+n]
		if len(buf) > MaxStepFileSize {
			return nil, buf[:0]
		}
		if err == io.EOF {
			return buf, buf
		}
		if err != nil {
			return nil, buf
		}
	}
}

// staleIn returns the stale phases of one file's content.
func staleIn(path string, data []byte, now time.Time, threshold time.Duration) []StaleWork {
	// Most step files have no phase in progress: when the status cannot be
	// there, even spelt with \u escapes, skip the parsing.
	if !bytes.Contains(data, []byte(`"IN_PROGRESS"`)) && !bytes.Contains(data, []byte(`\u`)) {
		return nil
	}
	if !json.Valid(data) {
		return nil
	}
	if data = trimSpace(data); data[0] != '{' {
		return nil
	}
	// Only the phase log is split out; every other value is skipped by a
	// byte scan, which is what makes a scan of 1,000 files cheap.
	tc, _ := rawGet(data, phaseLogPath[0])
	_, entries := locateInCycle(tc)
	var out []StaleWork
	for _, e := range entries {
		if !isObjectText(e) {
			continue
		}
		if st, _ := rawString(rawGet(e, "status")); st != PhaseInProgress {
			continue
		}
		s, _ := rawString(rawGet(e, "started_at"))
		started, ok := ParseTimestamp(s)
		if !ok {
			continue
		}
		if age := now.Sub(started); age > threshold {
			name, _ := rawString(rawGet(e, "phase_name"))
			out = append(out, StaleWork{File: path, Phase: name, StartedAt: started, Age: age})
		}
	}
	return out
}

// ParseTimestamp reads a step file timestamp: RFC 3339 (fractional seconds
// allowed), or the same without a zone ("2006-01-02T15:04:05", as Python's
// isoformat writes naive times), taken as UTC.
func ParseTimestamp(s string) (time.Time, bool) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, true
	}
	if t, err := time.Parse("2006-01-02T15:04:05", s); err == nil {
		return t, true
	}
	return time.Time{}, false
}
