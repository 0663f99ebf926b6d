package testrun

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/internal/proctree"
)

// Pending is what des keeps, at a Bash call's PreToolUse, of a call whose
// command runs a test runner: only a PostToolUse of a call des saw start,
// with the same command, is recorded, so that an event made up by hand
// (piped to des-hook by a command) records nothing.
type Pending struct {
	Command string    `json:"command_sha256"`
	At      time.Time `json:"at"`
	// Since is when the call began, in clock ticks after boot (less a
	// second), and Origin the processes above the hook then (Claude Code):
	// a PostToolUse hook of the same call runs under one of them, never
	// under a process the call started (proctree). Zero where the process
	// tree cannot be read.
	Since  uint64         `json:"since,omitempty"`
	Origin []proctree.Ref `json:"origin,omitempty"`
}

// pendingLifetime is how long a call's pending record waits for its
// PostToolUse: a longer call's run is not recorded.
const pendingLifetime = 24 * time.Hour

// CommandSum is the SHA-256 of a command, as Pending holds it.
func CommandSum(command string) string {
	sum := sha256.Sum256([]byte(command))
	return hex.EncodeToString(sum[:])
}

func (s Store) pendingPath(id string) (string, bool) {
	if !safeID(id) {
		return "", false
	}
	return filepath.Join(s.Dir, "pending", id+".json"), true
}

// Begin records that the call id, about to run command, runs a test
// runner. Records older than a day are dropped.
func (s Store) Begin(id, command string, p Pending) error {
	path, ok := s.pendingPath(id)
	if !ok {
		return errors.New("test run: a tool_use_id that cannot name a file")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	s.prunePending(p.At)
	p.Command = CommandSum(command)
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return fileio.WriteAtomic(path, data)
}

// Peek returns the pending record of the call id, if des saw it start
// with command.
func (s Store) Peek(id, command string) (Pending, bool) {
	path, ok := s.pendingPath(id)
	if !ok {
		return Pending{}, false
	}
	data, err := fileio.ReadBounded(path, 64<<10)
	var p Pending
	if err != nil || json.Unmarshal(data, &p) != nil || p.Command != CommandSum(command) {
		return Pending{}, false
	}
	return p, true
}

// Take removes the pending record of the call id: a call's run is
// recorded once. It reports whether this caller removed it.
func (s Store) Take(id string) bool {
	path, ok := s.pendingPath(id)
	return ok && os.Remove(path) == nil
}

// prunePending drops pending records older than pendingLifetime.
func (s Store) prunePending(now time.Time) {
	dir := filepath.Join(s.Dir, "pending")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		if fi, err := e.Info(); err == nil && now.Sub(fi.ModTime()) > pendingLifetime {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				continue
			}
		}
	}
}

// safeID reports whether a tool_use_id can name a file.
func safeID(id string) bool {
	if id == "" || len(id) > 200 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}
