package des.gates.tool_use

# Two values for one complete rule: an evaluation error, not a violation.
level := "a" if input.x

level := "b" if input.x

deny contains {"code": "TEAM-LEVEL", "msg": level} if input.x
