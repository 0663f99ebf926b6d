package des

import (
	"context"
	"path/filepath"
	"slices"
	"time"

	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/internal/statedir"
	"github.com/deterministic-exec/des/internal/testrun"
)

// SubagentStopGate returns Gate 2 for this project: run records in RunsDir,
// read back from DES's copy in the per-user state directory, transcripts
// read from the project or the user's Claude directory ($CLAUDE_CONFIG_DIR,
// else ~/.claude), and the gate2_on_failure setting.
func (e *Engine) SubagentStopGate() gate.SubagentStop {
	return gate.SubagentStop{
		Root:        e.root,
		Protected:   e.protectedDirs(),
		Audit:       e.audit,
		RunsDir:     filepath.Join(e.root, RunsDir),
		EvidenceDir: statedir.Evidence(e.stateDir),
		ClaudeDirs:  append([]string(nil), e.claudeDirs...),
		OnFailure:   e.cfg.Gate2OnFailure,
		Now:         e.now,
		Logger:      e.logger,
		Writes:      e.writes,
		Locks:       gate.DocumentLocks(e.cfg.TaskGraphFile, e.cfg.GuardedStateFiles),
		TestRuns:    e.testRunsOf,
	}
}

// testRunsOf is gate.SubagentStop.TestRuns: the attested test runs of
// des's evidence (internal/testrun) whose Gate 1 run is run. Until des has
// seen a test run in the project at all, it cannot tell a run without
// tests from a project whose test command it does not recognise (a
// runner missing from data.des.evidence.test_runners): nothing is judged
// then, rather than a warning at every stop.
func (e *Engine) testRunsOf(run string) ([]any, bool) {
	seen, _, err := e.testRunStore().Read()
	if err != nil || !slices.ContainsFunc(seen, func(s testrun.Seen) bool { return s.Attested && testrun.IsRun(s.Record) }) {
		return nil, false
	}
	var out []any
	for _, s := range seen {
		if !s.Attested || s.Belongs.Run != run || !testrun.IsRun(s.Record) {
			continue
		}
		f := map[string]any{"time": s.Time.UTC().Format(time.RFC3339Nano), "result": s.Result, "phase": s.Belongs.StepPhase, "command": s.Command}
		if s.Failed != nil {
			f["failed"] = *s.Failed
		}
		out = append(out, f)
	}
	return out, true
}

// CheckStop runs Gate 2 on a stopped subagent. A Go orchestrator that knows
// the step sets s.StepFile (relative to the root, or absolute) and may leave
// the rest empty; see [gate.SubagentStop.Check] for what it does.
func (e *Engine) CheckStop(ctx context.Context, s gate.Stop) (gate.StopResult, error) {
	return e.SubagentStopGate().Check(ctx, e, s)
}

// StopVerdict returns Gate 2's verdict on the subagent started by the
// Agent/Task call toolUseID (or, when that is not known, on agentID); nil
// when Gate 2 has not judged it.
func (e *Engine) StopVerdict(toolUseID, agentID string) (*gate.StopRecord, error) {
	return gate.ReadStopRecord(statedir.Evidence(e.stateDir), toolUseID, agentID)
}
