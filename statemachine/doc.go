// Package statemachine holds the workflow documents DES guards and the state
// machines their statuses follow.
//
// The transition tables are not written in Go: their single source is the
// policy bundle's data (data.des.transitions), which [ParseTables] reads, so
// a Rego rule and a Go caller can never disagree on which move is allowed.
//
// # Step files
//
// [ParseStep] and [ReadStep] read a step file (docs/reference.md, "Step file") into a [Step]:
// the fields DES reads, typed and read leniently (a field of the wrong type
// reads as absent), over an [Object] that keeps every member in its original
// order and spelling. DES's own edits ([Step.SetTaskStatus],
// [Step.SetFailure], [Step.ResetPhases]) change only what they name, and
// [Step.Marshal] re-emits the rest as it was, indented with two spaces.
// Obsolete layouts parse; the des.stepfile policy rejects them.
//
// # Schema
//
// [ValidateStep] checks a decoded step file against the embedded JSON Schema
// ([StepSchema], draft 2020-12), compiled on first use. The schema is loose,
// as documents are meant to be read: known fields have their types or are
// null (null counts as absent), unknown fields are allowed. It requires:
//   - a task id, task_id or task_specification.task_id, a non-empty string:
//     without one DES cannot name the task in messages or the audit trail;
//   - phase_name in every phase log entry: DES keys transitions, budgets and
//     the canonical-phase checks by it.
//
// It does not require tdd_cycle or a phase log: a configuration_setup step
// has no TDD cycle, and a missing or short log has its own codes
// (DES-COMMIT-INCOMPLETE, DES-SILENT-COMPLETION) with better messages than
// a schema error. Nor does it require state or a phase status: an absent
// status is simply not a known one, for the gates to judge. Status and outcome values
// are the documented ones only; the real nWave history fails mostly on those
// (NOT_STARTED, COMPLETED, SKIPPED outcomes...). Counts and durations must
// be ≥ 0, so a negative duration cannot pay back a timeout budget.
//
// # Writing and scanning
//
// [WriteFileAtomic] replaces a file through a synced temporary file and a
// rename. [ScanStale] lists phases left IN_PROGRESS too long in a steps
// directory, reading only the phase logs, fast enough to run before every
// subagent start.
package statemachine
