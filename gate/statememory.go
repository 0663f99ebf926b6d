package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/internal/filelock"
	"github.com/deterministic-exec/des/statemachine"
)

// A workflow state's regression rules (V8) compare a write with the file on
// disk; two writes could then go down in steps (completed, then the key
// removed or an unknown status, then pending) with each step passing alone.
// So des remembers, per workflow-state document, the highest status each
// phase has reached since the current workflow started, and the highest
// phase index, outside the project (DocumentWrite.StateDir). The policy
// reads that memory as input.state.seen and computes the next one
// (data.des.statewrite.seen_next, the gate's info "state_seen"); Go keeps
// it. The memory moves only when a write des allowed is seen to have
// landed: at PostToolUse (Confirm), when the file holds exactly the allowed
// content, under a lock with a deadline, replaced atomically.

// stateMemoryLockTimeout bounds the wait for a memory file's lock: far
// below a hook's timeout, far above the microseconds a holder keeps it.
const stateMemoryLockTimeout = 2 * time.Second

// maxStateMemory bounds what is read of a memory file.
const maxStateMemory = 4 << 20

// stateMemory is a memory file: the document it is about (root-relative)
// and the policy's seen record.
type stateMemory struct {
	Path string         `json:"path"`
	Seen map[string]any `json:"seen"`
}

// pendingState is an allowed workflow-state write waiting for PostToolUse.
type pendingState struct {
	Path   string         `json:"path"`
	SHA256 string         `json:"sha256"`
	Seen   map[string]any `json:"seen"`
	// Document is the content allowed: a formatter hook may rewrite the
	// file before des's PostToolUse, and the same JSON value confirms.
	Document json.RawMessage `json:"document,omitempty"`
}

func (d DocumentWrite) memoryDir() string { return filepath.Join(d.StateDir, "statewrite") }

// memoryPath is the memory file of the document at rel.
func (d DocumentWrite) memoryPath(rel string) string {
	sum := sha256.Sum256([]byte(rel))
	return filepath.Join(d.memoryDir(), hex.EncodeToString(sum[:16])+".json")
}

// readSeen returns des's memory of the document at rel, nil when there is
// none (a first write, a new machine, no state directory). A memory file
// that cannot be read is an error: des cannot decide without it.
func (d DocumentWrite) readSeen(rel string) (map[string]any, error) {
	if d.StateDir == "" {
		return nil, nil
	}
	path := d.memoryPath(rel)
	raw, err := fileio.ReadBounded(path, maxStateMemory)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("des's memory of %s: %w", rel, err)
	}
	var m stateMemory
	if err := json.Unmarshal(raw, &m); err != nil || m.Seen == nil {
		return nil, fmt.Errorf("des's memory of %s (%s) does not parse (%v); remove the file to start it again from the document on disk", rel, path, err)
	}
	return m.Seen, nil
}

// pendState records the memory an allowed write would leave, to be kept
// once Confirm sees the write land. Without a tool use id to confirm by,
// it is kept at once (a Go caller that checks, then writes).
func (d DocumentWrite) pendState(ctx context.Context, toolUseID, rel string, content []byte, seen map[string]any) error {
	if d.StateDir == "" || seen == nil {
		return nil
	}
	if !safeID(toolUseID) {
		d.rememberWorkflow(ctx, rel, content)
		return d.keepSeen(ctx, rel, seen)
	}
	sum := sha256.Sum256(content)
	p := pendingState{Path: rel, SHA256: hex.EncodeToString(sum[:]), Seen: seen}
	if json.Valid(content) {
		p.Document = content
	}
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	dir := filepath.Join(d.memoryDir(), "pending")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return statemachine.WriteFileAtomic(filepath.Join(dir, toolUseID+".json"), data)
}

// confirmState keeps the memory of an allowed workflow-state write once the
// file holds the allowed content, formatting aside (landed). It returns
// whether it did, and otherwise what the file holds instead ("" when no
// state write was pending), audited as WRITE_NOT_CONFIRMED.
func (d DocumentWrite) confirmState(ctx context.Context, toolUseID string) (Confirmation, error) {
	if d.StateDir == "" || !safeID(toolUseID) {
		return Confirmation{}, nil
	}
	path := filepath.Join(d.memoryDir(), "pending", toolUseID+".json")
	raw, err := fileio.ReadBounded(path, maxStateMemory)
	if errors.Is(err, fs.ErrNotExist) {
		return Confirmation{}, nil
	}
	if err != nil {
		return Confirmation{}, err
	}
	defer os.Remove(path)
	var p pendingState
	if err := json.Unmarshal(raw, &p); err != nil {
		return Confirmation{}, fmt.Errorf("write guard: pending record %s: %w", path, err)
	}
	c, err := d.landed(ctx, toolUseID, "state_file", p.Path, p.SHA256, p.Document)
	if err != nil || !c.Confirmed {
		return c, err
	}
	d.rememberWorkflow(ctx, p.Path, p.Document)
	return c, d.keepSeen(ctx, p.Path, p.Seen)
}

// keepSeen replaces the memory of rel, under its lock.
func (d DocumentWrite) keepSeen(ctx context.Context, rel string, seen map[string]any) error {
	if err := os.MkdirAll(d.memoryDir(), 0o700); err != nil {
		return fmt.Errorf("des's memory of %s: %w", rel, err)
	}
	ctx, cancel := context.WithTimeout(ctx, stateMemoryLockTimeout)
	defer cancel()
	target := d.memoryPath(rel)
	lk, err := filelock.Acquire(ctx, target+".lock")
	if err != nil {
		return fmt.Errorf("des's memory of %s: %w", rel, err)
	}
	defer lk.Unlock()
	data, err := json.Marshal(stateMemory{Path: rel, Seen: seen})
	if err != nil {
		return err
	}
	if err := statemachine.WriteFileAtomic(target, data); err != nil {
		return fmt.Errorf("des's memory of %s: %w", rel, err)
	}
	return nil
}
