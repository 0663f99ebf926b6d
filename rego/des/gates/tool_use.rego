# Tool use guard.
# Decides whether a tool call (Write, Edit, MultiEdit, Bash) may touch DES's own
# files or write a guarded document behind the write guard's back.
# Gathers the concern packages; a team adds rules to this package to extend the gate.
package des.gates.tool_use

deny contains v if some v in data.des.protected.deny

# After the call: what DES found changed and restored (input.integrity).
deny contains v if some v in data.des.integrity.deny

deny contains v if {
	input.tool == "Bash" # only Bash writes bypass the write guard
	some v in data.des.bashwrite.deny
}
