package jsonsplice

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func decode(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return v
}

// checkSpan: sp covers exactly the text of the value want decodes to, and
// so do its members (the last of a repeated key) and elements.
func checkSpan(t *testing.T, data []byte, sp *Span, want any) {
	t.Helper()
	text := data[sp.start:sp.end]
	if got := decode(t, text); !reflect.DeepEqual(got, want) {
		t.Fatalf("span %q decodes to %v, want %v", text, got, want)
	}
	if len(bytes.TrimSpace(text)) != len(text) {
		t.Fatalf("span %q has space around it", text)
	}
	switch w := want.(type) {
	case map[string]any:
		if !sp.object {
			t.Fatalf("span %q is not an object", text)
		}
		for k, v := range w {
			checkSpan(t, data, sp.Get(k), v)
		}
		for _, m := range sp.members {
			if got := decode(t, data[m.keyStart:m.keyEnd]); got != m.key {
				t.Fatalf("key %q spans %q", m.key, data[m.keyStart:m.keyEnd])
			}
		}
	case []any:
		if len(sp.Elems) != len(w) {
			t.Fatalf("span %q has %d elements, want %d", text, len(sp.Elems), len(w))
		}
		for i, v := range w {
			checkSpan(t, data, sp.Elems[i], v)
		}
	}
}

func checkScan(t *testing.T, data []byte) {
	sp, err := Scan(data)
	if valid := json.Valid(data); (err == nil) != valid {
		t.Fatalf("Scan(%q): %v; encoding/json valid %v", data, err, valid)
	}
	if err == nil {
		checkSpan(t, data, sp, decode(t, data))
	}
}

var scanSeeds = []string{
	`{}`, ` [] `, `{"a": 1, "b": [true, null, "x\"y"], "a": {"c": -2.5e3}}`, `{"k\u00e9y": "v", "\\": ""}`,
	"{\n  \"waves\": [\n    {\"phases\": []}\n  ]\n}\n", `"s"`, `7`,
	`{"a": tru}`, `{"a": 1x}`, `{"a": 1} {}`, `{"a" 1}`, `[1,]`, `{"a": "\x"}`,
}

func TestScan(t *testing.T) {
	for _, s := range scanSeeds {
		checkScan(t, []byte(s))
	}
}

// FuzzScan: Scan reads what encoding/json reads, and its spans hold the
// values encoding/json decodes.
func FuzzScan(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkScan(t, data) })
}

// A malformed document is an error that says where.
func TestScanError(t *testing.T) {
	_, err := Scan([]byte("{\n  \"a\": tru\n}"))
	if err == nil || err.Error() != "malformed JSON: line 2, column 8: invalid literal" {
		t.Fatalf("Scan = %v", err)
	}
}

// SetPath replaces a value in place, appends a member in the layout of the
// first, creates missing objects, and keeps every other byte.
func TestSetPath(t *testing.T) {
	doc := "{\n    \"phases\": {\n        \"a\" :  {\"n\": 1.50, \"x\": null}\n    },\n    \"other\": [ 1,2 ]\n}\n"
	for _, c := range []struct {
		path []string
		val  string
		want string
	}{
		{[]string{"phases", "a", "x"}, `"y"`, strings.Replace(doc, "null", `"y"`, 1)},
		{[]string{"phases", "a", "m"}, `2`, strings.Replace(doc, "null}", `null, "m": 2}`, 1)},
		{[]string{"phases", "b", "c"}, `3`, strings.Replace(doc, "1.50, \"x\": null}", "1.50, \"x\": null},\n        \"b\" :  {\"c\": 3}", 1)},
		{[]string{"new"}, `{}`, strings.Replace(doc, "[ 1,2 ]", "[ 1,2 ],\n    \"new\": {}", 1)},
	} {
		got, err := SetPath([]byte(doc), c.path, c.val)
		if err != nil || string(got) != c.want {
			t.Errorf("SetPath(%v, %s) = %v\n%s\nwant\n%s", c.path, c.val, err, got, c.want)
		}
	}
	if _, err := SetPath([]byte(doc), []string{"other", "x"}, "1"); err == nil || err.Error() != "/other is not an object" {
		t.Errorf("SetPath through an array = %v", err)
	}
	if got, err := SetPath([]byte(`{}`), []string{"a"}, "1"); err != nil || string(got) != `{"a": 1}` {
		t.Errorf("SetPath into {} = %s, %v", got, err)
	}
}
