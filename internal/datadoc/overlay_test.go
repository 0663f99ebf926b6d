package datadoc

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func builtinData() map[string]any {
	return map[string]any{"des": map[string]any{
		"sections": map[string]any{
			"origins": map[string]any{"ad-hoc": "none", "command:/nw:execute": "full"},
			"levels":  map[string]any{"full": []any{"A", "B"}, "none": []any{}},
		},
		"config": map[string]any{"stale_threshold_minutes": 30},
	}}
}

func TestApplyMergesObjectsReplacesOthersAndNullRemoves(t *testing.T) {
	base := builtinData()
	err := Apply(base, []Patch{
		{File: "a/data.json", Doc: map[string]any{"des": map[string]any{"sections": map[string]any{
			"origins": map[string]any{"ad-hoc": "full", "command:/nw:execute": nil, "team:review": "partial"},
		}}}},
		{File: "b/data.json", Doc: map[string]any{"des": map[string]any{"sections": map[string]any{
			"levels": map[string]any{"full": []any{"A"}},
		}}}},
	}, []string{"des", "config"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"des": map[string]any{
		"sections": map[string]any{
			"origins": map[string]any{"ad-hoc": "full", "team:review": "partial"},
			"levels":  map[string]any{"full": []any{"A"}, "none": []any{}},
		},
		"config": map[string]any{"stale_threshold_minutes": 30},
	}}
	if diff := cmp.Diff(want, base); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestApplyConflicts(t *testing.T) {
	origins := func(v any) map[string]any {
		return map[string]any{"des": map[string]any{"sections": map[string]any{"origins": v}}}
	}
	for name, tc := range map[string]struct {
		a, b map[string]any
		want string
	}{
		"same leaf, different values": {origins(map[string]any{"ad-hoc": "full"}), origins(map[string]any{"ad-hoc": "none"}),
			`b/data.json: data.des.sections.origins["ad-hoc"] is set here and, to another value, in a/data.json`},
		"null and a value": {origins(map[string]any{"ad-hoc": nil}), origins(map[string]any{"ad-hoc": "none"}),
			`data.des.sections.origins["ad-hoc"]`},
		"an object replaced whole by the other": {origins(map[string]any{"ad-hoc": "full"}), origins("none"),
			"data.des.sections.origins is set here"},
		"a value inside what the other replaces": {origins("none"), origins(map[string]any{"ad-hoc": "full"}),
			"data.des.sections.origins is set here"},
	} {
		t.Run(name, func(t *testing.T) {
			base := builtinData()
			err := Apply(base, []Patch{{File: "a/data.json", Doc: tc.a}, {File: "b/data.json", Doc: tc.b}})
			var ce *ConflictError
			if !errors.As(err, &ce) || ce.File != "b/data.json" || ce.Other != "a/data.json" {
				t.Fatalf("err = %#v, want a conflict of b/data.json with a/data.json", err)
			}
			if got := ce.File + ": " + ce.Error(); !strings.Contains(got, tc.want) {
				t.Errorf("error %q does not say %q", got, tc.want)
			}
			if diff := cmp.Diff(builtinData(), base); diff != "" {
				t.Errorf("base changed on a conflict (-want +got):\n%s", diff)
			}
		})
	}
}

func TestApplyAgreeingFilesAreNoConflict(t *testing.T) {
	doc := map[string]any{"des": map[string]any{"commit": map[string]any{"skip_prefixes": []any{"X:"}}}}
	if err := Apply(builtinData(), []Patch{{File: "a", Doc: doc}, {File: "b", Doc: doc}}); err != nil {
		t.Errorf("two files setting the same value: %v", err)
	}
}

func TestApplyReserved(t *testing.T) {
	err := Apply(builtinData(), []Patch{{File: "a/data.json", Doc: map[string]any{"des": map[string]any{"config": map[string]any{"x": 1}}}}}, []string{"des", "config"})
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Other != "" || !strings.Contains(ce.Error(), "data.des.config cannot be set by a data file") {
		t.Errorf("err = %v, want data.des.config refused", err)
	}
}
