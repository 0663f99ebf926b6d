# Document write guard.
# Decides whether a write to a workflow document (step file, workflow state) may land.
# Gathers the concern packages; a team adds rules to this package to extend the gate.
package des.gates.document_write

deny contains v if some v in data.des.stepfile.deny

deny contains v if some v in data.des.stepwrite.deny

deny contains v if some v in data.des.protected.deny

deny contains v if some v in data.des.statewrite.deny

warn contains v if some v in data.des.statewrite.warn
