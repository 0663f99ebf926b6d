package des.integrity_test

import data.des.integrity

change(what, restored) := {"path": ".des/config.json", "kind": "file", "what": what, "was": "file", "now": "file", "restored": restored}

test_a_change_is_reported if {
	some v in integrity.deny with input as {"tool": "Bash", "integrity": {"changes": [change("modified", true)]}}
	v.code == "DES-INTEGRITY"
	contains(v.msg, ".des/config.json rewritten: restored")
	startswith(v.msg, "Bash changed")
}

test_a_failed_restore_names_the_error if {
	c := object.union(change("deleted", false), {"error": "disk full"})
	some v in integrity.deny with input as {"tool": "mcp__fs__write", "integrity": {"changes": [c]}}
	contains(v.msg, "NOT restored (disk full)")
}

test_no_change_no_report if {
	count(integrity.deny) == 0 with input as {"tool": "Bash", "integrity": {"changes": []}}
	count(integrity.deny) == 0 with input as {"tool": "Bash"}
	count(integrity.deny) == 0 with input as {}
}

test_a_kept_content_is_named if {
	c := object.union(change("modified", true), {"kept": "0a1b2c3d4e5f"})
	some v in integrity.deny with input as {"tool": "Bash", "integrity": {"changes": [c], "kept_dir": "/state/integrity/kept"}}
	contains(v.msg, "kept as 0a1b2c3d4e5f (`des-hook integrity restore 0a1b2c3d4e5f` takes it back)")
	contains(v.recovery[1], "/state/integrity/kept")
}

test_nothing_kept_says_accept if {
	some v in integrity.deny with input as {"tool": "Bash", "integrity": {"changes": [change("deleted", true)]}}
	contains(v.recovery[1], "des-hook integrity accept")
}
