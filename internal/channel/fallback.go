package channel

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"
)

// Fallback records the last hook event that a client of one install (see
// Key) decided in process instead of through the decision server, and why:
// `des-hook status` reads it to say that the warm server is not used, why,
// and what fixes it. The client writes it on every fall-back and removes it
// when the server decides an event, so it describes the last event only.
//
// It lives in the runtime directory, beside the socket: private to the user,
// but writable by any process of the user, so it is a diagnosis to show, never
// something to trust (status prints it with control characters removed).
type Fallback struct {
	Time      time.Time `json:"time"`
	Cause     string    `json:"cause"`               // one of the Cause* values
	Why       string    `json:"why"`                 // the client's error, at most maxWhy bytes
	Companion string    `json:"companion,omitempty"` // the des-engine the client would use
	Socket    string    `json:"socket,omitempty"`    // where it looked for the server
}

// Causes of a fall-back.
const (
	CauseNoServer     = "no_server"     // none answered (not started yet, starting, killed, cannot start)
	CausePeerMismatch = "peer_mismatch" // the process behind the socket is not the companion, or another build
	CauseRefused      = "refused"       // the server refused the request (it cannot decide it as a process would)
	CauseUnsupported  = "unsupported"   // no decision server on this platform
	CauseNotSent      = "not_sent"      // the event was not sent (unreadable, or over MaxStdin)
	CauseOther        = "other"
)

// Bounds of the record: its reason, and what a reader reads of the file.
const (
	maxWhy          = 2048
	maxFallbackFile = 8 << 10
)

// FallbackPath is where the clients of the install named key record their
// last fall-back.
func FallbackPath(dir, key string) string { return filepath.Join(dir, "fallback-"+key+".json") }

// WriteFallback records f, replacing the previous record whole (a temporary
// file renamed over it: clients of parallel events never interleave).
func WriteFallback(dir, key string, f Fallback) error {
	if len(f.Why) > maxWhy {
		f.Why = f.Why[:maxWhy] + "…"
	}
	raw, err := json.Marshal(f)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".fallback-"+key+"-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(append(raw, '\n'))
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), FallbackPath(dir, key))
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
	}
	return werr
}

// ClearFallback removes the record: the server decided an event. One
// unlink, which fails at once when there is no record.
func ClearFallback(dir, key string) { _ = os.Remove(FallbackPath(dir, key)) }

// ReadFallback reads the record; ok is false when there is none. A record
// that is not one (too large, not JSON) is an error.
func ReadFallback(dir, key string) (f Fallback, ok bool, err error) {
	file, err := os.Open(FallbackPath(dir, key))
	if errors.Is(err, fs.ErrNotExist) {
		return f, false, nil
	}
	if err != nil {
		return f, false, err
	}
	defer file.Close()
	raw, err := io.ReadAll(io.LimitReader(file, maxFallbackFile+1))
	if err != nil {
		return f, false, err
	}
	if len(raw) > maxFallbackFile {
		return f, false, errors.New("fall-back record larger than allowed")
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return f, false, err
	}
	f.Cause, f.Why = Printable(f.Cause), Printable(f.Why)
	f.Companion, f.Socket = Printable(f.Companion), Printable(f.Socket)
	return f, true, nil
}

// Printable replaces control and other non-printing characters of s by
// spaces, for a terminal.
func Printable(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return ' '
	}, s)
}
