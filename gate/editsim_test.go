package gate_test

import (
	"testing"

	"github.com/deterministic-exec/des/gate"
)

// The write guard replays Claude Code's Edit normalisation, so that what it
// judges is what lands.
func TestIncomingFollowsClaudeCodeEditNormalisation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, path, disk string
		edits            []gate.Edit
		want             string
		ok               bool
	}{
		{"curly old_string matches straight quotes", "s.json", `{"status": "completed"}`,
			[]gate.Edit{{Old: "“status”: “completed”", New: `"status": "pending"`}}, `{"status": "pending"}`, true},
		{"straight old_string matches curly quotes, new_string takes the file's style", "notes.md", "She said “done” and left.",
			[]gate.Edit{{Old: `said "done"`, New: `said "not yet"`}}, "She said “not yet” and left.", true},
		{"apostrophes and opening single quotes", "notes.md", "It’s ‘fine’.",
			[]gate.Edit{{Old: "It's 'fine'", New: "It's 'great' ('really')"}}, "It’s ‘great’ (‘really’).", true},
		{"trailing white space of new_string is dropped outside Markdown", "s.json", "a\nb\n",
			[]gate.Edit{{Old: "a", New: "x  \t\ny "}}, "x\ny\nb\n", true},
		{"kept in Markdown", "n.md", "a\n", []gate.Edit{{Old: "a", New: "x  "}}, "x  \n", true},
		{"desanitised old_string and new_string", "p.txt", "<name>a</name>",
			[]gate.Edit{{Old: "<n>a</n>", New: "<n>b</n>"}}, "<name>b</name>", true},
		{"an empty new_string deletes the line break too", "s.txt", "a\nb\nc\n",
			[]gate.Edit{{Old: "b", New: ""}}, "a\nc\n", true},
		{"the quote-normalised match must be unique", "s.json", `"a" "a"`,
			[]gate.Edit{{Old: "“a”", New: "b"}}, "", false},
		{"replace_all with a curly old_string", "s.json", `"a" "a"`,
			[]gate.Edit{{Old: "“a”", New: "b", ReplaceAll: true}}, "b b", true},
		{"MultiEdit: each edit against the result of the one before", "s.json", `{"x": "completed", "y": "completed"}`,
			[]gate.Edit{{Old: "“x”: “completed”", New: `"x": "pending"`}, {Old: "“y”: “completed”", New: `"y": "in_progress"`}}, `{"x": "pending", "y": "in_progress"}`, true},
		{"still not there", "s.json", `{"a": 1}`, []gate.Edit{{Old: "“b”", New: "c"}}, "", false},
	}
	for _, c := range cases {
		got, ok := gate.Incoming(gate.WriteCall{Path: c.path, Edits: c.edits}, []byte(c.disk))
		if ok != c.ok || string(got) != c.want {
			t.Errorf("%s: Incoming = %q, %v; want %q, %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
