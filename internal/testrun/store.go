package testrun

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/internal/filelock"
	"github.com/deterministic-exec/des/internal/statedir"
)

// Record is one test run des saw.
type Record struct {
	Time      time.Time `json:"time"`
	ToolUseID string    `json:"tool_use_id,omitempty"`
	SessionID string    `json:"session_id,omitempty"`
	AgentID   string    `json:"agent_id,omitempty"`
	AgentType string    `json:"agent_type,omitempty"`
	Event     string    `json:"event"`   // PostToolUse or PostToolUseFailure; EventApproval
	Command   string    `json:"command"` // the Bash line, at most 2 KiB
	Runner    string    `json:"runner"`  // the table's entry
	Argv      []string  `json:"argv"`    // the command that ran it
	// ExitCode is the line's exit status, as the event gives it (0 for
	// PostToolUse, "Exit code N" of PostToolUseFailure's error); absent
	// when unknown.
	ExitCode    *int     `json:"exit_code,omitempty"`
	Interrupted bool     `json:"interrupted,omitempty"`
	Result      string   `json:"result"`
	Passed      *int     `json:"passed,omitempty"`
	Failed      *int     `json:"failed,omitempty"`
	Skipped     *int     `json:"skipped,omitempty"`
	Coverage    *float64 `json:"coverage,omitempty"`
	Error       string   `json:"error,omitempty"`
	Signature   string   `json:"signature,omitempty"`
	Belongs     Belongs  `json:"belongs_to"`
}

// EventApproval is the Event of a record that is no test run: a person
// approved going on after a phase's test iterations were escalated
// (Record.Command holds their reason; Belongs the workflow and phase).
const EventApproval = "EscalationApproved"

// Other observations of an iSDLC workflow kept with the runs (no test
// runs): a user's reply during a phase (a prompt, or an answer to
// AskUserQuestion; Record.Runner says which, nothing of its text is
// kept), and a subagent that stopped during a phase (Record.AgentType; the
// constitutional verdict its last message states, if any, in
// Record.Result).
const (
	EventUserReply = "UserReply"
	EventAgentStop = "PhaseAgentStopped"
)

// IsRun reports whether r records a test run (not an approval or another
// observation).
func IsRun(r Record) bool {
	return r.Event != EventApproval && r.Event != EventUserReply && r.Event != EventAgentStop
}

// Belongs is what a test run belongs to, as des found it when the run
// ended. Empty fields: none found.
type Belongs struct {
	// The iSDLC workflow state in effect and its current phase.
	StateFile  string `json:"state_file,omitempty"`
	ISDLCPhase string `json:"isdlc_phase,omitempty"`
	// Workflow names the active workflow (its type and started_at,
	// isdlc.WorkflowID): a run counts for that workflow only.
	Workflow string `json:"workflow,omitempty"`
	// The nWave step the agent's run is on (Gate 1's run record, through
	// the subagent's binding), and its phase in progress.
	Run       string `json:"run,omitempty"`
	StepFile  string `json:"step_file,omitempty"`
	StepPhase string `json:"step_phase,omitempty"`
	// The task graph phase the agent's run was delegated.
	TaskPhase string `json:"task_phase,omitempty"`
}

// NewRecord makes the record of a run: the outcome of its output, the
// command bounded.
func NewRecord(command string, m Match, exit *int, interrupted bool, output string) Record {
	o := Parse(output, exit, interrupted)
	return Record{
		Command: bounded(command, maxCommand), Runner: m.Runner, Argv: m.Argv,
		ExitCode: exit, Interrupted: interrupted, Result: o.Result,
		Passed: o.Passed, Failed: o.Failed, Skipped: o.Skipped, Coverage: o.Coverage,
		Error: o.Error, Signature: o.Signature,
	}
}

// Store is the test runs of one project: append-only JSON Lines in dir
// (des's evidence directory, in the per-user state directory, which
// sandboxed Bash cannot write), each line
//
//	{"mac": HEX, "prev": HEX, "run": RECORD}
//
// where mac is HMAC-SHA256, under a key des made for the project (dir/key,
// 0600), of prev and the run's bytes as stored, and prev the mac of the
// line des wrote before it ("" for the first). A line someone else wrote
// (by hand, or by a Bash command run outside the sandbox that could not
// read the key) does not verify; a line des wrote, copied again, is a
// replay (its prev is not the last attested line's); a line removed
// breaks the chain (Report.Breaks). Only attested runs count. When the
// file passes MaxBytes it is renamed runs.1.jsonl (the one before is
// dropped) and a new one starts: at most twice MaxBytes are kept. A file
// someone else made larger is read from its end (MaxBytes and a line).
type Store struct {
	Dir      string
	MaxBytes int64 // 0: DefaultMaxBytes
}

// DefaultMaxBytes bounds a runs file: some 4000 runs.
const DefaultMaxBytes = 4 << 20

// Files in Store.Dir.
const (
	fileRuns    = "runs.jsonl"
	fileOld     = "runs.1.jsonl"
	fileKey     = "key"
	fileHead    = "head"
	fileLock    = "lock"
	keySize     = 32
	maxLineSize = 64 << 10
	macDomain   = "des-testrun-v1\n"
)

type line struct {
	MAC  string          `json:"mac"`
	Prev string          `json:"prev"`
	Run  json.RawMessage `json:"run"`
}

func (s Store) maxBytes() int64 {
	if s.MaxBytes > 0 {
		return s.MaxBytes
	}
	return DefaultMaxBytes
}

// Files are the paths of the files whose content makes what Read returns
// (the runs, the older runs, the head, the key): a reader that keeps a
// read while they are unchanged keys it by them.
func (s Store) Files() []string {
	out := make([]string, 0, 4)
	for _, name := range []string{fileRuns, fileOld, fileHead, fileKey} {
		out = append(out, filepath.Join(s.Dir, name))
	}
	return out
}

// Append records r, attested.
func (s Store) Append(ctx context.Context, r Record) error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return err
	}
	lock, err := filelock.Acquire(ctx, filepath.Join(s.Dir, fileLock))
	if err != nil {
		return err
	}
	defer lock.Unlock()
	key, err := s.key(true)
	if err != nil {
		return err
	}
	run, err := json.Marshal(r)
	if err != nil {
		return err
	}
	prev := ""
	if b, err := fileio.ReadBounded(filepath.Join(s.Dir, fileHead), 256); err == nil {
		prev = strings.TrimSpace(string(b))
	}
	l := line{MAC: mac(key, prev, run), Prev: prev, Run: run}
	data, err := json.Marshal(l)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if len(data) > maxLineSize {
		return fmt.Errorf("test run record of %d bytes: over %d", len(data), maxLineSize)
	}
	path := filepath.Join(s.Dir, fileRuns)
	if fi, err := os.Lstat(path); err == nil && fi.Size()+int64(len(data)) > s.maxBytes() {
		if err := os.Rename(path, filepath.Join(s.Dir, fileOld)); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|fileio.NoFollow|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s: %w", path, fileio.ErrNotRegular)
	}
	if err == nil {
		_, err = f.Write(data)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return fileio.WriteAtomic(filepath.Join(s.Dir, fileHead), []byte(l.MAC+"\n"))
}

// key reads the project's key, making it when create is set and there is
// none.
func (s Store) key(create bool) ([]byte, error) {
	path := filepath.Join(s.Dir, fileKey)
	b, err := fileio.ReadBounded(path, 1024)
	if err == nil {
		if len(b) != keySize {
			return nil, fmt.Errorf("%s: %d bytes, want %d", path, len(b), keySize)
		}
		return b, nil
	}
	if !errors.Is(err, fs.ErrNotExist) || !create {
		return nil, err
	}
	k := make([]byte, keySize)
	if _, err := rand.Read(k); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|fileio.NoFollow, 0o600)
	if err != nil {
		return nil, err
	}
	_, err = f.Write(k)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return k, err
}

func mac(key []byte, prev string, run []byte) string {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(macDomain))
	h.Write([]byte(prev))
	h.Write([]byte{'\n'})
	h.Write(run)
	return hex.EncodeToString(h.Sum(nil))
}

// Seen is one line of the store as read.
type Seen struct {
	Record
	Attested bool `json:"attested"`
}

// Report sums up a read.
type Report struct {
	Lines    int `json:"lines"`    // lines read
	Attested int `json:"attested"` // runs des recorded
	// NotAttested are lines that are not des's: unreadable, forged (their
	// mac does not verify) or replayed.
	NotAttested int `json:"not_attested"`
	// Breaks counts where a line des wrote is missing between two it
	// wrote (removed, or the older file rotated away before the first).
	Breaks int `json:"breaks"`
}

// Read returns the lines of the store, oldest first, each marked whether
// it attests. Without a key (des never recorded a run here) nothing does.
func (s Store) Read() ([]Seen, Report, error) {
	var rep Report
	key, err := s.key(false)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, rep, err
	}
	var out []Seen
	macs := map[string]bool{}
	last := ""
	first := true
	for _, name := range []string{fileOld, fileRuns} {
		data, cut, err := readTail(filepath.Join(s.Dir, name), s.maxBytes()+maxLineSize)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return out, rep, err
		}
		if cut {
			// Grown past what des writes (des rotates at MaxBytes): lines
			// someone else appended. Its end is read; a line des wrote
			// before it shows as a gap.
			rep.NotAttested++
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 0, 4096), maxLineSize)
		for sc.Scan() {
			raw := sc.Bytes()
			if len(bytes.TrimSpace(raw)) == 0 {
				continue
			}
			rep.Lines++
			var l line
			var seen Seen
			if json.Unmarshal(raw, &l) != nil || json.Unmarshal(l.Run, &seen.Record) != nil {
				rep.NotAttested++
				continue
			}
			ok := key != nil && hmac.Equal([]byte(mac(key, l.Prev, l.Run)), []byte(l.MAC)) && !macs[l.MAC]
			if ok && !first && l.Prev != last {
				// A line des wrote whose predecessor is not the last one
				// read: one removed between, or a line des wrote earlier
				// replayed (its predecessor was read before).
				if macs[l.Prev] || l.Prev == "" {
					ok = false // replayed: des wrote after it, elsewhere
				} else {
					rep.Breaks++
				}
			}
			if ok {
				macs[l.MAC], last, first = true, l.MAC, false
				seen.Attested = true
				rep.Attested++
			} else {
				rep.NotAttested++
			}
			out = append(out, seen)
		}
	}
	return out, rep, nil
}

// readTail reads the regular file at path, or its last limit bytes from
// the first whole line when it is larger (cut set).
func readTail(path string, limit int64) ([]byte, bool, error) {
	f, fi, err := fileio.OpenRegular(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	if fi.Size() <= limit {
		data, err := io.ReadAll(io.LimitReader(f, limit))
		return data, false, err
	}
	data := make([]byte, limit)
	if _, err := f.ReadAt(data, fi.Size()-limit); err != nil && !errors.Is(err, io.EOF) {
		return nil, true, err
	}
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		data = data[i+1:]
	}
	return data, true, nil
}

// DirIn is where the test runs are kept in des's evidence directory.
func DirIn(evidenceDir string) string { return filepath.Join(evidenceDir, "testruns") }

// StoreOf is the store of the project whose state directory is stateDir.
func StoreOf(stateDir string) Store { return Store{Dir: DirIn(statedir.Evidence(stateDir))} }
