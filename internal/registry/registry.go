// Package registry keeps DES's record of the subagents of a project, in
// <root>/.des/sessions/ (a protected directory): which run now, which
// stopped last and how long it ran, and how many work calls the main
// thread made itself since the user's last prompt. Hooks run as separate
// processes, many at once; every change is an atomic file replacement or
// is made under a file lock whose wait is bounded, so nothing here hangs.
//
// It records facts and decides nothing: the concurrency limit and the
// delegation rule are Rego's (package des.delegation).
package registry

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
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/internal/filelock"
)

// Errors, wrapped with the detail.
var (
	ErrInvalidID    = errors.New("empty agent or session id")
	ErrUnknownAgent = errors.New("no such agent in the registry") // Stop of an agent whose start was not recorded
)

// DefaultLockWait bounds the wait for the counters' lock when the caller's
// context allows longer: a hook must answer, and a caller can fail open
// or closed on the error.
const DefaultLockWait = 2 * time.Second

// maxFile bounds what is read of one record: they are a few hundred bytes.
const maxFile = 64 << 10

// Writes is told of each file the registry writes or removes, before and
// after, so that a concurrent check of tool-call effects does not undo DES's
// own change to a protected directory. gate.Writes satisfies it.
type Writes interface {
	Expect(path string, data []byte) error // data nil: the file is removed
	Settle(ctx context.Context, path string) error
}

// Registry is the registry in one directory. Its zero LockWait means
// DefaultLockWait; Writes may be nil.
type Registry struct {
	dir      string
	LockWait time.Duration
	Writes   Writes
}

// Open returns the registry kept in dir (<root>/.des/sessions), created
// on the first write.
func Open(dir string) *Registry { return &Registry{dir: dir} }

// Agent is one subagent's record.
type Agent struct {
	ID        string    `json:"agent_id"`
	Type      string    `json:"agent_type,omitempty"`
	SessionID string    `json:"session_id,omitempty"`
	StartedAt time.Time `json:"started_at"`
	StoppedAt time.Time `json:"stopped_at,omitzero"` // zero while it runs
}

// Duration is how long the agent ran (0 while it runs).
func (a Agent) Duration() time.Duration {
	if a.StoppedAt.IsZero() || a.StartedAt.IsZero() {
		return 0
	}
	return a.StoppedAt.Sub(a.StartedAt)
}

// Start records that agent a started at now (a.StartedAt is set to now).
// A second Start of the same id replaces the record.
func (r *Registry) Start(a Agent, now time.Time) error {
	name, err := fileName("agent-", a.ID)
	if err != nil {
		return fmt.Errorf("registry start: %w", err)
	}
	a.StartedAt, a.StoppedAt = now.UTC(), time.Time{}
	return r.write(name, a)
}

// Stop records that agent id stopped at now and returns its record. A
// repeated Stop keeps the first stop time. The error wraps ErrUnknownAgent
// when no start was recorded (or it was pruned).
func (r *Registry) Stop(id string, now time.Time) (Agent, error) {
	name, err := fileName("agent-", id)
	if err != nil {
		return Agent{}, fmt.Errorf("registry stop: %w", err)
	}
	var a Agent
	if err := r.read(name, &a); errors.Is(err, fs.ErrNotExist) {
		return Agent{}, fmt.Errorf("registry stop %q: %w", id, ErrUnknownAgent)
	} else if err != nil {
		return Agent{}, fmt.Errorf("registry stop %q: %w", id, err)
	}
	if !a.StoppedAt.IsZero() {
		return a, nil
	}
	a.StoppedAt = now.UTC()
	return a, r.write(name, a)
}

// Running lists the agents that have not stopped and started less than
// ttl before now (ttl <= 0: no limit), oldest first: an agent whose stop
// was never seen counts for ttl at most.
func (r *Registry) Running(now time.Time, ttl time.Duration) ([]Agent, error) {
	all, err := r.agents()
	var out []Agent
	for _, a := range all {
		if a.StoppedAt.IsZero() && (ttl <= 0 || now.Sub(a.StartedAt) < ttl) {
			out = append(out, a)
		}
	}
	return out, err
}

// Last returns the agent that stopped last, and whether there is one.
func (r *Registry) Last() (Agent, bool, error) {
	all, err := r.agents()
	var last Agent
	for _, a := range all {
		if a.StoppedAt.After(last.StoppedAt) {
			last = a
		}
	}
	return last, !last.StoppedAt.IsZero(), err
}

// turn is a session's counter of the main thread's own work calls.
type turn struct {
	SessionID   string    `json:"session_id"`
	DirectCalls int       `json:"direct_calls"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// CountDirect counts one more work call of the main thread of session in
// this turn and returns the count, this call included (1 after a reset).
// The error wraps filelock.ErrHeld when the lock was not had in time.
func (r *Registry) CountDirect(ctx context.Context, session string, now time.Time) (int, error) {
	name, err := fileName("turn-", session)
	if err != nil {
		return 0, fmt.Errorf("registry count: %w", err)
	}
	unlock, err := r.lock(ctx)
	if err != nil {
		return 0, fmt.Errorf("registry count: %w", err)
	}
	defer unlock()
	var t turn
	if err := r.read(name, &t); err != nil && !errors.Is(err, fs.ErrNotExist) {
		// A damaged counter starts over rather than blocking every call.
		t = turn{}
	}
	t.SessionID, t.DirectCalls, t.UpdatedAt = session, t.DirectCalls+1, now.UTC()
	if err := r.write(name, t); err != nil {
		return 0, fmt.Errorf("registry count: %w", err)
	}
	return t.DirectCalls, nil
}

// ResetTurn starts a new turn of session (UserPromptSubmit): its count of
// direct calls goes back to 0.
func (r *Registry) ResetTurn(ctx context.Context, session string) error {
	name, err := fileName("turn-", session)
	if err != nil {
		return fmt.Errorf("registry reset: %w", err)
	}
	unlock, err := r.lock(ctx)
	if err != nil {
		return fmt.Errorf("registry reset: %w", err)
	}
	defer unlock()
	if err := r.remove(ctx, name); err != nil {
		return fmt.Errorf("registry reset: %w", err)
	}
	return nil
}

// Prune removes the records older than ttl (ttl <= 0: none): agents that
// stopped, or started and were never seen to stop, before now-ttl; turn
// counters last counted before then; unreadable records and leftover
// temporary files not modified since then. It returns how many files it
// removed.
func (r *Registry) Prune(ctx context.Context, now time.Time, ttl time.Duration) (int, error) {
	if ttl <= 0 {
		return 0, nil
	}
	entries, err := os.ReadDir(r.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	} else if err != nil {
		return 0, fmt.Errorf("registry prune: %w", err)
	}
	unlock, err := r.lock(ctx) // turn files change under the lock only
	if err != nil {
		return 0, fmt.Errorf("registry prune: %w", err)
	}
	defer unlock()
	cut, n := now.Add(-ttl), 0
	for _, e := range entries {
		name := e.Name()
		old := false
		switch {
		case strings.HasPrefix(name, "agent-") && strings.HasSuffix(name, ".json"):
			var a Agent
			if err := r.read(name, &a); err == nil {
				old = (!a.StoppedAt.IsZero() && a.StoppedAt.Before(cut)) || (a.StoppedAt.IsZero() && a.StartedAt.Before(cut))
			} else {
				old = modifiedBefore(e, cut)
			}
		case strings.HasPrefix(name, "turn-") && strings.HasSuffix(name, ".json"):
			var t turn
			if err := r.read(name, &t); err == nil {
				old = t.UpdatedAt.Before(cut)
			} else {
				old = modifiedBefore(e, cut)
			}
		case strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-"):
			old = modifiedBefore(e, cut)
		}
		if old {
			if err := r.remove(ctx, name); err == nil {
				n++
			}
		}
	}
	return n, nil
}

// Facts is the policy's input.registry: {"running": N, "agents":
// [{"agent_id", "agent_type", "started_at"}]}.
func Facts(running []Agent) map[string]any {
	agents := make([]any, 0, len(running))
	for _, a := range running {
		agents = append(agents, map[string]any{
			"agent_id": a.ID, "agent_type": a.Type, "started_at": a.StartedAt.Format(time.RFC3339Nano),
		})
	}
	return map[string]any{"running": len(running), "agents": agents}
}

// agents reads every agent record, oldest start first. Unreadable records
// are skipped (Prune removes them); the error is a directory that cannot
// be listed, and what could be read is returned with it.
func (r *Registry) agents() ([]Agent, error) {
	entries, err := os.ReadDir(r.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	var out []Agent
	for _, e := range entries {
		if name := e.Name(); strings.HasPrefix(name, "agent-") && strings.HasSuffix(name, ".json") {
			var a Agent
			if r.read(name, &a) == nil && a.ID != "" {
				out = append(out, a)
			}
		}
	}
	slices.SortFunc(out, func(a, b Agent) int {
		if c := a.StartedAt.Compare(b.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	if err != nil {
		return out, fmt.Errorf("registry: %w", err)
	}
	return out, nil
}

// lock takes the counters' lock, waiting at most LockWait.
func (r *Registry) lock(ctx context.Context) (func(), error) {
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return nil, err
	}
	wait := r.LockWait
	if wait <= 0 {
		wait = DefaultLockWait
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	path := filepath.Join(r.dir, "turns.lock")
	take := func() (*filelock.Lock, error) { return filelock.Acquire(ctx, path) }
	var l *filelock.Lock
	var err error
	if _, serr := os.Lstat(path); errors.Is(serr, fs.ErrNotExist) {
		// The lock file is des's own, created empty: announced like a
		// record, or a check after a call still counted as running (one
		// whose PostToolUse never came) would take it for that call's.
		err = r.announced(ctx, path, []byte{}, func() error {
			var aerr error
			l, aerr = take()
			return aerr
		})
	} else {
		l, err = take()
	}
	if err != nil {
		return nil, err
	}
	return func() { _ = l.Unlock() }, nil
}

func (r *Registry) read(name string, v any) error {
	data, err := fileio.ReadBounded(filepath.Join(r.dir, name), maxFile)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// write replaces one record atomically, telling r.Writes.
func (r *Registry) write(name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(r.dir, name)
	return r.announced(context.Background(), path, append(data, '\n'), func() error {
		return fileio.WriteAtomic(path, append(data, '\n'))
	})
}

func (r *Registry) remove(ctx context.Context, name string) error {
	path := filepath.Join(r.dir, name)
	return r.announced(ctx, path, nil, func() error {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	})
}

// announced runs do, telling r.Writes before and after; telling is best
// effort (failing to tell only risks a concurrent check undoing the change).
func (r *Registry) announced(ctx context.Context, path string, data []byte, do func() error) error {
	if r.Writes == nil {
		return do()
	}
	_ = r.Writes.Expect(path, data)
	err := do()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_ = r.Writes.Settle(sctx, path)
	return err
}

func modifiedBefore(e fs.DirEntry, t time.Time) bool {
	fi, err := e.Info()
	return err == nil && fi.ModTime().Before(t)
}

var plainID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`) })

// fileName names the record of an id: the id itself when it is plain
// (Claude Code's ids are hex), else its plain characters and a hash of the
// whole, so that no id ("../x", "a/b", "C:x") leads out of the directory
// or collides with another.
func fileName(prefix, id string) (string, error) {
	if id == "" {
		return "", ErrInvalidID
	}
	if plainID().MatchString(id) {
		return prefix + id + ".json", nil
	}
	var b strings.Builder
	for _, c := range id {
		if b.Len() >= 40 {
			break
		}
		if c < 128 && (c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	sum := sha256.Sum256([]byte(id))
	return prefix + b.String() + "~" + hex.EncodeToString(sum[:8]) + ".json", nil
}
