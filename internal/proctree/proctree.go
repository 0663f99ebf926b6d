// Package proctree reads the process tree from a /proc file system: who
// started whom, and when. The effect check uses it to tell the processes an
// agent's tool call left running (a background job, a daemon) from a
// person's, and so to keep judging their writes for as long as they live
// rather than for a fixed time.
//
// A process is named by its pid and its start time together, so a pid the
// kernel reuses is never taken for the process that had it. Only Linux's
// /proc is read; elsewhere every call returns ErrUnsupported and callers
// keep their fixed-time rules.
package proctree

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// ErrUnsupported is returned where there is no Linux /proc to read.
var ErrUnsupported = errors.New("proctree: no /proc process tree on this system")

// Ref names one process for as long as it lives.
type Ref struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"` // clock ticks after boot (/proc/PID/stat field 22)
}

// Proc is what the tree holds of one process.
type Proc struct {
	Ref
	Comm   string // the command name, as the kernel keeps it (15 bytes at most)
	PPID   int
	SID    int // its session: the pid of the session's leader
	UID    int
	Zombie bool
}

// Tree reads processes from Dir ("/proc" when empty).
type Tree struct {
	Dir string
}

func (t Tree) dir() string {
	if t.Dir == "" {
		return "/proc"
	}
	return t.Dir
}

// Supported reports whether the tree can be read here.
func (t Tree) Supported() bool {
	if runtime.GOOS != "linux" {
		return false
	}
	_, err := os.Stat(filepath.Join(t.dir(), "self", "stat"))
	return err == nil
}

// Read returns process pid.
func (t Tree) Read(pid int) (Proc, error) {
	if runtime.GOOS != "linux" {
		return Proc{}, ErrUnsupported
	}
	dir := filepath.Join(t.dir(), strconv.Itoa(pid))
	data, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return Proc{}, err
	}
	p, err := parseStat(data)
	if err != nil {
		return Proc{}, fmt.Errorf("proctree: %s: %w", dir, err)
	}
	if fi, err := os.Stat(dir); err == nil {
		p.UID = ownerOf(fi)
	}
	return p, nil
}

// parseStat reads pid, state, ppid and starttime from /proc/PID/stat. The
// command name (field 2) may hold spaces and parentheses: fields are
// counted after its last ')'.
func parseStat(data []byte) (Proc, error) {
	open, end := bytes.IndexByte(data, '('), bytes.LastIndexByte(data, ')')
	if open < 0 || end < open {
		return Proc{}, errors.New("stat: no command name")
	}
	var p Proc
	var err error
	if p.PID, err = strconv.Atoi(strings.TrimSpace(string(data[:open]))); err != nil {
		return Proc{}, fmt.Errorf("stat: pid: %w", err)
	}
	f := strings.Fields(string(data[end+1:]))
	// f[0] is field 3 (state), f[1] field 4 (ppid), f[3] field 6 (session),
	// f[19] field 22 (starttime).
	if len(f) < 20 {
		return Proc{}, errors.New("stat: too few fields")
	}
	p.Comm = string(data[open+1 : end])
	p.Zombie = f[0] == "Z" || f[0] == "X"
	if p.PPID, err = strconv.Atoi(f[1]); err != nil {
		return Proc{}, fmt.Errorf("stat: ppid: %w", err)
	}
	if p.SID, err = strconv.Atoi(f[3]); err != nil {
		return Proc{}, fmt.Errorf("stat: session: %w", err)
	}
	if p.Start, err = strconv.ParseUint(f[19], 10, 64); err != nil {
		return Proc{}, fmt.Errorf("stat: starttime: %w", err)
	}
	return p, nil
}

// Alive reports whether r is still running: the pid exists with the same
// start time and is no zombie.
func (t Tree) Alive(r Ref) bool {
	p, err := t.Read(r.PID)
	return err == nil && p.Start == r.Start && !p.Zombie
}

// Ancestors returns pid's parent, its parent and so on up to pid 1
// (included), nearest first.
func (t Tree) Ancestors(pid int) ([]Proc, error) {
	p, err := t.Read(pid)
	if err != nil {
		return nil, err
	}
	var out []Proc
	for seen := 0; p.PPID > 0 && seen < 4096; seen++ {
		if p, err = t.Read(p.PPID); err != nil {
			return out, nil // the parent ended meanwhile: the chain stops there
		}
		out = append(out, p)
	}
	return out, nil
}

// All returns every process the tree can read, by pid.
func (t Tree) All() (map[int]Proc, error) {
	if runtime.GOOS != "linux" {
		return nil, ErrUnsupported
	}
	ents, err := os.ReadDir(t.dir())
	if err != nil {
		return nil, err
	}
	out := make(map[int]Proc, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, err := t.Read(pid); err == nil {
			out[pid] = p
		}
	}
	return out, nil
}

// ticksPerSecond is USER_HZ, which Linux fixes at 100 for every
// architecture's /proc interface.
const ticksPerSecond = 100

// Ticks converts a time to clock ticks after boot, as Start counts them.
func (t Tree) Ticks(at time.Time) (uint64, error) {
	boot, err := t.bootTime()
	if err != nil {
		return 0, err
	}
	d := at.Sub(boot)
	if d < 0 {
		return 0, nil
	}
	return uint64(d / (time.Second / ticksPerSecond)), nil
}

// bootTime is /proc/stat's btime.
func (t Tree) bootTime() (time.Time, error) {
	data, err := os.ReadFile(filepath.Join(t.dir(), "stat"))
	if err != nil {
		return time.Time{}, err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			s, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("proctree: btime: %w", err)
			}
			return time.Unix(s, 0), nil
		}
	}
	return time.Time{}, errors.New("proctree: no btime in /proc/stat")
}

// Exe is the resolved executable of r, "" when it cannot be read (another
// user's process, a kernel thread) or r is gone.
func (t Tree) Exe(r Ref) string {
	exe, err := os.Readlink(filepath.Join(t.dir(), strconv.Itoa(r.PID), "exe"))
	if err != nil || !t.Alive(r) {
		return ""
	}
	return strings.TrimSuffix(exe, " (deleted)")
}

// adopter reports whether p adopts orphans: pid 1, or a user's service
// manager (systemd --user is a child subreaper).
func adopter(p Proc) bool { return p.PID == 1 || p.Comm == "systemd" }

// NewSession reports whether p's session began at or after since: its
// leader started since then, or has ended. Claude Code runs each Bash
// command in a session of its own (the shell is its leader), which a job
// the command leaves keeps once the shell has exited, and so does a
// daemon's setsid; an orphan of some other program of the user's, started
// meanwhile, is in that program's older session.
func NewSession(all map[int]Proc, p Proc, since uint64) bool {
	leader, ok := all[p.SID]
	return !ok || leader.Start >= since || leader.Zombie
}

// ours tells an orphan of this Claude Code from one of another session of
// the same user running at the same time (a second project's dev server
// started meanwhile): Claude Code puts its own pid in the environment of
// every command its Bash tool runs (CLAUDE_PID). An orphan naming a Claude
// Code that is neither an origin nor a child of one is another's; one
// naming ours is ours;
// one naming none (its environment cleared, or another program's) is ours
// when its working directory is inside the project.
func (t Tree) ours(all map[int]Proc, p Proc, c Call, from map[Ref]bool) bool {
	env, _ := os.ReadFile(filepath.Join(t.dir(), strconv.Itoa(p.PID), "environ"))
	for kv := range bytes.SplitSeq(env, []byte{0}) {
		v, ok := bytes.CutPrefix(kv, []byte("CLAUDE_PID="))
		if !ok {
			continue
		}
		pid, err := strconv.Atoi(string(v))
		if err != nil {
			break
		}
		// The Claude Code above the hook, or one started by it (the Agent
		// SDK's host runs the CLI as its child, and the hook beside it).
		claude, found := all[pid]
		for r := range from {
			if r.PID == pid || found && r.PID == claude.PPID {
				return true
			}
		}
		return false
	}
	if c.Root == "" {
		return true
	}
	cwd, err := os.Readlink(filepath.Join(t.dir(), strconv.Itoa(p.PID), "cwd"))
	if err != nil {
		return true // unreadable: the safe side
	}
	cwd = strings.TrimSuffix(cwd, " (deleted)")
	return cwd == c.Root || strings.HasPrefix(cwd, c.Root+string(filepath.Separator))
}

// Call is what LeftRunning knows of a command a process of Origin ran.
type Call struct {
	UID     int    // the user whose processes count
	Since   uint64 // when the command started, in clock ticks after boot
	Origin  []Ref  // the processes that ran it: the hook's parents (Claude Code, its shell wrapper)
	Command string // its text, as its shell's command line holds it; "" matches none
	// Root is the project the command ran in (absolute, links resolved):
	// an orphan that says nothing of which Claude Code started it counts
	// only when it works inside the project.
	Root string
	// Skip leaves a process, and what only it started, out: des's own.
	Skip func(Proc) bool
}

// LeftRunning returns the processes in all that the command left running:
// of the user, started since the command did, and either orphans (their
// chain of parents, followed up past the processes that also started since,
// ends at pid 1 or a user's service manager, systemd --user, which adopt
// what a background job leaves once its shell has exited: "&" jobs, nohup
// and setsid daemons) or under Origin through a process whose command line
// holds the command (a shell Claude Code keeps running in the background).
// An orphan counts only in a session that began with the command
// (NewSession), and only when it is this Claude Code's (ours): another
// program's orphan, or another Claude Code session's, started meanwhile
// does not.
// Claude Code's other children (hooks, MCP servers) and a person's own
// programs, started from a terminal or an editor, are not.
func (t Tree) LeftRunning(all map[int]Proc, c Call) []Ref {
	from := map[Ref]bool{}
	for _, r := range c.Origin {
		from[r] = true
	}
	cmdMatch := map[int]bool{}
	runsCommand := func(p Proc) bool {
		if c.Command == "" {
			return false
		}
		if v, ok := cmdMatch[p.PID]; ok {
			return v
		}
		data, _ := os.ReadFile(filepath.Join(t.dir(), strconv.Itoa(p.PID), "cmdline"))
		v := strings.Contains(unquoted(string(bytes.ReplaceAll(data, []byte{0}, []byte{' '}))), unquoted(c.Command))
		cmdMatch[p.PID] = v
		return v
	}
	var out []Ref
	for _, p := range all {
		if p.UID != c.UID || p.Zombie || p.Start < c.Since || from[p.Ref] || c.Skip != nil && c.Skip(p) {
			continue
		}
		q, ok, viaCommand := p, false, runsCommand(p)
		for range 4096 {
			parent, found := all[q.PPID]
			if !found || c.Skip != nil && c.Skip(parent) {
				break
			}
			if parent.Start >= c.Since && parent.PID != 1 && !from[parent.Ref] {
				q = parent
				viaCommand = viaCommand || runsCommand(q)
				continue
			}
			ok = adopter(parent) && NewSession(all, p, c.Since) && t.ours(all, p, c, from) || from[parent.Ref] && viaCommand
			break
		}
		if ok {
			out = append(out, p.Ref)
		}
	}
	return out
}

// unquoted drops quotes and backslashes: a shell that runs a command through
// eval '...' holds it with its quotes escaped.
func unquoted(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\'' || r == '"' || r == '\\' {
			return -1
		}
		return r
	}, s)
}
