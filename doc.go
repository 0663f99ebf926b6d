// Package des is the Deterministic Execution System: it makes multi-step AI
// coding-agent workflows deterministic by asking Rego policies, run in-process
// by OPA, whether a subagent may start, whether it left its step complete,
// whether a commit may land and whether a write to a workflow document is
// allowed.
//
// An [Engine] is built once with [New]: it reads the settings
// (.des/config.json, then DES_* environment variables), loads and compiles the
// built-in policy bundle with the team's own policies, and opens the audit
// trail. It is safe for concurrent use. A long-lived process that builds an
// Engine per request (a decision server) shares the compiled policies between
// them through a [PolicyCache] ([WithPolicyCache]).
//
// Go gathers facts, Rego decides, Go carries out the decision: the gates in
// package gate build one input document per gate, package policy evaluates the
// gate's Rego entrypoint (des.gates.<gate>), and the Engine records what
// happened in the audit trail.
//
// Multi-phase workflows (iSDLC) are guarded by the same gates: where a
// workflow state document is found, Gate 1 judges every Agent, Task and
// Skill call against it ([Engine.PreInvocation], [Engine.CheckSkill]), the
// branch guard judges git commits ([Engine.CheckCommitBranches]), and the
// observers read a finished subagent's response
// ([Engine.ObserveSubagent]). Escalations are audited as PHASE_ESCALATION
// and listed by [Engine.Escalations].
//
// What users, policies, Claude Code and git see is described in the README
// and docs/reference.md. The hook built on this package is des-hook:
// examples/des-engine is its engine (it decides hook events, runs the CLI
// subcommands and the warm decision server, installed as des-engine), and
// examples/hook is the thin client Claude Code runs (installed as des-hook
// beside it), which hands each event to the warm server or to des-engine.
package des
