# METADATA
# title: Status transitions
# description: |
#   The task and phase transition tables (docs/reference.md, "Step file"). The tables are
#   data (data.des.transitions.task and .phase, from data.json beside this file)
#   so that Go reads the same single source; these functions answer questions
#   about them for the concern packages.
package des.transitions

# METADATA
# title: Task move allowed
# description: True when the task table lists to as a successor of from.
task_move_allowed(from, to) if to in data.des.transitions.task[from]

# METADATA
# title: Phase move allowed
# description: True when the phase table lists to as a successor of from.
phase_move_allowed(from, to) if to in data.des.transitions.phase[from]

# METADATA
# title: Allowed task moves
# description: The successors of a task status, sorted; empty for unknown or terminal statuses.
task_moves(from) := sort(object.get(data.des.transitions.task, from, []))

# METADATA
# title: Allowed phase moves
# description: The successors of a phase status, sorted; empty for unknown or terminal statuses.
phase_moves(from) := sort(object.get(data.des.transitions.phase, from, []))

# METADATA
# title: Terminal phase status
# description: A known phase status with no successor.
phase_terminal(status) if count(data.des.transitions.phase[status]) == 0

# METADATA
# title: Terminal task status
# description: A known task status with no successor.
task_terminal(status) if count(data.des.transitions.task[status]) == 0
