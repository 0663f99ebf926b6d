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
#   have no changes field. A target DES cannot know exactly (a path built
#   at run time, `.isdlc/$X`, or a glob, `stat?.json`) comes with dynamic:
#   true, path as written with each unknown part kept ($(...) for one DES
#   could not read), document the kind of guarded document it could name
#   ("" for none), and protected whether it could name DES's files (judged
#   by des.protected). Go's rule (gate.ToolUse): the literal directory is a
#   guarded glob's directory or in a protected root, or the literal start
#   begins such a path, or the literal last element is a guarded name. A
#   glob's existing matches come as ordinary writes besides. What Go can see
#   of a command is limited (internal/shell documents the limits); the
#   PostToolUse integrity check undoes what slips through.
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
	not w.dynamic
	w.document != ""
	object.get(w, "changes", true) != false # git checkout . that restores nothing is fine
}

# METADATA
# title: Bash may write a guarded document through a path it builds
# description: A Bash command writes a target DES cannot know before it runs (a variable, a command substitution, a glob) whose literal part could name a step file or a workflow state.
# custom:
#   code: DES-STATE-BASH-WRITE
#   severity: deny
deny contains {
	"code": "DES-STATE-BASH-WRITE",
	"msg": sprintf("Bash would write %s through %q; DES cannot know that path before the command runs, and it could be a %s file, which is changed only with Write, Edit or MultiEdit", [w.path, w.how, w.document]),
	"field": "/tool_input/command",
	"recovery": [
		"Write the path out literally in the command if it is not a workflow document, so DES can see where it goes.",
		"To change a step file or workflow state, Read it, then use the Edit tool (or Write the whole document).",
	],
} if {
	some w in input.writes
	w.tool == "Bash"
	w.dynamic
	w.document != ""
}
