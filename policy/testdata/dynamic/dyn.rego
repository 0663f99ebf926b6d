package des.gates.tool_use

# Reaches another package through a reference built at run time.
deny contains {"code": "TEAM-DYN", "msg": "blocked by a team library"} if {
	some k
	data[k].blocked == true
}
