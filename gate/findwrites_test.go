package gate_test

import (
	"slices"
	"testing"

	"github.com/deterministic-exec/des/gate"
)

// A find whose delete is restricted by a name test hands the policy the
// entries it would reach, not its start: none for .pyc files, the step
// file and DES's settings for *.json, the whole start without a usable
// test.
func TestFindWithANameTestWritesWhatItMatches(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, root, "docs/steps/01-01.json", `{"task_id": "01-01", "tdd_cycle": {}}`)
	writeFile(t, root, ".des/config.json", `{}`)
	writeFile(t, root, "src/a.pyc", "x")
	writeFile(t, root, "node_modules/p/steps/01-01.json", `{"tdd_cycle": {}}`)
	docs := gate.DocumentWrite{Root: root, StepGlobs: gate.DefaultStepGlobs}
	tu := gate.ToolUse{Root: root}
	cases := []struct {
		cmd   string
		paths []string // nil: not judged
	}{
		{`find . -name '*.pyc' -delete`, nil},
		{`find src -name '*.pyc' -exec rm {} +`, nil},
		{`find . -name '*.json' -delete`, []string{".des/config.json", "docs/steps/01-01.json"}},
		{`find . -name 'steps' -exec rm -rf {} +`, []string{"docs/steps"}},
		{`find ./ -path './docs/*' -delete`, []string{"docs/steps"}},
		// Each start a glob names is listed (node_modules too, named as a
		// start); one in a protected root is judged whole.
		{`find * -name '*.json' -delete`, []string{".des", "docs/steps/01-01.json", "node_modules/p/steps/01-01.json"}},
		{`find . -name x -o -name '*.pyc' -delete`, nil},
		{`find . -name '*.pyc' -o -delete`, []string{"."}},
		{`find docs -delete`, []string{"docs"}},
	}
	for _, c := range cases {
		rec := &recorder{}
		res, err := tu.CheckBash(t.Context(), rec, docs, gate.BashCall{Command: c.cmd, Cwd: root})
		if err != nil {
			t.Fatalf("%s: %v", c.cmd, err)
		}
		if c.paths == nil {
			if res.Evaluated {
				t.Errorf("%s: judged %v", c.cmd, rec.last(t)["writes"])
			}
			continue
		}
		if !res.Evaluated {
			t.Errorf("%s: not judged", c.cmd)
			continue
		}
		var got []string
		for _, w := range rec.last(t)["writes"].([]any) {
			got = append(got, w.(map[string]any)["path"].(string))
		}
		slices.Sort(got)
		if !slices.Equal(got, c.paths) {
			t.Errorf("%s: writes %v, want %v", c.cmd, got, c.paths)
		}
	}
}
