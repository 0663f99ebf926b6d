package des

import (
	"context"
	"slices"

	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/internal/statedir"
)

// PreCommitGate returns Gate 3 for this project: it reads the Gate 2
// verdicts from the Engine's audit trail and records its decisions there.
func (e *Engine) PreCommitGate() gate.PreCommit {
	return gate.PreCommit{Root: e.root, Audit: e.audit, VerdictsDir: statedir.Evidence(e.stateDir)}
}

// StepFilesGate says which files of a commit Gate 3 judges: those the write
// guard guards (setting guarded_step_files), so that one setting decides
// both. Its Staged and BashCommit list what a commit holds.
func (e *Engine) StepFilesGate() gate.StepFiles {
	return gate.StepFiles{Root: e.root, Globs: slices.Clone(e.cfg.GuardedStepFiles)}
}

// PreCommit runs Gate 3 on step files as they are on disk (paths absolute
// or relative to the project root), recorded with source "library". See
// CheckCommit.
func (e *Engine) PreCommit(ctx context.Context, files ...string) (gate.CommitResult, error) {
	c := gate.Commit{Source: gate.SourceLibrary}
	for _, f := range files {
		c.Files = append(c.Files, gate.CommitFile{Path: f})
	}
	return e.CheckCommit(ctx, c)
}

// CheckCommit runs Gate 3 (des.gates.pre_commit) on the step files of a
// commit: their phase logs, and the Gate 2 verdicts the audit trail holds
// for them, read once. Each file's decision is recorded as
// COMMIT_VALIDATION_PASSED or COMMIT_VALIDATION_FAILED. The commit may land
// only when the result is not Denied. An error means Gate 3 could not
// decide (a file outside the project or unreadable, an unreadable audit
// trail, a policy error): refuse the commit, e.g. with gate.Internal.
// StepFiles lists what a commit holds.
func (e *Engine) CheckCommit(ctx context.Context, c gate.Commit) (gate.CommitResult, error) {
	return e.PreCommitGate().Check(ctx, e, c)
}
