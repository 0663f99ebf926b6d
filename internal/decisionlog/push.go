package decisionlog

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/internal/filelock"
)

// ChunkBytes bounds one upload, gzipped: OPA's default
// upload_size_limit_bytes, which collectors of OPA decision logs accept.
const ChunkBytes = 32 << 10

// Files a push keeps beside the log.
const (
	PushStateFile = "push-state.json" // per file, the bytes the collector accepted
	pushLockFile  = "push.lock"
)

// Pusher posts the events of a log not yet accepted to a collector, as OPA's
// decision-log plugin does: POST, Content-Type application/json,
// Content-Encoding gzip, the body a gzipped JSON array of events of at most
// ChunkBytes.
type Pusher struct {
	Dir    string       // the log's directory
	URL    string       // the collector's endpoint
	Token  string       // bearer token; empty sends none
	Client *http.Client // nil means http.DefaultClient
}

// PushResult says what a push did.
type PushResult struct {
	Events  int // events the collector accepted
	Chunks  int // uploads it accepted
	Pending int // events left for the next push (after a failure)
	Skipped int // lines that were not JSON (a file cut short), never sent
}

// CollectorError is a collector that did not accept an upload: it answered
// with a status other than 2xx (Status), or could not be reached (Status 0,
// Err says why). What it accepted before stays accepted; the rest is sent
// again by the next push.
type CollectorError struct {
	URL    string
	Status int
	Body   string // the start of its answer
	Err    error
}

func (e *CollectorError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("collector %s: %v", e.URL, e.Err)
	}
	msg := fmt.Sprintf("collector %s answered %d %s", e.URL, e.Status, http.StatusText(e.Status))
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

func (e *CollectorError) Unwrap() error { return e.Err }

// pushState records, per file of the log, how many bytes the collector has
// accepted. Files only grow, so an offset stays valid until the file goes.
type pushState struct {
	Files map[string]int64 `json:"files"`
}

// Push sends every event not yet accepted, oldest first, and records what
// the collector accepted after each upload, so a push that fails halfway
// (a *CollectorError) resends only the rest. Pushes of one log run one at a
// time (a lock file beside it).
func (p Pusher) Push(ctx context.Context) (PushResult, error) {
	var res PushResult
	names, err := segmentNames(p.Dir)
	if err != nil || len(names) == 0 {
		return res, err
	}
	lock, err := filelock.Acquire(ctx, filepath.Join(p.Dir, pushLockFile))
	if err != nil {
		return res, fmt.Errorf("decision log push: %w", err)
	}
	defer lock.Unlock()
	st, err := readState(p.Dir)
	if err != nil {
		return res, err
	}
	present := map[string]bool{}
	for _, s := range names {
		present[s.name()] = true
	}
	for name := range st.Files {
		if !present[name] {
			delete(st.Files, name) // the log dropped it
		}
	}
	for i, s := range names {
		name := s.name()
		events, ends, skipped, err := readFrom(filepath.Join(p.Dir, name), st.Files[name])
		if err != nil {
			return res, err
		}
		res.Skipped += skipped
		for len(events) > 0 {
			n, body, err := nextChunk(events)
			if err != nil {
				return res, err
			}
			if err := p.post(ctx, body); err != nil {
				res.Pending = len(events)
				for _, later := range names[i+1:] {
					rest, _, _, _ := readFrom(filepath.Join(p.Dir, later.name()), st.Files[later.name()])
					res.Pending += len(rest)
				}
				return res, err
			}
			st.Files[name] = ends[n-1]
			if err := writeState(p.Dir, st); err != nil {
				return res, err
			}
			res.Events += n
			res.Chunks++
			events, ends = events[n:], ends[n:]
		}
		if len(ends) == 0 && skipped > 0 {
			// Only unreadable lines were left: they are passed over for good.
			if end, err := completeEnd(filepath.Join(p.Dir, name)); err == nil && end > st.Files[name] {
				st.Files[name] = end
				if err := writeState(p.Dir, st); err != nil {
					return res, err
				}
			}
		}
	}
	return res, nil
}

// readFrom returns the complete lines of path after offset as events, with
// the offset just after each. A last line without its newline is being
// written (or was cut short): it is left for later. A line that is not a
// JSON object is skipped.
func readFrom(path string, offset int64) (events []json.RawMessage, ends []int64, skipped int, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, 0, nil
	}
	if err != nil {
		return nil, nil, 0, fmt.Errorf("decision log push: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() < offset {
		offset = 0 // not the file the offset was recorded for: it was replaced
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, nil, 0, fmt.Errorf("decision log push: %s: %w", path, err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("decision log push: %s: %w", path, err)
	}
	pos := offset
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		line := data[:i]
		data = data[i+1:]
		pos += int64(i + 1)
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if !json.Valid(line) || line[0] != '{' {
			skipped++
			continue
		}
		events = append(events, json.RawMessage(line))
		ends = append(ends, pos)
	}
	return events, ends, skipped, nil
}

// completeEnd is the offset after the last complete line of path.
func completeEnd(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return int64(bytes.LastIndexByte(data, '\n') + 1), nil
}

// nextChunk gzips the longest run of events from the first whose upload
// fits ChunkBytes (at least one event: each was bounded when logged).
func nextChunk(events []json.RawMessage) (int, []byte, error) {
	// Start from what fits uncompressed at a modest ratio, then halve.
	n, size := 0, 2
	for n < len(events) && (n == 0 || size+len(events[n])+1 <= 8*ChunkBytes) {
		size += len(events[n]) + 1
		n++
	}
	for {
		body, err := gzipArray(events[:n])
		if err != nil {
			return 0, nil, err
		}
		if len(body) <= ChunkBytes || n == 1 {
			return n, body, nil
		}
		n = (n + 1) / 2
	}
}

func gzipArray(events []json.RawMessage) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte{'['})
	for i, e := range events {
		if i > 0 {
			zw.Write([]byte{','})
		}
		zw.Write(e)
	}
	zw.Write([]byte{']'})
	if err := zw.Close(); err != nil { // a bytes.Buffer never fails a write; Close reports any
		return nil, fmt.Errorf("decision log push: gzip: %w", err)
	}
	return buf.Bytes(), nil
}

func (p Pusher) post(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL, bytes.NewReader(body))
	if err != nil {
		return &CollectorError{URL: p.URL, Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", "gzip")
	if p.Token != "" {
		req.Header.Set("Authorization", "Bearer "+p.Token)
	}
	client := p.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return &CollectorError{URL: p.URL, Err: err}
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // let the connection be reused
	if resp.StatusCode/100 != 2 {
		return &CollectorError{URL: p.URL, Status: resp.StatusCode, Body: strings.TrimSpace(string(answer))}
	}
	return nil
}

func readState(dir string) (pushState, error) {
	st := pushState{Files: map[string]int64{}}
	path := filepath.Join(dir, PushStateFile)
	raw, err := fileio.ReadBounded(path, 1<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err == nil {
		err = json.Unmarshal(raw, &st)
	}
	if err != nil {
		return st, fmt.Errorf("decision log push: %s: %w (delete it to push every kept event again)", path, err)
	}
	if st.Files == nil {
		st.Files = map[string]int64{}
	}
	return st, nil
}

func writeState(dir string, st pushState) error {
	raw, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := fileio.WriteAtomic(filepath.Join(dir, PushStateFile), append(raw, '\n')); err != nil {
		return fmt.Errorf("decision log push: record what was pushed: %w", err)
	}
	return nil
}
