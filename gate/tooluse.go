package gate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/policy"
)

// ToolCall is a tool call about to write files.
type ToolCall struct {
	Tool  string   // Write, Edit, MultiEdit, Bash, ...
	Paths []string // files it writes: absolute, or relative to the project root
	// Facts are added to each write the policy sees (des_hooks_changed for
	// Claude Code's settings; hooks_path_changed for git's config, with
	// git_config true for any git config file that can set core.hooksPath,
	// which makes the call DES's concern wherever the file is).
	Facts map[string]any
	// ToolUseID, SessionID and AgentID (set when a subagent makes the
	// call) are recorded with a block when not "".
	ToolUseID, SessionID, AgentID string
}

// ToolUse is the tool_use gate: it asks des.gates.tool_use about tool calls
// that write DES's own files (DES-PROTECTED-PATH).
//
// Only calls that write under a protected root are evaluated: the .des
// directory and the configured policy and audit directories. Writes anywhere
// else cost no policy evaluation and get no opinion, so a team rule in
// des.gates.tool_use sees only writes under those roots.
type ToolUse struct {
	Root      string     // absolute project root
	Protected []string   // protected roots, absolute or relative to Root
	Audit     *audit.Log // where blocks are recorded; nil records nothing
	// Self is the /proc directory of the process whose view paths are
	// resolved in ("/proc/1234"), for /proc/self and /proc/thread-self;
	// "" is this process's. The warm decision server sets its client's:
	// a write to /proc/self/cwd/.des/config.json names the hook's working
	// directory, not the server's.
	Self string
}

// DESDir is DES's own directory in a project: always protected.
const DESDir = ".des"

// Concerns reports whether the call writes under a protected root, which is
// when the gate evaluates it and when an error must fail closed. A path DES
// cannot resolve (ErrTooManyLinks), or whose other hard links it cannot
// finish looking for (ErrLinkScan), concerns it: it could name any file.
func (t ToolUse) Concerns(call ToolCall) bool {
	// The user's own Claude Code settings, outside the project, marked by
	// the caller: they can switch DES off everywhere.
	if call.Facts["user_claude_settings"] == true {
		return true
	}
	if call.Facts["git_config"] == true {
		return true // a git config file that can set core.hooksPath, wherever it is
	}
	for _, p := range call.Paths {
		rel, err := t.target(p)
		if err != nil || t.protectedRoot(rel) {
			return true
		}
	}
	return false
}

// Check evaluates the gate for a call that Concerns DES; for any other call
// it returns a Result with Evaluated false and asks no policy. A denied call
// is recorded as DOCUMENT_WRITE_BLOCKED with its codes. When the decision
// was made but could not be recorded, Check returns the Result with an
// error wrapping ErrNotRecorded: the decision stands. A path that cannot be
// resolved is an error wrapping ErrTooManyLinks (or ErrLinkScan), with
// nothing evaluated. A write to another hard link of a protected file is
// handed to the policy as a write to that file.
func (t ToolUse) Check(ctx context.Context, ev Evaluator, call ToolCall) (Result, error) {
	res := Result{Gate: policy.ToolUse}
	if !t.Concerns(call) {
		return res, nil
	}
	writes := make([]any, len(call.Paths))
	for i, p := range call.Paths {
		rel, err := t.target(p)
		if err != nil {
			return res, fmt.Errorf("tool_use: %w", err)
		}
		w := map[string]any{"path": rel, "tool": call.Tool}
		for k, v := range call.Facts {
			w[k] = v
		}
		writes[i] = w
	}
	extra := map[string]any{}
	if call.ToolUseID != "" {
		extra["tool_use_id"] = call.ToolUseID
	}
	if call.SessionID != "" {
		extra["session_id"] = call.SessionID
	}
	return t.evaluate(ctx, ev, call.Tool, writes, withAgent(extra, call.AgentID))
}

// withAgent adds agent_id to the fields of an audit entry when the call
// came from a subagent (agentID not ""), so that the trail tells which
// subagent did what; a main-thread call's entry has no agent_id. It
// returns fields.
func withAgent(fields map[string]any, agentID string) map[string]any {
	if agentID != "" {
		fields["agent_id"] = agentID
	}
	return fields
}

// target is the ProjectPath of the file a write to p changes: p resolved,
// or the protected file p is another hard link of.
func (t ToolUse) target(p string) (string, error) {
	rel, err := t.resolve(p)
	if err != nil || t.protectedRoot(rel) {
		return rel, err
	}
	linked, err := t.protectedLink(rel)
	if err != nil || linked == "" {
		return rel, err
	}
	return linked, nil
}

// evaluate asks des.gates.tool_use about writes and records a block as
// DOCUMENT_WRITE_BLOCKED with the paths and codes (and extra fields). When
// the decision was made but not recorded, the error wraps ErrNotRecorded.
func (t ToolUse) evaluate(ctx context.Context, ev Evaluator, tool string, writes []any, extra map[string]any) (Result, error) {
	res := Result{Gate: policy.ToolUse}
	d, err := ev.Evaluate(ctx, policy.ToolUse, map[string]any{"tool": tool, "writes": writes})
	if err != nil {
		return res, err
	}
	res.Decision, res.Evaluated = d, true
	if !res.Denied() || t.Audit == nil {
		return res, nil
	}
	paths := make([]any, len(writes))
	for i, w := range writes {
		paths[i] = w.(map[string]any)["path"]
	}
	fields := map[string]any{"gate": string(policy.ToolUse), "tool": tool, "paths": paths, "codes": d.Codes()}
	for k, v := range extra {
		fields[k] = v
	}
	if err := t.Audit.Append(ctx, audit.Entry{Event: audit.DocumentWriteBlocked, Fields: fields}); err != nil {
		return res, fmt.Errorf("%w: %w", ErrNotRecorded, err)
	}
	return res, nil
}

func (t ToolUse) protectedRoot(p string) bool {
	roots := append([]string{DESDir}, t.Protected...)
	for _, r := range roots {
		r = t.normalize(r)
		if p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

// normalize turns a path into the form policies see (ProjectPath).
func (t ToolUse) normalize(p string) string { return ProjectPathAs(t.Self, t.Root, p) }

// resolve is normalize for a path a tool writes: one DES cannot resolve is
// an error (ResolveProjectPath).
func (t ToolUse) resolve(p string) (string, error) { return ResolveProjectPathAs(t.Self, t.Root, p) }

// ProjectPath turns a path into the form DES hands policies: symbolic links
// resolved as the operating system would resolve them (a dangling link at
// the end is followed to its target, and "link/.." is taken after the
// link), then slash-separated and relative to root when inside it, else
// absolute. A relative path is relative to root.
//
// A path whose resolution follows more than 40 links (ErrTooManyLinks) is
// returned cleaned, its links unresolved: use ResolveProjectPath where that
// must be an error.
func ProjectPath(root, p string) string { return ProjectPathAs("", root, p) }

// ProjectPathAs is ProjectPath in the view of the process whose /proc
// directory is self (see ToolUse.Self; "" is this process).
func ProjectPathAs(self, root, p string) string {
	rel, err := ResolveProjectPathAs(self, root, p)
	if err != nil {
		if !filepath.IsAbs(p) {
			p = filepath.Join(root, p)
		}
		return filepath.ToSlash(filepath.Clean(p))
	}
	return rel
}

// ErrTooManyLinks is wrapped when resolving a path follows more than 40
// symbolic links in total, where the kernel gives up with ELOOP: a write
// through such a path fails, but DES cannot tell which file it names.
var ErrTooManyLinks = errors.New("too many levels of symbolic links")

// ResolveProjectPath is ProjectPath, with an error wrapping ErrTooManyLinks
// when p or root cannot be resolved within the kernel's link bound.
func ResolveProjectPath(root, p string) (string, error) { return ResolveProjectPathAs("", root, p) }

// ResolveProjectPathAs is ResolveProjectPath in the view of the process
// whose /proc directory is self ("" is this process).
func ResolveProjectPathAs(self, root, p string) (string, error) {
	if !filepath.IsAbs(p) {
		p = root + string(filepath.Separator) + p // not Join: cleaning first would take "link/.." lexically
	}
	r := walk{self: self}
	if err := r.resolve(root); err != nil {
		return "", err
	}
	// A path written below root is root's walk continued: root's
	// elements are looked at once, not again for p (the same result, as
	// the walk takes elements in order).
	w := walk{resolved: r.resolved, missing: r.missing, hops: r.hops, self: self}
	if rest, ok := strings.CutPrefix(p, root); ok && root != "" && (strings.HasPrefix(rest, string(filepath.Separator)) || rest == "") && filepath.IsAbs(root) {
		if err := w.walk(p, rest); err != nil {
			return "", err
		}
	} else if err := w.resolve(p); err != nil {
		return "", err
	}
	if rel, ok := within(r.resolved, w.resolved); ok {
		return rel, nil // "." for the root itself
	}
	return filepath.ToSlash(w.resolved), nil
}

// maxLinks bounds link following in one resolution, in total, as the
// kernel's ELOOP does (MAXSYMLINKS).
const maxLinks = 40

// resolvePath resolves the symbolic links of an absolute path in one walk
// from the root, as realpath does, with one lstat per element: elements
// that exist are resolved (a final link whose target does not exist yet is
// followed to it), and once an element is missing the rest is taken as
// written, ".." lexically. A link's target replaces it at the front of
// what is left to walk, so the work is linear in the path and the link
// targets read: at most maxLinks targets, each at most a few KiB. No
// deadline is needed; a path that needs more hops is an error.
func resolvePath(p string) (string, error) {
	var w walk
	if err := w.resolve(p); err != nil {
		return "", err
	}
	return w.resolved, nil
}

// walk is resolvePath's state: what is resolved so far, whether an element
// was missing (the rest is then taken as written), and the links followed.
type walk struct {
	resolved string
	missing  bool
	hops     int
	self     string // /proc/self stands for this directory; "" the OS decides
}

// resolve walks the absolute path p from the file system's root.
func (w *walk) resolve(p string) error {
	vol := filepath.VolumeName(p)
	*w = walk{resolved: vol + string(filepath.Separator), self: w.self}
	return w.walk(p, p[len(vol):])
}

// walk goes on from w through rest, a part of p (named in errors).
func (w *walk) walk(p, rest string) error {
	sep := string(filepath.Separator)
	todo := strings.Split(rest, sep)
	for len(todo) > 0 {
		part := todo[0]
		todo = todo[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			w.resolved = filepath.Dir(w.resolved)
			continue
		}
		next := filepath.Join(w.resolved, part)
		if w.missing {
			w.resolved = next
			continue
		}
		if w.self != "" && (next == "/proc/self" || next == "/proc/thread-self") {
			// The kernel would answer with this process's pid; the
			// view is another process's. Its main thread stands for
			// thread-self: the threads of a process share cwd and root.
			if w.hops++; w.hops > maxLinks {
				return fmt.Errorf("resolve %s: %w", p, ErrTooManyLinks)
			}
			w.resolved = w.self
			if part == "thread-self" {
				w.resolved = filepath.Join(w.self, "task", filepath.Base(w.self))
			}
			continue
		}
		fi, err := os.Lstat(next)
		if err != nil {
			w.missing, w.resolved = true, next
			continue
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			w.resolved = next
			continue
		}
		if w.hops++; w.hops > maxLinks {
			return fmt.Errorf("resolve %s: %w", p, ErrTooManyLinks)
		}
		target, err := os.Readlink(next)
		if err != nil {
			w.resolved = next // vanished or unreadable: taken as written
			continue
		}
		if tv := filepath.VolumeName(target); filepath.IsAbs(target) {
			w.resolved, target = tv+sep, target[len(tv):]
		}
		todo = append(strings.Split(target, sep), todo...)
	}
	return nil
}
