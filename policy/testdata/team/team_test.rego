package des.gates.pre_commit_test

import data.des.gates.pre_commit

test_owner_warned if {
	some w in pre_commit.warn with input as {"step": {"path": "s.json", "document": {}}}
	w.code == "TEAM-OWNER"
}

test_owner_present if {
	count(pre_commit.warn) == 0 with input as {"step": {"path": "s.json", "document": {"owner": "ann"}}}
}
