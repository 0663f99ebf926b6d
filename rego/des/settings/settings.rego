# METADATA
# title: Settings in force
# description: |
#   The project's settings as every built-in rule reads them: read
#   data.des.settings.config, never data.des.config directly.
#
#   Embedded, des puts the project's settings at data.des.config and the
#   input carries none. An OPA server that decides for many projects has
#   one data document, so des sends the project's settings with every
#   decision, at input.des_config; they are laid over the server's
#   data.des.config key by key.
#
#   An organisation pins a setting by naming it, with its value, in
#   data.des.settings_pinned (an object: setting name to value): a pinned
#   value wins over the project's, whichever way the settings arrived.
#   Go-side behaviour (timeouts, which files are guarded) still follows the
#   project's own settings; pinning decides what the policies see.
package des.settings

# METADATA
# title: The settings in force
# description: data.des.config, with input.des_config laid over it key by key, then data.des.settings_pinned.
config := object.union(object.union(data.des.config, _project), _pinned)

default _project := {}

_project := input.des_config if is_object(input.des_config)

default _pinned := {}

_pinned := data.des.settings_pinned if is_object(data.des.settings_pinned)

# METADATA
# title: Pinned settings the project asked to change
# description: |
#   The names of pinned settings whose value in input.des_config differs
#   from the pinned one, sorted: the project asked for something the
#   organisation does not allow. For messages and status; no gate denies on it.
overridden contains k if {
	some k, v in _project
	k in object.keys(_pinned)
	v != _pinned[k]
}
