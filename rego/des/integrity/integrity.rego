# METADATA
# title: Effects of tool calls
# description: |
#   After a tool call that can write files DES cannot read ahead of time
#   (Bash, NotebookEdit, MCP tools), DES compares its protected files and the
#   guarded documents with the baseline it keeps outside the project, and
#   restores what changed outside an allowed write, before any policy loads.
#   These rules word the report.
#   Input: input.tool, and input.integrity.changes[] with {path, kind, what,
#   was, now, restored, error}: path as in the audit trail (slash-separated,
#   relative to the project root when inside it); kind one of file, dir,
#   claude-settings, git-config; what one of modified, deleted, created,
#   type, mode, linked, hooks, hooks_path; kept, when set, the id under
#   which DES kept the content it undid. input.integrity.kept_dir is where
#   the kept contents are (DES's state directory).
package des.integrity

# How each change reads in a message.
describe := {
	"modified": "rewritten",
	"deleted": "deleted",
	"created": "created",
	"type": "replaced by another kind of file (a directory, a link)",
	"mode": "permissions changed",
	"linked": "given another hard link",
	"hooks": "settings that run DES or switch its protections off (hooks, the sandbox, env, deny rules, ...) changed",
	"hooks_path": "core.hooksPath (or an include) changed",
}

line(c) := sprintf("%s %s: %s%s", [c.path, object.get(describe, c.what, c.what), outcome(c), kept_text(c)])

kept_text(c) := sprintf("; what it held is kept as %s (`des-hook integrity restore %s` takes it back)", [c.kept, c.kept]) if c.kept

kept_text(c) := "" if not c.kept

_any_kept if {
	some c in input.integrity.changes
	c.kept
}

_kept_where := input.integrity.kept_dir if input.integrity.kept_dir

_kept_where := "DES's state directory" if not input.integrity.kept_dir

# The second recovery: nothing undone is lost when DES kept it.
_take_back := sprintf("Nothing undone is lost: DES kept it in %s (`des-hook integrity kept` lists it). If the user meant the change, the user runs `des-hook integrity restore ID` from a terminal of their own (not through Claude Code; it waits for no background job of the agent's, only for a call that is running), or makes it by hand between tool calls once the agent's commands have ended.", [_kept_where]) if _any_kept

_take_back := "If the user meant the change, the user makes it by hand between tool calls, or runs `des-hook integrity accept` afterwards." if not _any_kept

outcome(c) := "restored" if c.restored

outcome(c) := sprintf("NOT restored (%s)", [object.get(c, "error", "unknown error")]) if not c.restored

_files_text := "a file" if count(input.integrity.changes) == 1

_files_text := "files" if count(input.integrity.changes) != 1

# METADATA
# title: A protected file or guarded document changed outside an allowed write
# description: |
#   A tool call changed DES's own files, Claude Code's hook entries for DES,
#   git's pre-commit switch or a guarded workflow document behind the guards'
#   back; DES restored the last good state.
# custom:
#   code: DES-INTEGRITY
#   severity: deny
deny contains {
	"code": "DES-INTEGRITY",
	"msg": sprintf("%s changed %s DES protects outside an allowed write:\n%s", [input.tool, _files_text, concat("\n", sort([line(c) | some c in input.integrity.changes]))]),
	"recovery": [
		"Do not change DES's files, its hook settings or guarded documents from Bash, notebooks or MCP tools; write guarded documents with the Write or Edit tool, which DES checks.",
		_take_back,
	],
} if {
	count(input.integrity.changes) > 0
}
