package gate

import (
	"strings"
	"testing"
)

// Formatting is no difference; a value is, named by its JSON pointer.
func TestJSONDifference(t *testing.T) {
	t.Parallel()
	allowed := `{"a": 1, "b": [1, {"c": "x"}], "d/e": null}`
	for now, want := range map[string]string{
		"{\n\t\"d/e\": null,\n\t\"b\": [1, {\"c\": \"x\"}],\n\t\"a\": 1.0\n}\n": "",
		`{"a": 1e0, "b": [1, {"c": "x"}], "d/e": null}`:                         "",
		`{"a": 1, "b": [1, {"c": "y"}], "d/e": null}`:                           `at /b/1/c the write allowed "x", the file holds "y"`,
		`{"a": 1, "b": [1], "d/e": null}`:                                       "at /b the write allowed 2 elements, the file holds 1",
		`{"a": 1, "b": [1, {"c": "x"}]}`:                                        "at /d~1e the write allowed null, the file has no such member",
		`{"a": 1, "b": [1, {"c": "x"}], "d/e": null, "z": true}`:                "at /z the file holds true, which the write did not have",
		`{"a": 1`: "it is no longer JSON",
		`[]`:      "at / the write allowed",
	} {
		got := jsonDifference([]byte(allowed), []byte(now))
		if want == "" && got != "" || want != "" && !strings.HasPrefix(got, want) {
			t.Errorf("jsonDifference(%s) = %q, want %q", now, got, want)
		}
	}
}
