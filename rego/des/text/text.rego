# METADATA
# title: Message wording
# description: |
#   Helpers that the rules share to word their messages: a count with its
#   noun in the singular for one and the plural otherwise.
package des.text

# METADATA
# title: A count and its noun
# description: |
#   count_noun(1, "phase", "phases") is "1 phase"; any other count takes
#   the plural: "0 phases", "14 phases".
count_noun(n, one, _) := sprintf("%v %s", [n, one]) if n == 1

count_noun(n, _, many) := sprintf("%v %s", [n, many]) if n != 1
