package decisionlog

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
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

// pushLockFile is the lock a push holds, beside the log and the
// push-state-<hash of the collector URL>.json files (see stateFile).
const pushLockFile = "push.lock"

// Pusher posts the events of a log not yet accepted to a collector, as OPA's
// decision-log plugin does: POST, Content-Type application/json,
// Content-Encoding gzip, the body a gzipped JSON array of events of at most
// ChunkBytes.
type Pusher struct {
	Dir    string       // the log's directory
	Root   string       // with Dir below it, Dir is opened from Root refusing a link at any component, as OpenIn's log is; "" for none
	URL    string       // the collector's endpoint
	Token  string       // bearer token; empty sends none
	Client *http.Client // nil means http.DefaultClient
	// Mask is erased from every event before it leaves (see Mask), on top
	// of what the log's own mask erased when it was kept; then an event
	// over MaxEventBytes loses its input, then its result.
	Mask []string
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
	// The lock and the push state are written within the directory at
	// Dir, opened once: the push runs outside the sandbox, and a link at
	// .des or .des/decisions would have them written where it points.
	dir, err := p.openDir()
	if err != nil {
		return res, err
	}
	defer dir.Close()
	lock, err := filelock.AcquireIn(ctx, dir, pushLockFile)
	if err != nil {
		return res, fmt.Errorf("decision log push: %w", err)
	}
	defer lock.Unlock()
	st, err := readState(p.Dir, p.URL)
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
		path := filepath.Join(p.Dir, name)
		if fi, err := os.Stat(path); err == nil && fi.Size() < st.Files[name] {
			st.Files[name] = 0 // not the file the offset was recorded for: it was replaced
		}
		for {
			w, err := readWindow(path, st.Files[name])
			if err != nil {
				return res, err
			}
			if w.end == st.Files[name] {
				break // no complete line after the offset
			}
			res.Skipped += w.skipped
			// A line that is JSON but not an event des can read (another
			// program's, a forged one) is passed over, as a line that is not
			// JSON is: it must not stop every later push.
			kept := 0
			for j, raw := range w.events {
				ev, err := outgoing(raw, p.Mask)
				if err != nil {
					res.Skipped++
					continue
				}
				w.events[kept], w.ends[kept] = ev, w.ends[j]
				kept++
			}
			w.events, w.ends = w.events[:kept], w.ends[:kept]
			for len(w.events) > 0 {
				n, body, err := nextChunk(w.events)
				if err != nil {
					return res, err
				}
				if err := p.post(ctx, body); err != nil {
					res.Pending = len(w.events) + countLines(path, w.end)
					for _, later := range names[i+1:] {
						res.Pending += countLines(filepath.Join(p.Dir, later.name()), st.Files[later.name()])
					}
					return res, err
				}
				st.Files[name] = w.ends[n-1]
				if err := writeState(dir, p.URL, st); err != nil {
					return res, err
				}
				res.Events += n
				res.Chunks++
				w.events, w.ends = w.events[n:], w.ends[n:]
			}
			if w.end > st.Files[name] { // lines that were not events, after the last one
				st.Files[name] = w.end
				if err := writeState(dir, p.URL, st); err != nil {
					return res, err
				}
			}
		}
	}
	return res, nil
}

// outgoing is a kept event as it is pushed: masked, and within
// MaxEventBytes.
func outgoing(raw json.RawMessage, mask []string) (json.RawMessage, error) {
	if len(mask) == 0 && len(raw) <= MaxEventBytes {
		return raw, nil
	}
	var ev Event
	if err := decodeNumbers(raw, &ev); err != nil {
		return nil, err
	}
	Mask(&ev, mask)
	line, err := encode(ev, MaxEventBytes)
	if err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(line, []byte{'\n'}), nil
}

// windowBytes bounds what a push reads of a file at once.
const windowBytes = 2 * MaxRecordBytes

// window is the complete lines of a file read from an offset: the events,
// the offset just after each, and end, the offset after the last complete
// line read (end equals the offset when there is none). A line that is not
// a JSON object is skipped; a last line without its newline is being
// written, or was cut short, and is left for later.
type window struct {
	events  []json.RawMessage
	ends    []int64
	end     int64
	skipped int
}

func readWindow(path string, offset int64) (window, error) {
	w := window{end: offset}
	// Not os.Open: the directory is writable by a sandboxed command, and a
	// named pipe opened for reading waits for a writer forever.
	f, _, err := fileio.OpenRegular(path)
	if errors.Is(err, fs.ErrNotExist) {
		return w, nil
	}
	if err != nil {
		return w, fmt.Errorf("decision log push: %w", err)
	}
	defer f.Close()
	data := make([]byte, windowBytes)
	n, err := f.ReadAt(data, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return w, fmt.Errorf("decision log push: %s: %w", path, err)
	}
	data = data[:n]
	if n == windowBytes && bytes.IndexByte(data, '\n') < 0 {
		// One line longer than the window: no event des writes is. Pass
		// over it once it is complete.
		if next, ok := nextNewline(f, offset+int64(n)); ok {
			w.end, w.skipped = next, 1
		}
		return w, nil
	}
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		line := data[:i]
		data = data[i+1:]
		w.end += int64(i + 1)
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if line[0] != '{' || !json.Valid(line) {
			w.skipped++
			continue
		}
		w.events = append(w.events, json.RawMessage(line))
		w.ends = append(w.ends, w.end)
	}
	return w, nil
}

// nextNewline is the offset just after the first newline at or after off.
func nextNewline(f *os.File, off int64) (int64, bool) {
	buf := make([]byte, 64<<10)
	for {
		n, err := f.ReadAt(buf, off)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return off + int64(i) + 1, true
		}
		if err != nil {
			return 0, false
		}
		off += int64(n)
	}
}

// countLines counts the complete lines of path after offset, for a report.
func countLines(path string, offset int64) int {
	f, _, err := fileio.OpenRegular(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	count := 0
	for {
		n, err := f.ReadAt(buf, offset)
		count += bytes.Count(buf[:n], []byte{'\n'})
		offset += int64(n)
		if err != nil {
			return count
		}
	}
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
	client := http.DefaultClient
	if p.Client != nil {
		client = p.Client
	}
	// A redirect is answered, not followed: followed, a POST becomes a GET
	// (301, 302, 303) that any web server answers 200, and the events
	// would count as accepted though no collector received them.
	noRedirect := *client
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := noRedirect.Do(req)
	if err != nil {
		return &CollectorError{URL: p.URL, Err: err}
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // let the connection be reused
	if resp.StatusCode/100 == 3 {
		where := "elsewhere"
		if loc, err := resp.Location(); err == nil {
			where = "to " + loc.Redacted()
		}
		return &CollectorError{URL: p.URL, Status: resp.StatusCode, Body: "it redirects " + where + ": set decision_log_url to the collector's own URL"}
	}
	if resp.StatusCode/100 != 2 {
		return &CollectorError{URL: p.URL, Status: resp.StatusCode, Body: strings.TrimSpace(string(answer))}
	}
	return nil
}

// stateFile is where a push to url records what it accepted: a file per
// collector URL, so that a push to another URL (anything answering 2xx,
// named by whoever runs logs push with their own DES_DECISION_LOG_URL)
// never counts as the project's collector having the events.
func stateFile(url string) string {
	sum := sha256.Sum256([]byte(url))
	return "push-state-" + hex.EncodeToString(sum[:4]) + ".json"
}

func readState(dir, url string) (pushState, error) {
	st := pushState{Files: map[string]int64{}}
	path := filepath.Join(dir, stateFile(url))
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

// openDir opens the log's directory for the push's writes (see Root).
func (p Pusher) openDir() (*os.Root, error) {
	if p.Root != "" {
		if rel, err := filepath.Rel(p.Root, p.Dir); err == nil && filepath.IsLocal(rel) {
			r, err := fileio.OpenDirIn(p.Root, rel, false)
			if err != nil {
				return nil, fmt.Errorf("decision log push: %s: %w; des does not write through it: remove it", p.Dir, err)
			}
			return r, nil
		}
	}
	return openDir(p.Dir)
}

func writeState(dir *os.Root, url string, st pushState) error {
	raw, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	// Within the directory the push opened, and never through a link at
	// the state's name: a sandboxed command may write .des/decisions, and
	// the push runs outside the sandbox.
	if err := fileio.WriteAtomicAt(dir, stateFile(url), append(raw, '\n')); err != nil {
		return fmt.Errorf("decision log push: record what was pushed in %s: %w", filepath.Join(dir.Name(), stateFile(url)), err)
	}
	return nil
}
