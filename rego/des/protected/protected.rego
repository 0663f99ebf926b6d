# METADATA
# title: Protected paths
# description: |
#   DES's own files: the policies that judge an agent, the settings, the audit
#   trail and DES's run records. A tool call must not write them.
#   Input: input.writes[] with {path, tool}; paths are slash-separated, relative
#   to the project root when inside it, absolute otherwise.
package des.protected

# Always protected, whatever the settings.
fixed := {".des/config.json", ".des/runs"}

# The protected roots: fixed ones plus the configured policy and audit directories.
roots contains root if some root in fixed

roots contains _clean(dir) if some dir in data.des.config.policy_dirs

roots contains _clean(data.des.config.audit_dir)

_clean(p) := trim_suffix(trim_prefix(p, "./"), "/")

_under(path, root) if path == root

_under(path, root) if startswith(path, concat("", [root, "/"]))

# METADATA
# title: Write to a protected DES path
# description: A tool call writes a policy directory, .des/config.json, the audit directory or DES's run records.
# custom:
#   code: DES-PROTECTED-PATH
#   severity: deny
deny contains {
	"code": "DES-PROTECTED-PATH",
	"msg": sprintf("%s may not write %s: it is under %s, which DES protects so that an agent cannot change the rules or the evidence that judge it", [w.tool, w.path, root]),
	"field": "/tool_input/file_path",
	"recovery": [
		"Leave DES's files alone; ask the user to change policies, settings or the audit trail by hand.",
		sprintf("If %s is not meant to be protected, change the DES settings (policy_dirs, audit_dir) outside the agent session.", [w.path]),
	],
} if {
	some w in input.writes
	some root in roots
	_under(_clean(w.path), root)
}
