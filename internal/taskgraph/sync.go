package taskgraph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"time"

	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/internal/filelock"
	"github.com/deterministic-exec/des/internal/jsonsplice"
)

// Errors of Sync, wrapped with the path and the detail.
var (
	ErrUnknownPhase = errors.New("the task graph has no such phase")
	ErrInvalid      = errors.New("the task graph is not valid") // unusable JSON, schema errors, or a repeated phase_id
	ErrNotRegular   = errors.New("the task graph is not a regular file")
	ErrChanged      = errors.New("the task graph kept changing while it was being updated")
)

// LockWait bounds Sync's wait for the graph's lock when ctx has no earlier
// deadline: a stop hook must never hang on a stuck holder.
const LockWait = 5 * time.Second

// Outcome is how the subagent of a phase ended.
type Outcome struct {
	// GateFailed: Gate 2 failed the subagent and let it stop (its step
	// marked FAILED). A stop Gate 2 blocks sends the subagent back to work
	// and is no outcome: do not Sync it.
	GateFailed bool
	// Verdict is Verdict(last message). "FAIL" fails a verification
	// phase; of any other phase it is ignored.
	Verdict string
	// VerificationTypes are the phase types that are verifications (the
	// policies' data.des.taskgraph.verification_types, which a team may
	// extend); nil means "verification" alone.
	VerificationTypes map[string]bool
}

// verification reports whether a phase of type t is a verification.
func (o Outcome) verification(t string) bool {
	if o.VerificationTypes == nil {
		return t == TypeVerification
	}
	return o.VerificationTypes[t]
}

// Writes is told of the graph write before and after it, so that a
// concurrent check of tool-call effects takes it for DES's own write and
// does not restore the file. gate.Writes satisfies it.
type Writes interface {
	Expect(path string, data []byte) error
	Settle(ctx context.Context, path string) error
}

// Update is what one Sync did, for the TASK_GRAPH_UPDATED audit entry.
type Update struct {
	Path         string `json:"path"`
	PhaseID      string `json:"phase_id"`
	From         string `json:"from"` // status before (defaults applied)
	To           string `json:"to"`
	WaveBefore   int    `json:"wave_before"`
	WaveAfter    int    `json:"wave_after"`
	WaveAdvanced bool   `json:"wave_advanced"`
	// Reset is the phase a failed verification set back to pending, and
	// ResetRetries its retries after the increment.
	Reset        string `json:"reset_phase_id,omitempty"`
	ResetRetries int    `json:"reset_retries,omitempty"`
	// Changed is false when the graph already said all this (a repeated
	// stop): nothing was written.
	Changed bool `json:"changed"`
	Next    Next `json:"-"`
}

// Details is the update as an audit entry's details.
func (u Update) Details() map[string]any {
	d := map[string]any{
		"path": u.Path, "phase_id": u.PhaseID, "from": u.From, "to": u.To,
		"wave_before": u.WaveBefore, "wave_after": u.WaveAfter,
		"wave_advanced": u.WaveAdvanced, "changed": u.Changed,
	}
	if u.Reset != "" {
		d["reset_phase_id"], d["reset_retries"] = u.Reset, u.ResetRetries
	}
	return d
}

// Sync is the wave sync DES runs when the subagent of phase phaseID stops.
// Under the graph's lock (path + ".lock", left in place) it reads the
// graph, sets the phase completed, or failed when the outcome says so; a
// failed verification phase sets the phase it verifies back to pending and
// increments that phase's retries; when every phase of current_wave is then
// completed, current_wave advances by one (past any empty waves after it).
// It writes the result atomically (temporary file, fsync, rename, directory
// fsync), telling w (which may be nil) before and after.
//
// Sync is idempotent: a repeated stop finds the graph already updated and
// writes nothing (a failed verification resets the verified phase only
// while that phase is completed, so a second FAIL of one run counts once).
// Only the values Sync changes are rewritten; every other byte of the file,
// unknown fields and formatting included, stays as it was.
//
// Errors wrap ErrUnknownPhase; ErrInvalid (the graph is not valid JSON,
// fails the schema or repeats a phase_id: Sync never rewrites what it does
// not understand); ErrNotRegular (a symbolic link or a special file);
// ErrChanged (another writer kept replacing the file); fs.ErrNotExist; or
// filelock.ErrHeld when the lock was not had within ctx's deadline or
// LockWait. On any error the file is as it was.
func Sync(ctx context.Context, path, phaseID string, o Outcome, w Writes) (Update, error) {
	u := Update{Path: path, PhaseID: phaseID}
	// DES syncs outside Claude Code's sandbox, and the sandbox denies the
	// graph, not its directory: every step goes through the directory
	// opened here, so a directory (or link) the agent swaps in later
	// cannot carry the write elsewhere, and the graph is replaced by name
	// within it, never through a link.
	dir, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return u, fmt.Errorf("task graph sync %s: %w", path, err)
	}
	defer dir.Close()
	base := filepath.Base(path)
	fi, err := dir.Lstat(base)
	if err != nil {
		return u, fmt.Errorf("task graph sync %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return u, fmt.Errorf("task graph sync %s: %w (%s)", path, ErrNotRegular, fi.Mode().Type())
	}
	lctx, cancel := context.WithTimeout(ctx, LockWait)
	defer cancel()
	lk, err := filelock.Acquire(lctx, path+".lock")
	if err != nil {
		return u, fmt.Errorf("task graph sync %s: %w", path, err)
	}
	defer lk.Unlock()

	// A writer outside the lock (the orchestrator's own Write) may replace
	// the file between the read and the rename: Sync reads it again just
	// before writing and starts over when it changed, rather than lose
	// that write. The window left is the rename itself.
	var out []byte
	for attempt := 0; ; attempt++ {
		u = Update{Path: path, PhaseID: phaseID}
		data, err := readGraph(dir, base)
		if err != nil {
			return u, fmt.Errorf("task graph sync %s: %w", path, err)
		}
		if out, err = syncBytes(data, phaseID, o, &u); err != nil {
			return u, fmt.Errorf("task graph sync %s: %w", path, err)
		}
		if !u.Changed {
			return u, nil
		}
		again, err := readGraph(dir, base)
		if err == nil && bytes.Equal(again, data) {
			break
		}
		if attempt == 2 {
			return u, fmt.Errorf("task graph sync %s: %w", path, ErrChanged)
		}
	}
	if w != nil {
		_ = w.Expect(path, out) // best effort: failing to tell only risks a restore
	}
	werr := fileio.WriteAtomicAt(dir, base, out)
	if w != nil {
		sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		_ = w.Settle(sctx, path)
		scancel()
	}
	if werr != nil {
		return u, fmt.Errorf("task graph sync %s: %w", path, werr)
	}
	return u, nil
}

func readGraph(dir *os.Root, name string) ([]byte, error) {
	data, err := fileio.ReadBoundedIn(dir, name, MaxBytes)
	if errors.Is(err, fileio.ErrNotRegular) {
		return nil, fmt.Errorf("%w: %w", ErrNotRegular, err)
	}
	return data, err
}

// syncBytes is Sync on the file's bytes: it fills u and returns the new
// bytes (the input when nothing changes).
func syncBytes(data []byte, phaseID string, o Outcome, u *Update) ([]byte, error) {
	g, doc, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if errs := Validate(doc); len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, errors.Join(asErrors(errs)...))
	}
	if dup := g.Duplicates(); len(dup) > 0 {
		return nil, fmt.Errorf("%w: phase_id %q repeats", ErrInvalid, dup[0])
	}
	p, ok := g.Phase(phaseID)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownPhase, phaseID)
	}
	root, err := jsonsplice.Scan(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}

	to := StatusCompleted
	if o.GateFailed || (o.verification(p.Type) && o.Verdict == "FAIL") {
		to = StatusFailed
	}
	u.From, u.To, u.WaveBefore = p.Status, to, g.CurrentWave
	var edits []jsonsplice.Edit
	set := func(wi, pi int, key string, val string, docVal any) {
		ph := root.Get("waves").Elems[wi].Get("phases").Elems[pi]
		edits = append(edits, jsonsplice.Set(data, ph, key, val))
		wm := doc["waves"].([]any)[wi].(map[string]any)
		wm["phases"].([]any)[pi].(map[string]any)[key] = docVal
	}
	wi, pi := locate(g, phaseID)
	if p.Status != to {
		set(wi, pi, "status", strconv.Quote(to), to)
		g.Waves[wi].Phases[pi].Status = to
	}
	// A failed verification counts against the verified phase once per
	// implementation: only while that phase stands completed.
	if to == StatusFailed && o.verification(p.Type) && p.VerifiesPhaseID != "" {
		if vw, vp := locate(g, p.VerifiesPhaseID); vw >= 0 && g.Waves[vw].Phases[vp].Status == StatusCompleted {
			r := g.Waves[vw].Phases[vp].Retries + 1
			set(vw, vp, "status", strconv.Quote(StatusPending), StatusPending)
			set(vw, vp, "retries", strconv.Itoa(r), json.Number(strconv.Itoa(r)))
			g.Waves[vw].Phases[vp].Status, g.Waves[vw].Phases[vp].Retries = StatusPending, r
			u.Reset, u.ResetRetries = p.VerifiesPhaseID, r
		}
	}
	cw := g.CurrentWave
	if cw < len(g.Waves) && waveDone(g.Waves[cw]) {
		for cw++; cw < len(g.Waves) && len(g.Waves[cw].Phases) == 0; cw++ {
		}
		edits = append(edits, jsonsplice.Set(data, root, "current_wave", strconv.Itoa(cw)))
		doc["current_wave"] = json.Number(strconv.Itoa(cw))
		g.CurrentWave = cw
		u.WaveAdvanced = true
	}
	u.WaveAfter = g.CurrentWave
	u.Next = NextAfter(g, phaseID)
	if len(edits) == 0 {
		return data, nil
	}
	out, err := jsonsplice.Apply(data, edits)
	if err != nil {
		return nil, err
	}
	// The splice must give exactly the document intended; anything else is
	// a bug, and the graph is left alone rather than damaged.
	_, got, err := Parse(out)
	if err != nil || !reflect.DeepEqual(got, doc) {
		return nil, fmt.Errorf("internal error: the rewritten graph does not read back as intended")
	}
	u.Changed = true
	return out, nil
}

// locate finds a phase's wave and position; -1, -1 when absent.
func locate(g *Graph, id string) (int, int) {
	for wi, w := range g.Waves {
		for pi, p := range w.Phases {
			if p.PhaseID == id {
				return wi, pi
			}
		}
	}
	return -1, -1
}

// waveDone: every phase of the wave is completed.
func waveDone(w Wave) bool {
	for _, p := range w.Phases {
		if p.Status != StatusCompleted {
			return false
		}
	}
	return true
}

func asErrors(errs []SchemaError) []error {
	out := make([]error, 0, len(errs))
	for _, e := range errs {
		out = append(out, e)
	}
	return out
}
