package datadoc

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMerge(t *testing.T) {
	dst := map[string]any{"des": map[string]any{"config": map[string]any{"a": 1.0}}}
	src := map[string]any{"des": map[string]any{"config": map[string]any{"b": 2.0}}, "team": true}
	if err := Merge(dst, src); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"des": map[string]any{"config": map[string]any{"a": 1.0, "b": 2.0}}, "team": true}
	if diff := cmp.Diff(want, dst); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestMergeConflict(t *testing.T) {
	dst := map[string]any{"des": map[string]any{"config": map[string]any{"a": 1.0}}}
	err := Merge(dst, map[string]any{"des": map[string]any{"config": map[string]any{"a": 2.0}}})
	if err == nil || !strings.Contains(err.Error(), "data.des.config.a") {
		t.Errorf("err = %v, want a conflict at data.des.config.a", err)
	}
}
