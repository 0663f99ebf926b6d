package des.bashwrite_test

import data.des.bashwrite

bash(path, doc) := {"writes": [{"path": path, "tool": "Bash", "how": "redirect", "document": doc}]}

test_writes_to_guarded_documents if {
	some v in bashwrite.deny with input as bash(".isdlc/state.json", "state")
	v.code == "DES-STATE-BASH-WRITE"
	contains(v.msg, ".isdlc/state.json (state)")
	count(bashwrite.deny) == 1 with input as bash("docs/feature/x/steps/01-01.json", "step")
}

test_other_writes_are_fine if {
	count(bashwrite.deny) == 0 with input as bash("src/main.go", "")
	count(bashwrite.deny) == 0 with input as {"writes": [{"path": ".isdlc/state.json", "tool": "Write", "how": "", "document": "state"}]}
	count(bashwrite.deny) == 0 with input as {}
}

test_broad_commands_only_when_they_change_a_document if {
	unchanged := {"writes": [{"path": ".", "tool": "Bash", "how": "git checkout", "document": "state", "changes": false}]}
	count(bashwrite.deny) == 0 with input as unchanged
	changed := {"writes": [{"path": ".", "tool": "Bash", "how": "chmod", "document": "step", "changes": true}]}
	count(bashwrite.deny) == 1 with input as changed
}

dyn(path, doc, prot) := {"writes": [{"path": path, "tool": "Bash", "how": "redirect", "document": doc, "dynamic": true, "protected": prot}]}

test_dynamic_targets_that_could_name_des_files if {
	some v in bashwrite.deny with input as dyn(".isdlc/$X", "state", false)
	v.code == "DES-STATE-BASH-WRITE"
	contains(v.msg, "cannot know")
	count(bashwrite.deny) == 0 with input as dyn(".d$(...)", "", true) # des.protected's
	count(bashwrite.deny) == 1 with input as dyn(".des/$X", "state", true)
}

test_dynamic_targets_elsewhere_are_fine if {
	count(bashwrite.deny) == 0 with input as dyn("$OUT/report.json", "", false)
}
