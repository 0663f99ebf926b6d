# Gate 3, pre-commit.
# Decides whether a step file may be committed (git pre-commit, or a git commit run by an agent).
# Gathers the concern packages; a team adds rules to this package to extend the gate.
# des.commit is asked only when the input holds what it judges: Gate 3's
# phase facts or Gate 2 verdicts (Go always hands both).
package des.gates.pre_commit

# METADATA
# title: The revision of des's built-in policies
# description: |
#   Read by des when an OPA server decides (setting opa_url): the server must
#   run the policies of the des release that gathered the facts.
builtin_revision := data.des.builtin.revision

# An exception for a code the organisation made unwaivable (des.exceptions).
# Read through data so a gate without exception rules still compiles;
# DES-EXCEPTION-REFUSED itself is waived by no exception (it is denied).
deny contains v if some v in data.des.exceptions.refused("pre_commit", {c | some c in data.des.gates.pre_commit.exception})

deny contains v if some v in data.des.stepfile.deny

deny contains v if {
	_commit_facts
	some v in data.des.commit.deny
}

_commit_facts if input.step.phases

_commit_facts if input.gate2
