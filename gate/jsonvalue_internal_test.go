package gate

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

// viaGeneric is the reference: encoding/json with UseNumber, then OPA's
// conversion, which is what the policy would get from a decoded document.
func viaGeneric(data []byte) (ast.Value, error) {
	if !json.Valid(data) {
		return nil, errJSONSyntax
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return ast.InterfaceToValue(v)
}

func checkJSONValue(t *testing.T, data []byte) {
	t.Helper()
	want, wantErr := viaGeneric(data)
	got, err := jsonValue(data)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("jsonValue(%q): err %v, encoding/json err %v", data, err, wantErr)
	}
	if err == nil && got.Compare(want) != 0 {
		t.Fatalf("jsonValue(%q) =\n%v\nwant\n%v", data, got, want)
	}
}

var jsonSeeds = []string{
	`{}`, `[]`, `{"a": 1, "b": [true, false, null, -1.5e3, 0, 12345678901234567890]}`,
	`{"a": 1, "a": 2}`, `{"s": "caf\u00e9 \"q\" \\ \/ \n \ud83d\ude00", "t": "naïve", "u": "bad \xff byte"}`,
	` {"x" : [ {"y": {}} , [] ] } `, `"just a string"`, `3`, `null`,
	`{"a": 1,}`, `{"a" 1}`, `[1 2]`, `{"a": tru}`, `{"a": 01}`, `{"a": 1.}`, `{"a": "x`, `{"a": 1} x`, `{"a": "\x01"}`,
	`{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k3":33}`,
}

func TestJSONValue(t *testing.T) {
	t.Parallel()
	for _, s := range jsonSeeds {
		checkJSONValue(t, []byte(s))
	}
}

// Every real step file converts as encoding/json and OPA would.
func TestJSONValueStepCorpus(t *testing.T) {
	t.Parallel()
	paths, _ := filepath.Glob("../../shared/corpus/nwave-steps/*.json")
	if len(paths) == 0 {
		t.Skip("step corpus not found at ../../shared/corpus/nwave-steps")
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		checkJSONValue(t, data)
	}
}

func FuzzJSONValue(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkJSONValue(t, data) })
}

// A syntax error says where, as line and column, like the other gates'.
func TestJSONValueErrorSaysLineAndColumn(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"{\n  \"a\": tru}":     "invalid JSON at line 2, column 8: ",
		"{\n  \"a\": 01}":      "invalid JSON at line 2, column 8: bad number \"01\"",
		"[1,\n \"x\x01\"]":     "invalid JSON at line 2, column 2: bad string: ",
		"{\"a\": 1}\n\n  x":    "invalid JSON at line 3, column 3: data after the value",
		"{\n  \"a\": \"open\n": "invalid JSON at line 3, column 1: unterminated string",
	} {
		_, err := jsonValue([]byte(in))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("jsonValue(%q) = %v, want an error starting %q", in, err, want)
		}
	}
}

// Nesting is bounded where encoding/json bounds it: 10,000 containers.
func TestJSONValueDepth(t *testing.T) {
	t.Parallel()
	for _, n := range []int{10000, 10001} {
		checkJSONValue(t, []byte(strings.Repeat("[", n)+"1"+strings.Repeat("]", n)))
	}
}
