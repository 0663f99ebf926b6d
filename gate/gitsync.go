package gate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/internal/filelock"
	"github.com/deterministic-exec/des/policy"
)

// GitHead is where HEAD pointed: the commit, and the branch's full ref
// name unless HEAD was detached.
type GitHead struct {
	Commit string `json:"commit,omitempty"`
	Ref    string `json:"ref,omitempty"`
}

// GitSyncFile is a guarded document git changed honestly and the effect
// check took (internal/integrity's Synced).
type GitSyncFile struct {
	Path string `json:"path"`
	What string `json:"what"` // modified, created, deleted
	Was  string `json:"was"`  // SHA-256, or "absent"
	Now  string `json:"now"`  // SHA-256, or "absent"
	From string `json:"from"` // head, set_aside
	Kept string `json:"kept,omitempty"`
}

// GitSync is what git changed honestly during a tool call.
type GitSync struct {
	Tool        string
	ToolUseID   string
	SessionID   string
	AgentID     string
	GitCommands []string
	Before      GitHead
	After       GitHead
	Files       []GitSyncFile
}

// RecordGitSync records GIT_SYNC: guarded documents the effect check took
// as git left them instead of undoing them. Nothing to record without an
// audit trail or files.
func (t ToolUse) RecordGitSync(ctx context.Context, s GitSync) error {
	if t.Audit == nil || len(s.Files) == 0 {
		return nil
	}
	paths := make([]any, len(s.Files))
	files := make([]any, len(s.Files))
	for i, f := range s.Files {
		m := map[string]any{"path": f.Path, "what": f.What, "was": f.Was, "now": f.Now, "from": f.From}
		if f.Kept != "" {
			m["kept"] = f.Kept
		}
		paths[i], files[i] = f.Path, m
	}
	head := func(h GitHead) map[string]any {
		m := map[string]any{}
		if h.Commit != "" {
			m["commit"] = h.Commit
		}
		if h.Ref != "" {
			m["ref"] = h.Ref
		}
		return m
	}
	fields := map[string]any{"gate": string(policy.ToolUse), "tool": s.Tool, "paths": paths, "files": files,
		"head_before": head(s.Before), "head_after": head(s.After)}
	if len(s.GitCommands) > 0 {
		fields["git_commands"] = s.GitCommands
	}
	if s.ToolUseID != "" {
		fields["tool_use_id"] = s.ToolUseID
	}
	if s.SessionID != "" {
		fields["session_id"] = s.SessionID
	}
	withAgent(fields, s.AgentID)
	if err := t.Audit.Append(ctx, audit.Entry{Event: audit.GitSync, Fields: fields}); err != nil {
		return fmt.Errorf("%w: %w", ErrNotRecorded, err)
	}
	return nil
}

// ForgetStateMemory drops des's memory of the workflow-state document rel
// (V8's high-water marks, statememory.go): git replaced the document
// honestly (a checkout of another branch, a pull), or a person put a kept
// content back, so the memory of the old one no longer speaks for it. The
// next write is judged against the document on disk, as on a new machine.
// stateDir is the project's state directory; no memory is no error.
func ForgetStateMemory(ctx context.Context, stateDir, rel string) error {
	d := DocumentWrite{StateDir: stateDir}
	target := d.memoryPath(rel)
	if _, err := os.Lstat(target); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, stateMemoryLockTimeout)
	defer cancel()
	lk, err := filelock.Acquire(ctx, target+".lock")
	if err != nil {
		return fmt.Errorf("des's memory of %s: %w", rel, err)
	}
	defer lk.Unlock()
	if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("des's memory of %s: %w", rel, err)
	}
	return nil
}
