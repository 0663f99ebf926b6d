# METADATA
# title: Team rules for Gate 3
package des.gates.pre_commit

# METADATA
# title: Step owner required
# custom:
#   code: TEAM-OWNER
#   severity: warn
warn contains {"code": "TEAM-OWNER", "msg": sprintf("step %s names no owner", [input.step.path]), "field": "/owner"} if {
	input.step.document
	not input.step.document.owner
}

# A team may waive a built-in code for this gate.
exception contains "DES-STEPFILE-OBSOLETE" if data.team.waive_obsolete
