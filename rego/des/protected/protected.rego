# METADATA
# title: Protected paths
# description: |
#   DES's own files: the policies that judge an agent, the settings, the audit
#   trail and DES's run records. A tool call must not write them.
#   Input: input.writes[] with {path, tool} and, for Bash's broad commands
#   (chmod, git checkout, git restore), changes: false when Go found that
#   the command would change none of DES's files, and dynamic: true for a
#   path DES cannot know (judged by des.bashwrite instead); paths are in the form of
#   gate.ProjectPath (symbolic links resolved, slash-separated, relative to
#   the project root when inside it, "." for the root, absolute otherwise),
#   and so are the configured directories in data.des.settings.config.
package des.protected

# The protected roots: .des/config.json, DES's run records, its subagent
# registry (.des/sessions), the organisation's kept bundles (.des/bundles),
# the decision logs not yet pushed (.des/decisions) and git's hooks
# directory (a pre-commit hook replaced switches Gate 3 off) always, plus the
# configured audit and policy directories, the phase requirement files
# (what the phase gates require), DES's per-user state directory
# (its last good copies) and the audit trail's witnesses (absolute, outside
# the project) and the files that run DES, such as the hook's binaries
# (protected_files, absolute), when Go names them
# (DES hands settings to policies clean and slash-separated). Kept to one
# array and built-ins: this rule runs on every write under a protected root,
# and user functions cost more.
roots := array.concat(
	array.concat(
		array.concat([".des/config.json", ".des/runs", ".des/sessions", ".des/bundles", ".des/decisions", ".git/hooks", data.des.settings.config.audit_dir], data.des.settings.config.policy_dirs),
		object.get(data.des.settings.config, "phase_requirements_files", []),
	),
	array.concat(
		[d | some k in ["state_dir", "witness_dir"]; d := object.get(data.des.settings.config, k, ""); d != ""],
		object.get(data.des.settings.config, "protected_files", []),
	),
)

# Files DES guards only in part, and the fact Go computes for a Write or Edit
# there: Claude Code's project settings, of which Claude Code rewrites the
# allow rules and the model itself, hold everything else that runs DES or
# code outside the sandbox (des_hooks_changed: hooks, disableAllHooks, the
# sandbox, deny rules, the permission mode, statusLine, env, helper
# commands); git's config, which git rewrites, holds core.hooksPath
# (hooks_path_changed). A Bash write to the
# settings files, whose effect Go cannot compute before it runs, is denied;
# git's config is left to the check after the call.
partial := {
	".claude/settings.json": {"fact": "des_hooks_changed", "what": "the hooks, the sandbox, env, statusLine, the deny rules and the other settings that run DES or switch its protections off (all but the allow rules and the model)", "bash": true},
	".claude/settings.local.json": {"fact": "des_hooks_changed", "what": "the hooks, the sandbox, env, statusLine, the deny rules and the other settings that run DES or switch its protections off (all but the allow rules and the model)", "bash": true},
	".git/config": {"fact": "hooks_path_changed", "what": "core.hooksPath (or an include)", "bash": false},
}

# METADATA
# title: Write to a protected DES path
# description: A tool call writes a policy directory, a phase requirement file, .des/config.json, the audit directory or DES's run records.
# custom:
#   code: DES-PROTECTED-PATH
#   severity: deny
deny contains {
	"code": "DES-PROTECTED-PATH",
	"msg": sprintf("%s may not write %s: DES protects %s so that an agent cannot change the rules or the evidence that judge it", [w.tool, w.path, concat(", ", covered)]),
	"field": "/tool_input/file_path",
	"recovery": [
		"Leave DES's files alone; ask the user to change policies, settings or the audit trail by hand.",
		sprintf("If %s is not meant to be protected, change the DES settings (policy_dirs, audit_dir) outside the agent session.", [w.path]),
	],
} if {
	some w in input.writes
	object.get(w, "changes", true) != false
	not w.dynamic # a path DES cannot know is judged by des.bashwrite

	# Paths end in "/" so that ".des/policies-old" is not under ".des/policies";
	# the root itself (".") becomes "", a prefix of everything.
	path := trim_prefix(concat("", [w.path, "/"]), "./")

	# A write covers a protected root when it is in it, or when it replaces
	# or removes a directory above it (rm -r .des): one is a prefix of the
	# other, and a prefix sorts before what extends it. Built-ins only: a
	# user function per root costs more than the whole rest of the rule.
	covered := [root |
		some root in roots
		pair := sort([path, concat("", [root, "/"])])
		startswith(pair[1], pair[0])
	]
	count(covered) > 0
}

# METADATA
# title: Change DES's hook entries or git's pre-commit switch
# description: |
#   A Write or Edit changes Claude Code's settings in anything but the
#   allow rules and the model (hooks, disableAllHooks, the sandbox, env,
#   statusLine, deny rules, the permission mode), or core.hooksPath in
#   git's config; a Bash command writes Claude Code's settings files. The
#   allow rules, the model and git's other settings are Claude Code's and
#   git's own, and allowed.
# custom:
#   code: DES-PROTECTED-PATH
#   severity: deny
deny contains {
	"code": "DES-PROTECTED-PATH",
	"msg": sprintf("%s may not change %s in %s: they are what runs DES and its pre-commit gate", [w.tool, p.what, file]),
	"field": "/tool_input/file_path",
	"recovery": [
		sprintf("Leave %s in %s as they are; the allow rules and the model may be changed with the Edit tool.", [p.what, file]),
		"If the user wants these settings changed, the user edits the file by hand between tool calls (`des-hook settings --write` puts DES's entries back).",
	],
} if {
	some w in input.writes
	some file, p in partial
	partial_write(w, file, p)
}

# METADATA
# title: Change the user's Claude Code settings
# description: |
#   A Write or Edit of the user's own Claude Code settings
#   (~/.claude/settings.json, or in CLAUDE_CONFIG_DIR), outside the project,
#   changes anything but the allow rules and the model: disableAllHooks
#   there switches DES off in every project. Go marks the write
#   (user_claude_settings) and computes des_hooks_changed.
# custom:
#   code: DES-PROTECTED-PATH
#   severity: deny
deny contains {
	"code": "DES-PROTECTED-PATH",
	"msg": sprintf("%s may not change %s in %s: they are what runs DES and its pre-commit gate", [w.tool, partial[".claude/settings.json"].what, w.path]),
	"field": "/tool_input/file_path",
	"recovery": [
		sprintf("Leave %s in %s as they are; the allow rules and the model may be changed with the Edit tool.", [partial[".claude/settings.json"].what, w.path]),
		"If the user wants these settings changed, the user edits the file by hand between tool calls.",
	],
} if {
	some w in input.writes
	object.get(w, "user_claude_settings", false) == true
	object.get(w, "des_hooks_changed", false) == true
}

# METADATA
# title: Set core.hooksPath in a git config file
# description: |
#   A Write or Edit of a git config file that can set core.hooksPath for the
#   project (Go sets git_config: the repository's config and config.worktree
#   files, ~/.gitconfig, $XDG_CONFIG_HOME/git/config, the files their
#   includes name) changes what git takes for core.hooksPath or an include
#   directive, as git itself reads the file after the write
#   (hooks_path_changed). Other changes (user.name, aliases) are allowed.
# custom:
#   code: DES-PROTECTED-PATH
#   severity: deny
deny contains {
	"code": "DES-PROTECTED-PATH",
	"msg": sprintf("%s may not change core.hooksPath (or an include) in %s: git would then run another pre-commit hook than DES's, which switches Gate 3 off", [w.tool, w.path]),
	"field": "/tool_input/file_path",
	"recovery": [
		sprintf("Leave core.hooksPath and the include directives in %s as they are; other settings in the file may be changed.", [w.path]),
		"If the user wants git's hooks elsewhere, the user changes core.hooksPath by hand and installs DES's hook there with `des-hook precommit --install`.",
	],
} if {
	some w in input.writes
	object.get(w, "git_config", false) == true
	object.get(w, "hooks_path_changed", false) == true
	not w.path in object.keys(partial) # reported by the rule above
}

partial_write(w, file, p) if {
	w.path == file
	object.get(w, p.fact, false) == true
}

# A Bash write to the file, or to a directory above it (rm -r .claude).
partial_write(w, file, p) if {
	p.bash
	w.tool == "Bash"
	object.get(w, "changes", true) != false
	startswith(concat("", [file, "/"]), trim_prefix(concat("", [w.path, "/"]), "./"))
}

# METADATA
# title: Bash may write DES's files through a path it builds
# description: A Bash command writes a target DES cannot know before it runs (a variable, a command substitution, a glob) whose literal part could name a policy, the settings, the audit trail or a run record; Go sets protected on such a write (des.bashwrite describes the dynamic input).
# custom:
#   code: DES-PROTECTED-PATH
#   severity: deny
deny contains {
	"code": "DES-PROTECTED-PATH",
	"msg": sprintf("Bash would write %s through %q; DES cannot know that path before the command runs, and it could be one of DES's own files, which an agent may not change", [w.path, w.how]),
	"field": "/tool_input/command",
	"recovery": [
		"Write the path out literally in the command, outside DES's directories, so DES can see where it goes.",
		"Leave DES's files alone; ask the user to change policies, settings or the audit trail by hand.",
	],
} if {
	some w in input.writes
	w.dynamic
	w.protected
}
