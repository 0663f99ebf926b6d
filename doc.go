// Package des is the Deterministic Execution System: it makes multi-step AI
// coding-agent workflows deterministic by asking Rego policies, run in-process
// by OPA, whether a subagent may start, whether it left its step complete,
// whether a commit may land and whether a write to a workflow document is
// allowed.
//
// # Start here
//
//   - Build: [New] with options ([WithRoot], [WithConfig], [WithEnv],
//     [WithPolicyDirs], ...) reads the settings ([Config]: .des/config.json,
//     then DES_* environment variables; [LoadConfig]), compiles the
//     built-in policies with the team's own and opens the audit trail. It
//     fails with a [*ConfigError] for a bad setting, [policy.Errors]
//     (file:line:col) for a policy and a [*BundleError] for an
//     organisation bundle it cannot use.
//   - Run a gate: [Engine.PreInvocation] (Gate 1, before a subagent
//     starts), [Engine.CheckToolUse], [Engine.CheckWrite] and
//     [Engine.CheckBash] (before a tool call writes), [Engine.CheckStop]
//     (Gate 2, when it stops), [Engine.PreCommit] and [Engine.CheckCommit]
//     (Gate 3, before a commit), the phase guards [Engine.CheckSkill] and
//     [Engine.CheckCommitBranches], [Engine.CheckDelegation], and
//     [Engine.Evaluate] for any gate on an input of your own. An error means
//     des could not decide: where des was in charge, fail closed.
//   - Tell des what happened: [Engine.ConfirmWrite],
//     [Engine.ObserveSubagent], [Engine.SyncTaskGraph],
//     [Engine.CheckEffects], [Engine.RecordGitSync] and the subagent
//     registry ([Engine.SubagentStarted], [Engine.UserPrompt], ...).
//   - Compose your own flow: the methods ending in Gate
//     ([Engine.PreCommitGate], [Engine.SubagentStopGate],
//     [Engine.ToolUseGate], [Engine.DocumentWriteGate], ...) return package
//     gate's gates wired to the project's settings, without running them.
//   - Status and evidence: [Engine.Status], [Engine.StaleWork] and
//     [Engine.ResolveStale] ([ErrNothingToResolve]), [Engine.Escalations],
//     [Engine.ApproveTestEscalation] ([ErrNothingToApprove]),
//     [Engine.WriteTestIteration], [Engine.NextSteps]; without an Engine,
//     [StatusOf] and [BundleStatuses].
//   - Read the Engine: [Engine.Root], [Engine.Config], [Engine.Audit],
//     [Engine.Policy], [Engine.Catalogue], [Engine.Bundles],
//     [Engine.DecisionPoint].
//
// To decide Claude Code hook events, see package claudecode
// ([github.com/deterministic-exec/des/claudecode]).
//
// # How it decides
//
// Go gathers facts, Rego decides, Go carries out the decision: the gates in
// package gate build one input document per gate, package policy evaluates the
// gate's Rego entrypoint (des.gates.<gate>), and the Engine records what
// happened in the audit trail. An Engine is built once and is safe for
// concurrent use; a long-lived process that builds one per request (a
// decision server) shares the compiled policies through a [PolicyCache]
// ([WithPolicyCache]).
//
// Multi-phase workflows (iSDLC) are guarded by the same gates: where a
// workflow state document is found, Gate 1 judges every Agent, Task and Skill
// call against it, the branch guard judges git commits, and the observers
// read a finished subagent's response. Escalations are audited as
// PHASE_ESCALATION and listed by [Engine.Escalations].
//
// What users, policies, Claude Code and git see is described in the README
// and docs/reference.md. The hook built on this library is des-hook:
// examples/hook is the thin client Claude Code runs, and examples/des-engine
// (installed beside it) hands each event to package claudecode, runs the CLI
// subcommands and the warm decision server.
package des
