# METADATA
# title: Writes behind the write guard's back
# description: |
#   A Bash command that writes a guarded workflow document (a step file or a
#   workflow state) skips the write guard, which sees only Write, Edit and
#   MultiEdit. Input: input.writes[] {path, tool, how, document, changes},
#   where Go sets document to "step" or "state" when the path is a guarded
#   document (another hard link of one counts as it), or a directory that
#   holds one, and "" otherwise. For the broad commands that change a file
#   only sometimes (how "chmod", "git checkout", "git restore"), changes
#   tells whether the command would change a guarded document or DES's
#   files: a mode that differs, content that differs from the index (or
#   the named tree); Go sets true whenever it cannot tell. Other writes
#   have no changes field. What Go can see of a command is limited: paths
#   built at run time ($VAR, $(...)) are not seen (internal/shell documents
#   the limits).
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
	object.get(w, "changes", true) != false # git checkout . that restores nothing is fine
}
