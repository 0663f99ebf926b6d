# METADATA
# title: Exceptions an organisation does not allow
# description: |
#   A team waives a code in a gate with an exception rule; an organisation
#   that publishes des's policies (a bundle, or an OPA server) can name codes
#   no exception may waive, in data.des.exceptions.unwaivable (des ships no
#   value, so the organisation's data file merges with des's policies in an
#   OPA server or bundle without a conflict). A rule cannot
#   remove an exception a team adds (partial sets only grow), so an exception
#   for such a code is itself a deny, which no exception can waive: the team
#   sees which of its rules to remove. The deny names the refused exception
#   (refused_exception): des then does not waive that code in the decision,
#   so the organisation's violation stands beside it. It is marked
#   "unwaivable": des never waives a violation so marked, so an exception
#   for DES-EXCEPTION-REFUSED itself changes nothing. Each gate package asks
#   refused with its own exception set.
package des.exceptions

# METADATA
# title: An exception for a code the organisation does not allow to be waived
# description: A gate's exception set names a code listed in data.des.exceptions.unwaivable.
# custom:
#   code: DES-EXCEPTION-REFUSED
#   severity: deny
refused(gate, exceptions) := {v |
	some code in exceptions
	code in data.des.exceptions.unwaivable
	v := {
		"code": "DES-EXCEPTION-REFUSED",
		"msg": sprintf("an exception in des.gates.%s would waive %s, which the organisation's policies do not allow to be waived (data.des.exceptions.unwaivable): the exception does not hold, and every %s decision is denied until it is removed", [gate, code, gate]),
		"refused_exception": code,
		"unwaivable": true,
		"recovery": [sprintf("remove the rule `exception contains %q` from your policies in package des.gates.%s (find it with: grep -rn %q .des/policies), or ask the organisation to take %s off data.des.exceptions.unwaivable", [code, gate, code, code])],
	}
}
