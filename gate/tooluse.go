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
		writes[i] = map[string]any{"path": t.normalize(p), "tool": call.Tool}
	}
	d, err := ev.Evaluate(ctx, policy.ToolUse, map[string]any{"tool": call.Tool, "writes": writes})
	if err != nil {
		return res, err
	}
	res.Decision, res.Evaluated = d, true
	if res.Denied() && t.Audit != nil {
		paths := make([]any, len(writes))
		for i, w := range writes {
			paths[i] = w.(map[string]any)["path"]
		}
		err = t.Audit.Append(ctx, audit.Entry{Event: audit.DocumentWriteBlocked, Fields: map[string]any{
			"gate": string(policy.ToolUse), "tool": call.Tool, "paths": paths, "codes": d.Codes(),
		}})
		if err != nil {
			return res, fmt.Errorf("%w: %w", ErrNotRecorded, err)
		}
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

// normalize turns a path into the form policies see: slash-separated,
// relative to the root when inside it, absolute otherwise. Symbolic links
// are resolved as far as the path exists, so a link cannot hide a
// protected target.
func (t ToolUse) normalize(p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(t.Root, p)
	}
	p = resolveExisting(filepath.Clean(p))
	root := resolveExisting(t.Root)
	if rel, err := filepath.Rel(root, p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return filepath.ToSlash(rel)
	}
	return filepath.ToSlash(p)
}

// resolveExisting resolves symbolic links in the longest existing prefix of
// p and keeps the rest as written.
func resolveExisting(p string) string {
	rest := ""
	for cur := p; ; {
		resolved, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(resolved, rest)
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, os.ErrInvalid) {
			return p
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}
