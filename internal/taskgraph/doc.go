// Package taskgraph reads and keeps the task graph of a delegating
// orchestrator (README, "Orchestration governance"): the plan document
// .claude/state/active_task_graph.json that runs phases in waves, with a
// verification phase after each implementation phase.
//
// It gathers facts and does DES's own bookkeeping, and decides nothing:
// whether a write of the graph or a delegation is allowed is Rego's
// (package des.taskgraph). Parse gives a typed view with the defaults
// applied; Validate checks the embedded JSON Schema; WriteFacts and
// InvocationFacts build the policy inputs; PhaseID and Verdict read a
// delegation prompt and a verifier's last message; Sync is the wave sync
// DES runs when a phase's subagent stops, and NextAfter says what the
// orchestrator should run after it.
//
// Identity of waves: current_wave is the position of a wave in waves[]
// (0-based), the "plan complete" value being len(waves); wave_id is a label
// that, in every graph the design shows, equals that position.
package taskgraph
