package policy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestViolationsSortPhasesInLogOrder(t *testing.T) {
	t.Parallel()
	vs := []Violation{
		{Code: "B", Field: "/a"},
		{Code: "A", Field: "/tdd_cycle/phase_execution_log/10/status"},
		{Code: "A", Field: "/tdd_cycle/phase_execution_log/2/status"},
		{Code: "A", Field: "/tdd_cycle/phase_execution_log/2"},
		{Code: "A", Field: ""},
	}
	sortViolations(vs)
	var got []string
	for _, v := range vs {
		got = append(got, v.Code+v.Field)
	}
	want := []string{
		"A",
		"A/tdd_cycle/phase_execution_log/2",
		"A/tdd_cycle/phase_execution_log/2/status",
		"A/tdd_cycle/phase_execution_log/10/status",
		"B/a",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}
