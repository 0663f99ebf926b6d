# Gate 3, pre-commit.
# Decides whether a step file may be committed (git pre-commit, or a git commit run by an agent).
# Gathers the concern packages; a team adds rules to this package to extend the gate.
package des.gates.pre_commit

deny contains v if some v in data.des.stepfile.deny

deny contains v if {
	input.step
	some v in data.des.commit.deny
}
