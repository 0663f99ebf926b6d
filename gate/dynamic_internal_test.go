package gate

import (
	"path/filepath"
	"testing"

	"github.com/deterministic-exec/des/internal/shell"
)

// The rule for targets DES cannot know: what their literal part could name.
func TestDynamicWrite(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	tu := ToolUse{Root: root, Protected: []string{".des/policies", ".des/audit"}}
	docs := DocumentWrite{Root: root, StepGlobs: []string{"**/steps/*.json"}, StateGlobs: []string{".des/state.json", ".isdlc/state.json", ".isdlc/projects/*/state.json"}}
	cases := []struct {
		path      string
		glob      bool
		document  string
		protected bool
	}{
		{".isdlc/$X", false, KindState, false},
		{".isdlc/stat$X", false, KindState, false},
		{"$D/state.json", false, KindState, false},
		{".isdlc/projects/$P/state.json", false, KindState, false},
		{".is$X/state.json", false, KindState, false},
		{"docs/steps/$X", false, KindStep, false},
		{"$D/01-01.json", false, KindStep, false},
		{".des/$X", false, KindState, true},
		{".d$X/config.json", false, "", true},
		{".des/policies/$X.rego", false, "", true},
		{"$OUT", false, "", false},
		{"$OUT/report.json", false, "", false},
		{"build/$X.o", false, "", false},
		{"src/*.go", true, "", false},
		{".isdlc/stat?.json", true, KindState, false},
		{".de[s]/config.json", true, "", true},
		{"docs/x/steps/*.json", true, KindStep, false},
	}
	for _, c := range cases {
		w := shell.Write{Path: c.path, How: shell.HowRedirect, Glob: c.glob, Dynamic: !c.glob}
		in := tu.dynamicWrite(docs, w, filepath.Join(root, c.path))
		if in == nil {
			if c.document != "" || c.protected {
				t.Errorf("%s: nothing, want %q protected=%v", c.path, c.document, c.protected)
			}
			continue
		}
		if in["document"] != c.document || in["protected"] != c.protected || in["dynamic"] != true {
			t.Errorf("%s: %v, want %q protected=%v", c.path, in, c.document, c.protected)
		}
	}
}
