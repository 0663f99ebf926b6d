package des.gates.pre_commit

# METADATA
# title: Every step names its owner
# custom:
#   code: TEAM-OWNER
#   severity: deny
deny contains {"code": "TEAM-OWNER", "msg": sprintf("%s names no owner", [input.step.path]), "field": "/owner"} if {
	not input.step.document.owner
}
