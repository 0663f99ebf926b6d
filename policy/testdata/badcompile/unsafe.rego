package des.gates.pre_commit

deny contains {"code": "X", "msg": msg} if {
	input.step.path == p
}
