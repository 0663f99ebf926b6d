package gate

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/deterministic-exec/des/internal/shell"
	"github.com/deterministic-exec/des/policy"
)

// BashCall is a Bash command about to run.
type BashCall struct {
	Command   string
	Cwd       string // where it runs (Claude Code keeps a session's cwd); "" = the root
	ToolUseID string
	SessionID string
}

// CheckBash runs the tool_use gate on the files a Bash command may write
// (shell.Analyze): those that are, or are directories that may hold, a
// guarded document of docs or one of DES's protected files. A command that
// writes none of them is not evaluated. A denied command is recorded as
// DOCUMENT_WRITE_BLOCKED.
func (t ToolUse) CheckBash(ctx context.Context, ev Evaluator, docs DocumentWrite, call BashCall) (Result, error) {
	writes, err := t.bashWrites(ctx, docs, call, true)
	if err != nil {
		return Result{Gate: policy.ToolUse}, fmt.Errorf("tool_use: %w", err)
	}
	if len(writes) == 0 {
		return Result{Gate: policy.ToolUse}, nil
	}
	return t.evaluate(ctx, ev, "Bash", writes, map[string]any{"tool_use_id": call.ToolUseID, "session_id": call.SessionID})
}

// ConcernsBash reports whether a command may write a guarded document or
// one of DES's files: when CheckBash evaluates it, and when an error must
// fail closed. A written path DES cannot resolve (ErrTooManyLinks)
// concerns it.
func (t ToolUse) ConcernsBash(docs DocumentWrite, call BashCall) bool {
	writes, err := t.bashWrites(context.Background(), docs, call, false)
	return err != nil || len(writes) > 0
}

// bashWrites are the policy's input writes of a command: those of
// shell.Analyze that reach a guarded document or DES's files. With facts,
// the writes of broad commands (chmod, git checkout, git restore) carry
// "changes": whether they would change one of those files (wouldChange).
func (t ToolUse) bashWrites(ctx context.Context, docs DocumentWrite, call BashCall, facts bool) ([]any, error) {
	cwd := call.Cwd
	if cwd == "" {
		cwd = t.Root
	}
	var out []any
	a := shell.Analyze(call.Command)
	for _, w := range a.Writes {
		p := w.Path
		if strings.HasPrefix(p, "~") || strings.Contains(p, "$HOME") || strings.Contains(p, "${HOME}") {
			continue // the user's home: outside what DES guards
		}
		base := cwd
		if w.Dir != "" {
			base = w.Dir
			if !filepath.IsAbs(base) {
				base = cwd + string(filepath.Separator) + base
			}
		}
		if !filepath.IsAbs(p) {
			p = base + string(filepath.Separator) + p
		}
		rel, err := t.target(p)
		if err != nil {
			return nil, err
		}
		document := docs.documentAt(rel)
		if document == "" && !t.coversProtected(rel) {
			// Another hard link of a guarded document is that document.
			kind, doc, err := docs.documentLink(rel)
			if err != nil {
				return nil, err
			}
			if kind != "" {
				document, rel = kind, doc
			}
		}
		if document == "" && !t.coversProtected(rel) {
			continue
		}
		in := map[string]any{"path": rel, "tool": "Bash", "how": w.How, "document": document}
		if facts && changeFacts[w.How] {
			// A command DES could not parse may hide its mode or source.
			in["changes"] = a.ParseError != "" || t.wouldChange(ctx, docs, w, base, t.abs(rel))
		}
		out = append(out, in)
	}
	return out, nil
}

// documentAt is the kind of guarded document at rel, or of one that the
// directory at rel holds now (rm -r, cp -r onto it). Directories are looked
// into, boundedly, rather than judged by pattern: "**/steps/*.json" could
// match under any directory, and `rm -rf node_modules` must stay possible.
func (d DocumentWrite) documentAt(rel string) string {
	if kind, _ := d.Kind(rel); kind != "" {
		return kind
	}
	abs := filepath.Join(d.Root, filepath.FromSlash(rel))
	if filepath.IsAbs(filepath.FromSlash(rel)) {
		return ""
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return ""
	}
	kind, seen := "", 0
	_ = filepath.WalkDir(abs, func(p string, e fs.DirEntry, err error) error {
		if seen++; err != nil || kind != "" || seen > maxDirScan {
			return filepath.SkipAll
		}
		if e.IsDir() && p != abs && (e.Name() == ".git" || e.Name() == "node_modules" || e.Name() == "vendor") {
			return filepath.SkipDir
		}
		if !e.IsDir() {
			kind, _ = d.Kind(p)
		}
		return nil
	})
	return kind
}

// maxDirScan bounds the look into a directory a command writes as a whole.
const maxDirScan = 20000

// coversProtected reports whether a write at rel is in, or replaces a
// directory above, a protected root.
func (t ToolUse) coversProtected(rel string) bool {
	if t.protectedRoot(rel) || rel == "." {
		return true
	}
	for _, r := range append([]string{DESDir}, t.Protected...) {
		if strings.HasPrefix(t.normalize(r)+"/", rel+"/") {
			return true
		}
	}
	return false
}

// abs is the absolute path of a ProjectPath.
func (t ToolUse) abs(rel string) string {
	p := filepath.FromSlash(rel)
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(t.Root, p)
}
