package policy

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	builtin "github.com/deterministic-exec/des/rego"
)

func TestClosureOfEachGate(t *testing.T) {
	t.Parallel()
	l, err := load([]source{{name: "rego", fsys: builtin.FS(), path: "des", prefix: "des", base: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pkgsOf := func(g Gate) []string {
		mods, err := closure(l.files, g.Package())
		if err != nil {
			t.Fatal(err)
		}
		var pkgs []string
		for _, m := range mods {
			if p := packagePath(m); !slices.Contains(pkgs, p) {
				pkgs = append(pkgs, p)
			}
		}
		slices.Sort(pkgs)
		return pkgs
	}
	// The phase guards' shared package (des.phases) without the rules of
	// des.phases.guards, which only pre_invocation needs.
	if got := pkgsOf(ToolUse); !cmp.Equal(got, []string{"des.bashwrite", "des.delegation", "des.exceptions", "des.gates.tool_use", "des.integrity", "des.phases", "des.phases.branch", "des.phases.observers", "des.protected", "des.settings"}) {
		t.Errorf("tool_use needs %v", got)
	}
	got := pkgsOf(PreInvocation)
	for _, want := range []string{"des.gates.pre_invocation", "des.invocation", "des.sections", "des.safety", "des.stepfile", "des.transitions", "des.phases", "des.phases.guards", "des.taskgraph", "des.taskgraph.delegation", "des.delegation"} {
		if !slices.Contains(got, want) {
			t.Errorf("pre_invocation needs %s; closure %v", want, got)
		}
	}
	for _, unwanted := range []string{"des.protected", "des.phases.branch", "des.phases.observers", "des.taskgraph.write"} {
		if slices.Contains(got, unwanted) {
			t.Errorf("pre_invocation pulled in %s: %v", unwanted, got)
		}
	}
	// The task graph's write rules, without its delegation rules.
	got = pkgsOf(DocumentWrite)
	for _, want := range []string{"des.taskgraph", "des.taskgraph.write"} {
		if !slices.Contains(got, want) {
			t.Errorf("document_write needs %s; closure %v", want, got)
		}
	}
	for _, unwanted := range []string{"des.taskgraph.delegation", "des.delegation"} {
		if slices.Contains(got, unwanted) {
			t.Errorf("document_write pulled in %s: %v", unwanted, got)
		}
	}
}

func TestScanPackage(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"package des.gates.tool_use\n":                   "des.gates.tool_use",
		"# METADATA\n# title: x\n\npackage a.b # note\n": "a.b",
		"  package  a.b\n":                               "a.b",
		"package a[\"b\"]\n":                             "",
		"import rego.v1\npackage a\n":                    "",
		"":                                               "",
	}
	for src, want := range cases {
		if got := scanPackage([]byte(src)); got != want {
			t.Errorf("scanPackage(%q) = %q, want %q", src, got, want)
		}
	}
}
