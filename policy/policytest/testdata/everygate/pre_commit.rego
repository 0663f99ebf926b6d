package des.gates.pre_commit

# A team rule that fires on every input, and a warning: the built-in tests
# must still pass beside them.
deny contains {"code": "TEAM-ALWAYS", "msg": "a team rule that always denies"}

warn contains {"code": "TEAM-ALWAYS-WARN", "msg": "a team rule that always warns"}

exception contains "DES-STEPFILE-OBSOLETE"
