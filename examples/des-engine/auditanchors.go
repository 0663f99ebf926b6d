package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/internal/decisionlog"
)

// auditAnchors gathers the heads of the trail recorded outside it, for
// `des-hook audit verify`: those the project's decision log recorded
// (des_audit_head of each event in .des/decisions) and the git notes des
// wrote on the commits (refs/notes/des-audit). show renders a path for the
// report. A source that cannot be read is named in problems and left out:
// the others are still checked.
func auditAnchors(ctx context.Context, root string, show func(string) string) (anchors []audit.Anchor, problems []string) {
	heads, err := decisionlog.AuditHeads(filepath.Join(root, filepath.FromSlash(des.DecisionsDir)))
	if err != nil {
		problems = append(problems, fmt.Sprintf("the decision log: %v", err))
	}
	for _, h := range heads {
		anchors = append(anchors, audit.Anchor{Dir: h.Dir, Host: h.Host, Seq: h.Seq, SHA256: h.SHA256, Time: h.Time,
			Source: fmt.Sprintf("the decision log %s:%d", show(h.File), h.Line)})
	}
	notes, err := gitAuditNotes(ctx, root)
	if err != nil {
		problems = append(problems, fmt.Sprintf("the git notes %s: %v", auditNotesRef, err))
	}
	return append(anchors, notes...), problems
}
