package des.exceptions_test

import data.des.exceptions

test_nothing_refused_by_default if {
	count(exceptions.refused("pre_commit", {"DES-COMMIT-DEFERRED"})) == 0
}

test_exception_for_an_unwaivable_code_is_refused if {
	r := exceptions.refused("pre_commit", {"DES-COMMIT-DEFERRED", "DES-COMMIT-GAP"}) with data.des.exceptions.unwaivable as ["DES-COMMIT-GAP"]
	count(r) == 1
	some v in r
	v.code == "DES-EXCEPTION-REFUSED"
	v.refused_exception == "DES-COMMIT-GAP"
	v.unwaivable == true
	contains(v.msg, "des.gates.pre_commit")
	contains(v.recovery[0], `exception contains "DES-COMMIT-GAP"`)
}

# Each gate package denies when one of its exceptions names an unwaivable code.
test_pre_invocation_asks if {
	"DES-EXCEPTION-REFUSED" in {v.code | some v in data.des.gates.pre_invocation.deny} with data.des.gates.pre_invocation.exception as {"DES-X"}
		with data.des.exceptions.unwaivable as ["DES-X"]
		with input as {}
}

test_subagent_stop_asks if {
	"DES-EXCEPTION-REFUSED" in {v.code | some v in data.des.gates.subagent_stop.deny} with data.des.gates.subagent_stop.exception as {"DES-X"}
		with data.des.exceptions.unwaivable as ["DES-X"]
		with input as {}
}

test_pre_commit_asks if {
	"DES-EXCEPTION-REFUSED" in {v.code | some v in data.des.gates.pre_commit.deny} with data.des.gates.pre_commit.exception as {"DES-X"}
		with data.des.exceptions.unwaivable as ["DES-X"]
		with input as {}
}

test_document_write_asks if {
	"DES-EXCEPTION-REFUSED" in {v.code | some v in data.des.gates.document_write.deny} with data.des.gates.document_write.exception as {"DES-X"}
		with data.des.exceptions.unwaivable as ["DES-X"]
		with input as {}
}

test_tool_use_asks if {
	"DES-EXCEPTION-REFUSED" in {v.code | some v in data.des.gates.tool_use.deny} with data.des.gates.tool_use.exception as {"DES-X"}
		with data.des.exceptions.unwaivable as ["DES-X"]
		with input as {}
}
