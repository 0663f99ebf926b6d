//go:build opacompat

// Checked against OPA's own decision log type, which brings in OPA's
// plugin and server packages (about 140 more packages to compile, with
// Prometheus and OpenTelemetry): CI runs it (go test -tags opacompat); a
// developer's go test ./... does not compile them.

package decisionlog

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/plugins/logs"
)

// An Event reads as OPA's own EventV1 and writes back the same: the field
// names and shapes are OPA's.
func TestEventIsOPAsEventV1(t *testing.T) {
	t.Parallel()
	ev := sampleEvent(t, map[string]any{"tool": "Write"}, map[string]any{"deny": []any{}})
	ev.Erased = []string{"/input/call/prompt"}
	raw, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	var opa logs.EventV1
	if err := json.Unmarshal(raw, &opa); err != nil {
		t.Fatal(err)
	}
	back, err := json.Marshal(opa)
	if err != nil {
		t.Fatal(err)
	}
	var a, b map[string]any
	json.Unmarshal(raw, &a)
	json.Unmarshal(back, &b)
	if diff := cmp.Diff(b, a); diff != "" {
		t.Errorf("des event vs OPA's EventV1 (-opa +des):\n%s", diff)
	}
	if got := a["timestamp"]; got != "2026-11-25T18:00:00.123456789Z" {
		t.Errorf("timestamp = %v, want RFC 3339 with nanoseconds, UTC", got)
	}
}
