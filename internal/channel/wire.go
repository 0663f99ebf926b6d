package channel

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Protocol is the wire protocol's version. A server speaking another one is
// treated like no server: the client decides in-process.
const Protocol = 1

// Frame size bounds.
const (
	MaxMeta   = 1 << 20 // a JSON frame: hello, request without stdin, accept, commit, reply without outputs
	MaxStdin  = 8 << 20 // the event: the hook reads at most 8 MiB
	MaxOutput = 8 << 20 // stdout and stderr together
)

// ErrTooLarge is wrapped when a frame announces more bytes than its bound.
var ErrTooLarge = errors.New("frame larger than allowed")

// Hello is the server's first frame on every connection.
type Hello struct {
	Protocol int    `json:"protocol"`
	BuildID  string `json:"build_id"`
	PID      int    `json:"pid"`
}

// Request is one invocation of the companion, as the client saw it.
type Request struct {
	Version  int      `json:"version"`        // Protocol
	Root     string   `json:"root"`           // project root, absolute
	Cwd      string   `json:"cwd"`            // the client's working directory
	Args     []string `json:"args,omitempty"` // command-line arguments after the program name; none in hook mode
	Env      []string `json:"env,omitempty"`  // KEY=VALUE, see ForwardEnv
	Deadline int64    `json:"deadline"`       // unix milliseconds; the server's handler context ends then
	Stdin    []byte   `json:"-"`              // sent as a raw frame of its own
	PeerPID  int      `json:"-"`              // the client's pid, as the kernel tells the server (SO_PEERCRED); never sent
}

// Accept answers a request before anything is run.
type Accept struct {
	Accepted bool   `json:"accepted"`
	Error    string `json:"error,omitempty"`
}

// Commit is the client's go-ahead after an Accept.
type Commit struct {
	Commit bool `json:"commit"`
}

// Reply is the outcome of a committed request. Error, when set, says the
// server failed to produce an outcome (its handler panicked, say).
type Reply struct {
	Exit   int    `json:"exit"`
	Error  string `json:"error,omitempty"`
	Stdout []byte `json:"-"`
	Stderr []byte `json:"-"`
}

// WriteFrame writes one frame in a single Write, so a frame is never
// interleaved or half-announced.
func WriteFrame(w io.Writer, p []byte) error {
	buf := make([]byte, 4+len(p))
	binary.BigEndian.PutUint32(buf, uint32(len(p)))
	copy(buf[4:], p)
	_, err := w.Write(buf)
	return err
}

// ReadFrame reads one frame of at most max bytes. A larger announced length
// is ErrTooLarge, and nothing more is read.
func ReadFrame(r io.Reader, max int) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(h[:])
	if uint64(n) > uint64(max) {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, n, max)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return nil, err
	}
	return p, nil
}

// WriteJSON writes v as one JSON frame.
func WriteJSON(w io.Writer, v any) error {
	p, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(p) > MaxMeta {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, len(p), MaxMeta)
	}
	return WriteFrame(w, p)
}

// ReadJSON reads one JSON frame into v.
func ReadJSON(r io.Reader, v any) error {
	p, err := ReadFrame(r, MaxMeta)
	if err != nil {
		return err
	}
	return json.Unmarshal(p, v)
}

// WriteRequest writes the request's JSON frame and its stdin frame.
func WriteRequest(w io.Writer, req *Request) error {
	if len(req.Stdin) > MaxStdin {
		return fmt.Errorf("%w: stdin of %d bytes, at most %d", ErrTooLarge, len(req.Stdin), MaxStdin)
	}
	if err := WriteJSON(w, req); err != nil {
		return err
	}
	return WriteFrame(w, req.Stdin)
}

// ReadRequest reads a request written by WriteRequest.
func ReadRequest(r io.Reader) (*Request, error) {
	var req Request
	if err := ReadJSON(r, &req); err != nil {
		return nil, err
	}
	in, err := ReadFrame(r, MaxStdin)
	if err != nil {
		return nil, err
	}
	req.Stdin = in
	return &req, nil
}

// WriteReply writes the reply's JSON frame, then stdout and stderr.
func WriteReply(w io.Writer, rep *Reply) error {
	if len(rep.Stdout)+len(rep.Stderr) > MaxOutput {
		return fmt.Errorf("%w: output of %d bytes, at most %d", ErrTooLarge, len(rep.Stdout)+len(rep.Stderr), MaxOutput)
	}
	if err := WriteJSON(w, rep); err != nil {
		return err
	}
	if err := WriteFrame(w, rep.Stdout); err != nil {
		return err
	}
	return WriteFrame(w, rep.Stderr)
}

// ReadReply reads a reply written by WriteReply.
func ReadReply(r io.Reader) (*Reply, error) {
	var rep Reply
	if err := ReadJSON(r, &rep); err != nil {
		return nil, err
	}
	out, err := ReadFrame(r, MaxOutput)
	if err != nil {
		return nil, err
	}
	errOut, err := ReadFrame(r, MaxOutput-len(out))
	if err != nil {
		return nil, err
	}
	rep.Stdout, rep.Stderr = out, errOut
	return &rep, nil
}

// LookupEnv looks key up in the request's environment, the way os.LookupEnv
// does in the client's process (the last entry wins, as in exec).
func (r *Request) LookupEnv(key string) (string, bool) {
	for i := len(r.Env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(r.Env[i], "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}
