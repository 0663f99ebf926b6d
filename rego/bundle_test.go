package rego_test

import (
	"encoding/json"
	"io/fs"
	"testing"

	"github.com/deterministic-exec/des/policy/policytest"
	"github.com/deterministic-exec/des/rego"
)

// TestBundle runs every *_test.rego of the built-in bundle, requires 90%
// line coverage of each policy package, and fails on any file `opa fmt`
// would change.
func TestBundle(t *testing.T) {
	rep := policytest.Check(t, rego.FS(), policytest.WithMinCoverage(90))
	for _, c := range rep.Coverage {
		t.Logf("coverage %-28s %5.1f%%", c.Package, c.Percent())
	}
	if len(rep.Results) < 20 {
		t.Errorf("only %d rego tests ran; the bundle's tests were not all found", len(rep.Results))
	}
}

func TestManifest(t *testing.T) {
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
