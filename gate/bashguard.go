package gate

import (
	"context"
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
	writes := t.bashWrites(docs, call)
	if len(writes) == 0 {
		return Result{Gate: policy.ToolUse}, nil
	}
	return t.evaluate(ctx, ev, "Bash", writes, map[string]any{"tool_use_id": call.ToolUseID, "session_id": call.SessionID})
}

// ConcernsBash reports whether a command may write a guarded document or
// one of DES's files: when CheckBash evaluates it, and when an error must
// fail closed.
func (t ToolUse) ConcernsBash(docs DocumentWrite, call BashCall) bool {
	return len(t.bashWrites(docs, call)) > 0
}

func (t ToolUse) bashWrites(docs DocumentWrite, call BashCall) []any {
	cwd := call.Cwd
	if cwd == "" {
		cwd = t.Root
	}
	opts := []shell.Option{shell.WithCwd(filepath.ToSlash(cwd))}
	if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) {
		opts = append(opts, shell.WithHome(filepath.ToSlash(home))) // ~ and $HOME may name the project
	}
	var out []any
	for _, w := range shell.Analyze(call.Command, opts...).Writes {
		p := w.Path
		if strings.HasPrefix(p, "~") || strings.Contains(p, "$HOME") || strings.Contains(p, "${HOME}") {
			continue // the user's home: outside what DES guards
		}
		if !filepath.IsAbs(p) {
			base := cwd
			if w.Dir != "" {
				base = w.Dir
				if !filepath.IsAbs(base) {
					base = cwd + string(filepath.Separator) + base
				}
			}
			p = base + string(filepath.Separator) + p
		}
		rel := ProjectPath(t.Root, p)
		document := docs.documentAt(rel)
		if document == "" && !t.coversProtected(rel) {
			continue
		}
		out = append(out, map[string]any{"path": rel, "tool": "Bash", "how": w.How, "document": document})
	}
	return out
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
