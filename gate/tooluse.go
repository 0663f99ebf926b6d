package gate

import (
	"context"
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
	// Claude Code's settings, hooks_path_changed for git's config).
	Facts map[string]any
}

// ToolUse is the tool_use gate: it asks des.gates.tool_use about tool calls
// that write DES's own files (contract DES-PROTECTED-PATH).
//
// Only calls that write under a protected root are evaluated: the .des
// directory and the configured policy and audit directories. Writes anywhere
// else cost no policy evaluation and get no opinion, so a team rule in
// des.gates.tool_use sees only writes under those roots.
type ToolUse struct {
	Root      string     // absolute project root
	Protected []string   // protected roots, absolute or relative to Root
	Audit     *audit.Log // where blocks are recorded; nil records nothing
}

// DESDir is DES's own directory in a project: always protected.
const DESDir = ".des"

// Concerns reports whether the call writes under a protected root, which is
// when the gate evaluates it and when an error must fail closed.
func (t ToolUse) Concerns(call ToolCall) bool {
	for _, p := range call.Paths {
		if t.protectedRoot(t.normalize(p)) {
			return true
		}
	}
	return false
}

// Check evaluates the gate for a call that Concerns DES; for any other call
// it returns a Result with Evaluated false and asks no policy. A denied call
// is recorded as DOCUMENT_WRITE_BLOCKED with its codes. When the decision
// was made but could not be recorded, Check returns the Result with an
// error wrapping ErrNotRecorded: the decision stands.
func (t ToolUse) Check(ctx context.Context, ev Evaluator, call ToolCall) (Result, error) {
	res := Result{Gate: policy.ToolUse}
	if !t.Concerns(call) {
		return res, nil
	}
	writes := make([]any, len(call.Paths))
	for i, p := range call.Paths {
		w := map[string]any{"path": t.normalize(p), "tool": call.Tool}
		for k, v := range call.Facts {
			w[k] = v
		}
		writes[i] = w
	}
	return t.evaluate(ctx, ev, call.Tool, writes, nil)
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
func (t ToolUse) normalize(p string) string { return ProjectPath(t.Root, p) }

// ProjectPath turns a path into the form DES hands policies: symbolic links
// resolved as the operating system would resolve them (a dangling link at
// the end is followed to its target, and "link/.." is taken after the
// link), then slash-separated and relative to root when inside it, else
// absolute. A relative path is relative to root.
func ProjectPath(root, p string) string {
	if !filepath.IsAbs(p) {
		p = root + string(filepath.Separator) + p // not Join: cleaning first would take "link/.." lexically
	}
	p = resolvePath(p, 0)
	r := resolvePath(root, 0)
	if rel, ok := within(r, p); ok {
		return rel // "." for the root itself
	}
	return filepath.ToSlash(p)
}

// maxLinks bounds link following, as the kernel's ELOOP does.
const maxLinks = 40

// resolvePath resolves the symbolic links of an absolute path in one walk
// from the root, as realpath does, with one lstat per element: elements
// that exist are resolved (a final link whose target does not exist yet is
// followed to it), and once an element is missing the rest is taken as
// written, ".." lexically.
func resolvePath(p string, depth int) string {
	sep := string(filepath.Separator)
	vol := filepath.VolumeName(p)
	resolved := vol + sep
	missing := false
	for _, part := range strings.Split(p[len(vol):], sep) {
		switch part {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, part)
		if missing {
			resolved = next
			continue
		}
		fi, err := os.Lstat(next)
		switch {
		case err != nil:
			missing, resolved = true, next
		case fi.Mode()&fs.ModeSymlink != 0 && depth < maxLinks:
			target, err := os.Readlink(next)
			if err != nil {
				resolved = next
				break
			}
			if !filepath.IsAbs(target) {
				target = resolved + sep + target
			}
			resolved = resolvePath(target, depth+1)
		default:
			resolved = next
		}
	}
	return resolved
}
