package des.gates.pre_commit

deny contains {"code": "X" if {
