# METADATA
# title: Writes behind the write guard's back
# description: |
#   A Bash command that writes a guarded workflow document (a step file or a
#   workflow state) skips the write guard, which sees only Write, Edit and
#   MultiEdit. Input: input.writes[] {path, tool, how, document}, where Go
#   sets document to "step" or "state" when the path is a guarded document
#   or a directory that may hold one, and "" otherwise. What Go can see of
#   a command is limited: paths built at run time ($VAR, $(...)) are not
#   seen (internal/shell documents the limits).
package des.bashwrite

# METADATA
# title: Bash writes a guarded document
# description: A Bash command writes a step file or a workflow state (redirect, tee, sed -i, cp/mv onto it, an interpreter opening it for writing, truncate, rm, ...).
# custom:
#   code: DES-STATE-BASH-WRITE
#   severity: deny
deny contains {
	"code": "DES-STATE-BASH-WRITE",
	"msg": sprintf("Bash would write %s (%s) through %q; %s files are changed only with Write, Edit or MultiEdit, which DES checks before they land", [w.path, w.document, w.how, w.document]),
	"field": "/tool_input/command",
	"recovery": [
		sprintf("Read %s, then change it with the Edit tool (or Write the whole document), so the write guard can check the change.", [w.path]),
		"Reading the file from Bash (cat, jq, grep) is fine; only writes are refused.",
	],
} if {
	some w in input.writes
	w.tool == "Bash"
	w.document != ""
}
