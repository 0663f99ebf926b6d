package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The client is what Claude Code starts for every matched tool call: it links
// no policy engine and no schema library, only the standard library, the
// channel's packages and the flock wrapper the channel's start lock uses, so
// it starts like any small Go program.
func TestClientImportGraph(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	allowed := map[string]bool{
		"github.com/deterministic-exec/des/examples/hook":    true,
		"github.com/deterministic-exec/des/internal/client":  true,
		"github.com/deterministic-exec/des/internal/channel": true,
		"github.com/deterministic-exec/des/internal/flock":   true, // channel's start lock
	}
	var got []string
	for _, p := range strings.Fields(string(out)) {
		got = append(got, p)
		if strings.Contains(p, "open-policy-agent") || strings.Contains(p, "jsonschema") || !allowed[p] {
			t.Errorf("the hook client links %s; it may link only the standard library, internal/client, internal/channel and internal/flock (the engine belongs in examples/des-engine)", p)
		}
	}
	if len(got) != len(allowed) {
		t.Errorf("non-standard dependencies %v, want exactly %v", got, allowed)
	}
}
