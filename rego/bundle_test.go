package rego_test

import (
	"encoding/json"
	"flag"
	"io/fs"
	"os"
	"testing"

	"github.com/deterministic-exec/des/internal/testenv"

	"github.com/deterministic-exec/des/policy/policytest"
	"github.com/deterministic-exec/des/rego"
)

// TestBundle runs every *_test.rego of the built-in bundle, requires 90%
// line coverage of each policy package, and fails on any file `opa fmt`
// would change.
func TestBundle(t *testing.T) {
	t.Parallel()
	// Line coverage triples the run (the tracer): the long tests (CI)
	// measure it and hold it at 90%; the default suite runs the tests.
	var opts []policytest.Option
	if testenv.IsLong() {
		opts = append(opts, policytest.WithMinCoverage(90))
	}
	rep := policytest.Check(t, rego.FS(), opts...)
	for _, c := range rep.Coverage {
		t.Logf("coverage %-28s %5.1f%%", c.Package, c.Percent())
	}
	if len(rep.Results) < 20 {
		t.Errorf("only %d rego tests ran; the bundle's tests were not all found", len(rep.Results))
	}
}

func TestManifest(t *testing.T) {
	t.Parallel()
	raw, err := fs.ReadFile(rego.FS(), ".manifest")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Roots       []string `json:"roots"`
		RegoVersion int      `json:"rego_version"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf(".manifest: %v", err)
	}
	if len(m.Roots) != 1 || m.Roots[0] != "des" || m.RegoVersion != 1 {
		t.Errorf(".manifest = %+v, want roots [des] and rego_version 1", m)
	}
}

// update rewrites rego/des/builtin/data.json with the bundle's revision:
// go test ./rego -run TestRevisionFile -update
var update = flag.Bool("update", false, "rewrite "+rego.RevisionFile+" with the current revision")

// The revision an OPA server loaded with the bundle reports is the one des
// computes from its embedded copy.
func TestRevisionFile(t *testing.T) {
	t.Parallel()
	want := rego.Revision()
	if d, err := rego.Digest(os.DirFS(".")); err != nil || d != want {
		t.Fatalf("digest of the directory %q, %v; of the embedded bundle %q", d, err, want)
	}
	if *update {
		if err := os.WriteFile(rego.RevisionFile, []byte(`{"revision": "`+want+`"}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(rego.RevisionFile)
	if err != nil {
		t.Fatal(err)
	}
	var rf struct {
		Revision string `json:"revision"`
	}
	if err := json.Unmarshal(raw, &rf); err != nil || rf.Revision != want {
		t.Fatalf("%s says %q (%v); the policies' revision is %s: a policy or data file changed, so run\n\tgo test ./rego -run TestRevisionFile -update", rego.RevisionFile, rf.Revision, err, want)
	}
}
