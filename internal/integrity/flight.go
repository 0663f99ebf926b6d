package integrity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/internal/proctree"
)

// A call in flight is a file in StateDir/integrity/inflight named by its
// tool_use_id. Its modification time is when it expires: a call whose End
// never comes (Claude Code killed during it) counts for its lifetime, then
// lapses, and the next Begin keeps the baseline so that the next End judges
// what it did. Its content, where the process tree can be read (Linux), is
// a flight: when the call started and which processes ran it, and, once
// End has run for a command that left processes running (a background
// job, a daemon), those processes. Such a call stays in flight for as long
// as one of them lives, however long that is, and lapses when the last
// ends: a write one of them makes an hour later is judged by the next
// check, never taken in as a person's edit between calls. A command that
// left nothing running ends at its End, however it was spelled ("Tom &
// Jerry" opens no window).

// runningNote says when a call stops counting as running.
const runningNote = "each counts until its PostToolUse, or while the processes it left run, or for 11 minutes where des cannot see processes"

// flight is the content of an in-flight record.
type flight struct {
	Since  uint64         `json:"since,omitempty"`  // clock ticks after boot when the call began (less a second)
	Origin []proctree.Ref `json:"origin,omitempty"` // the processes above the hook: Claude Code
	Left   []proctree.Ref `json:"left,omitempty"`   // the processes the command left running, set by End
	// Ended is set by the End of a call that stays in flight (what it left
	// runs on, or, without a process tree, for its fixed lifetime): EndOpen
	// leaves it alone.
	Ended bool `json:"ended,omitempty"`
}

// ended reports whether the call's End came: Left is only ever set by
// End (records written before Ended was).
func (f *flight) ended() bool { return f.Ended || len(f.Left) > 0 }

// originDepth is how many of the hook's parents count as the caller:
// Claude Code's shell wrapper, Claude Code, the SDK's host; not the
// terminal or service manager above them, which a person's programs share.
const originDepth = 3

// maxFlightSize bounds what is read of a record.
const maxFlightSize = 64 << 10

// newFlight describes a call starting now, nil when the process tree
// cannot be read or the client is unknown.
func (c *Checker) newFlight() *flight {
	if c.client <= 0 || !c.procs.Supported() {
		return nil
	}
	since, err := c.procs.Ticks(c.now().Add(-time.Second))
	if err != nil {
		return nil
	}
	up, err := c.procs.Ancestors(c.client)
	if err != nil || len(up) == 0 {
		return nil
	}
	f := &flight{Since: since}
	for _, p := range up[:min(originDepth, len(up))] {
		if p.PID > 1 {
			f.Origin = append(f.Origin, p.Ref)
		}
	}
	return f
}

func (c *Checker) flightPath(id string) string {
	return filepath.Join(c.dir, "inflight", safeName(id))
}

// readFlight reads the record at path: nil content for an old-style empty
// record or one that does not parse.
func readFlight(path string) *flight {
	data, err := fileio.ReadBounded(path, maxFlightSize)
	if err != nil || len(data) == 0 {
		return nil
	}
	var f flight
	if json.Unmarshal(data, &f) != nil {
		return nil
	}
	return &f
}

// status of a record now: running, or lapsed (its lifetime passed without
// an End, or every process it left has ended).
func (c *Checker) status(path string, fi fs.FileInfo, now time.Time) (running, lapsed bool) {
	if f := readFlight(path); f != nil && len(f.Left) > 0 {
		if slices.ContainsFunc(f.Left, c.procs.Alive) {
			return true, false
		}
		return false, true
	}
	if now.After(fi.ModTime()) {
		return false, true
	}
	return true, false
}

// inFlight lists the calls recorded as running, other than id, removing
// those that lapsed.
func (c *Checker) inFlight(id string) []string {
	running, lapsed := c.flights(id)
	for _, p := range lapsed {
		_ = os.Remove(p)
	}
	return running
}

// lapsed reports whether a call other than id is recorded as running but
// lapsed: its End never came, or the processes it left have all ended.
// inFlight then removes the record.
func (c *Checker) lapsed(id string) bool {
	_, lapsed := c.flights(id)
	return len(lapsed) > 0
}

// flights reads the records other than id's: the names of the calls
// running, and the paths of the records that lapsed.
func (c *Checker) flights(id string) (running, lapsed []string) {
	dir := filepath.Join(c.dir, "inflight")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil
	}
	now := c.now()
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil || e.Name() == safeName(id) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		switch run, lapse := c.status(path, fi, now); {
		case lapse:
			lapsed = append(lapsed, path)
		case run:
			running = append(running, e.Name())
		}
	}
	return running, lapsed
}

func (c *Checker) mark(id string, lifetime time.Duration) error {
	if lifetime <= 0 || lifetime > InFlightLifetime {
		lifetime = InFlightLifetime
	}
	dir := filepath.Join(c.dir, "inflight")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("integrity: %w", err)
	}
	var data []byte
	if f := c.newFlight(); f != nil {
		data, _ = json.Marshal(f)
	}
	p := c.flightPath(id)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		return fmt.Errorf("integrity: record the call in flight: %w", err)
	}
	until := c.now().Add(lifetime)
	if err := os.Chtimes(p, until, until); err != nil {
		return fmt.Errorf("integrity: record the call in flight: %w", err)
	}
	return nil
}

func (c *Checker) unmark(id string) {
	err := os.Remove(c.flightPath(id))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		c.logger.Warn("integrity: cannot clear the call in flight", "tool_use_id", id, "err", err)
	}
}

// leftGrace is how long End waits for what a command left running to end
// before the call counts as running on. Helpers that outlive their command
// by milliseconds end within it: the go command's telemetry child, which
// it starts detached in a configuration directory new to it, lives 2 to 7
// ms past it. What they wrote is then on disk for this End to judge, and
// the next call's Begin takes the disk again, as after any call.
const leftGrace = 300 * time.Millisecond

// leave records, at the End of a command that may have left something
// running, the processes it did leave: the call stays in flight while they
// live. It reports false when the call can end now: the process tree was
// read and nothing of the command runs on, or what ran on ended within
// leftGrace.
func (c *Checker) leave(ctx context.Context, call Call) bool {
	p := c.flightPath(call.ID)
	f := readFlight(p)
	if f == nil || f.Since == 0 {
		return true // no process tree: the fixed lifetime applies
	}
	// Not the hook or this process (the warm server); the hook's parents
	// started before the call.
	skip := map[proctree.Ref]bool{}
	if me, err := c.procs.Read(c.client); err == nil {
		skip[me.Ref] = true
	}
	if me, err := c.procs.Read(os.Getpid()); err == nil {
		skip[me.Ref] = true
	}
	root := c.root
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	running := func() ([]proctree.Ref, error) {
		all, err := c.procs.All()
		if err != nil {
			return nil, err
		}
		return c.procs.LeftRunning(all, proctree.Call{
			UID: os.Getuid(), Since: f.Since, Origin: f.Origin, Command: call.Command, Root: root,
			Skip: func(q proctree.Proc) bool { return skip[q.Ref] || c.ownBinary(q.Ref) },
		}), nil
	}
	left, err := running()
	if err != nil {
		return true
	}
	// Wait for those to end, then look again: one may have started another
	// before it ended (a chain that keeps doing so runs on past the grace).
	for deadline := time.Now().Add(leftGrace); len(left) > 0 && time.Now().Before(deadline) && c.endedBy(ctx, left, deadline); {
		if left, err = running(); err != nil {
			return true
		}
	}
	if len(left) == 0 {
		return false
	}
	slices.SortFunc(left, func(a, b proctree.Ref) int { return a.PID - b.PID })
	f.Left, f.Ended = left, true
	if err := rewriteFlight(p, f); err != nil && !errors.Is(err, fs.ErrNotExist) {
		c.logger.Warn("integrity: cannot record what the call left running; it counts for its fixed lifetime", "tool_use_id", call.ID, "err", err)
	}
	return true
}

// markEnded records that the End of a call that stays in flight came.
func (c *Checker) markEnded(id string) {
	p := c.flightPath(id)
	f := readFlight(p)
	if f == nil {
		f = &flight{}
	}
	if f.Ended {
		return
	}
	f.Ended = true
	if err := rewriteFlight(p, f); err != nil && !errors.Is(err, fs.ErrNotExist) {
		c.logger.Warn("integrity: cannot record that the call's End came", "tool_use_id", id, "err", err)
	}
}

// rewriteFlight replaces the record at p with f, keeping its modification
// time, which is the call's expiry. A record gone meanwhile stays gone.
func rewriteFlight(p string, f *flight) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	data, err := json.Marshal(f)
	if err != nil {
		return err
	}
	if err := fileio.WriteAtomic(p, data); err != nil {
		return err
	}
	_ = os.Chtimes(p, fi.ModTime(), fi.ModTime())
	return nil
}

// endedBy waits until every process of refs has ended, polling, and
// reports whether they did before deadline (and before ctx ended).
func (c *Checker) endedBy(ctx context.Context, refs []proctree.Ref, deadline time.Time) bool {
	const every = 5 * time.Millisecond
	for {
		if !slices.ContainsFunc(refs, c.procs.Alive) {
			return true
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(min(every, wait)):
		}
	}
}

// ownBinary reports whether r runs one of des's executables.
func (c *Checker) ownBinary(r proctree.Ref) bool {
	if len(c.own) == 0 {
		return false
	}
	exe := c.procs.Exe(r)
	return exe != "" && slices.Contains(c.own, exe)
}

// CallerInCall says whether the process pid belongs to a call in flight of
// this project, and which: a call with no processes left running
// (a command running now), or one whose left processes include pid or one
// of its parents. A person's terminal, started before the call and
// outside it, belongs to none, even while a background job of the agent's
// runs on: `des-hook integrity accept` then works. Without a process tree
// every call in flight counts.
func (c *Checker) CallerInCall(pid int) []string {
	return callerIn(filepath.Join(c.dir, "inflight"), c.procs, pid, c.now())
}

// callerIn is CallerInCall over the records in dir.
func callerIn(dir string, procs proctree.Tree, pid int, now time.Time) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var chain []proctree.Proc // pid, then its parents
	if procs.Supported() {
		if me, err := procs.Read(pid); err == nil {
			up, _ := procs.Ancestors(pid)
			chain = append([]proctree.Proc{me}, up...)
		}
	}
	var out []string
	for _, e := range ents {
		path := filepath.Join(dir, e.Name())
		fi, err := e.Info()
		if err != nil {
			continue
		}
		f := readFlight(path)
		if f == nil || len(f.Left) == 0 {
			if now.Before(fi.ModTime()) {
				out = append(out, e.Name())
			}
			continue
		}
		if !slices.ContainsFunc(f.Left, procs.Alive) {
			continue // lapsed: its processes ended
		}
		if len(chain) == 0 || descends(procs, chain, f) {
			out = append(out, e.Name())
		}
	}
	return out
}

// descends reports whether the process whose chain of parents is chain
// (itself first) comes from the call f: one of them is a process the call
// left running, or it is an orphan started since the call began, in a
// session that began with it (what a background job starts and leaves, its
// parent gone, is adopted by pid 1 or a user's service manager).
func descends(procs proctree.Tree, chain []proctree.Proc, f *flight) bool {
	for i, p := range chain {
		if slices.Contains(f.Left, p.Ref) {
			return true
		}
		if p.Start < f.Since || p.PID == 1 {
			return false
		}
		if i+1 < len(chain) {
			if parent := chain[i+1]; parent.Start < f.Since || parent.PID == 1 {
				if parent.PID != 1 && parent.Comm != "systemd" {
					return false
				}
				leader, err := procs.Read(p.SID)
				all := map[int]proctree.Proc{}
				if err == nil {
					all[leader.PID] = leader
				}
				return proctree.NewSession(all, p, f.Since)
			}
		}
	}
	return false
}

// CallsRunning lists the watched tool calls recorded as running in every
// project whose state is kept under base (statedir.Base), as
// "project-key/tool-use-id", that the process pid belongs to
// (CallerInCall). It reads without the projects' locks: a command that
// must not run inside an agent's call (adopting an audit witness) asks it
// first, whatever project root or audit directory it was pointed at.
func CallsRunning(base string, pid int, now time.Time) []string {
	dirs, _ := filepath.Glob(filepath.Join(base, "projects", "*", "integrity", "inflight"))
	var out []string
	for _, d := range dirs {
		key := filepath.Base(filepath.Dir(filepath.Dir(d)))
		for _, id := range callerIn(d, proctree.Tree{}, pid, now) {
			out = append(out, key+"/"+id)
		}
	}
	return out
}

// ProjectCallsRunning is CallsRunning for one project, whose state
// directory is dir: the tool_use_ids of its calls pid belongs to.
func ProjectCallsRunning(dir string, pid int, now time.Time) []string {
	return callerIn(filepath.Join(dir, "integrity", "inflight"), proctree.Tree{}, pid, now)
}

// safeName makes a tool_use_id a file name.
func safeName(id string) string {
	if id == "" {
		return "unknown"
	}
	ok := true
	for _, r := range id {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			ok = false
			break
		}
	}
	if ok && len(id) <= 128 {
		return id
	}
	return "h-" + hashOf([]byte(id))[:32]
}
