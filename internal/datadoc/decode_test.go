package datadoc

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	v, err := Decode([]byte(`{"n": 12345678901234567890}`))
	if err != nil {
		t.Fatal(err)
	}
	if n := v.(map[string]any)["n"]; n != json.Number("12345678901234567890") {
		t.Errorf("number = %#v, want it exact", n)
	}
	for _, c := range []struct{ in, want string }{
		{"{\n  \"a\": 1,\n  }", "line 3, column 3"},
		{`{} []`, "line 1, column 4: data after the JSON value"},
		{`{"a": `, "line 1, column 7: unexpected end of JSON input"},
	} {
		if _, err := Decode([]byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Decode(%q) = %v, want %q", c.in, err, c.want)
		}
	}
	if k := Kind([]any{}); k != "an array" {
		t.Errorf("Kind = %q", k)
	}
}
