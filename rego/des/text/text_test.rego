package des.text_test

import data.des.text

test_count_noun if {
	text.count_noun(1, "phase", "phases") == "1 phase"
	text.count_noun(0, "phase", "phases") == "0 phases"
	text.count_noun(14, "phase", "phases") == "14 phases"
	text.count_noun(1, "entry", "entries") == "1 entry"
}
