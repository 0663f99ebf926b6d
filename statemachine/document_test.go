package statemachine_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/deterministic-exec/des/statemachine"
)

// tokens returns a document's token stream: values, keys and delimiters in
// order, numbers as written. Two documents with equal streams are equal and
// have their keys in the same order.
func tokens(tb testing.TB, data []byte) []json.Token {
	tb.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out []json.Token
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			tb.Fatalf("tokens: %v", err)
		}
		out = append(out, tok)
	}
}

// Every corpus file survives parse and Marshal: same values, same key order,
// same number and string spellings.
func TestObjectRoundTripCorpus(t *testing.T) {
	t.Parallel()
	identical := 0
	files := corpusFiles(t)
	for _, f := range files {
		data := readFile(t, f)
		o, err := statemachine.ParseObject(data)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out, err := o.Marshal()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if diff := cmp.Diff(tokens(t, data), tokens(t, out)); diff != "" {
			t.Errorf("%s: token stream changed (-in +out):\n%s", filepath.Base(f), diff)
		}
		if !bytes.HasSuffix(out, []byte("}\n")) {
			t.Errorf("%s: output does not end with a newline", filepath.Base(f))
		}
		if bytes.Equal(bytes.TrimSuffix(data, []byte("\n")), bytes.TrimSuffix(out, []byte("\n"))) {
			identical++
		}
	}
	t.Logf("%d of %d files byte-identical after a round trip (ignoring the final newline)", identical, len(files))
}

func TestObjectEdits(t *testing.T) {
	t.Parallel()
	src := `{"b": 1, "a": {"y": [1, {"k": "v"}], "x": 2.50}, "note": "a < b & c", "esc": "\u00e9\n", "dup": 1, "dup": 2}`
	o, err := statemachine.ParseObject([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := o.Keys(), []string{"b", "a", "note", "esc", "dup", "dup"}; !cmp.Equal(got, want) {
		t.Errorf("Keys = %v, want %v", got, want)
	}
	if v, ok := o.Get("dup"); !ok || string(v) != "2" {
		t.Errorf(`Get("dup") = %s, %v; want the last occurrence, as encoding/json reads it`, v, ok)
	}
	if _, ok := o.Get("B"); ok {
		t.Error("Get is case-insensitive")
	}
	if v, ok := o.GetPath([]string{"a", "y", "1", "k"}); !ok || string(v) != `"v"` {
		t.Errorf("GetPath into an array = %s, %v", v, ok)
	}
	for _, p := range [][]string{{"a", "y", "2"}, {"a", "y", "-1"}, {"a", "y", "k"}, {"b", "c"}, {"zz"}} {
		if v, ok := o.GetPath(p); ok {
			t.Errorf("GetPath(%v) = %s, want absent", p, v)
		}
	}

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(o.Set("b", "<new>"))                             // in place
	must(o.Set("z", nil))                                 // appended
	must(o.SetPath([]string{"a", "y", "1", "k"}, false))  // inside an array element
	must(o.SetPath([]string{"new", "deep", "er"}, 1))     // creates objects
	must(o.SetPath([]string{"z", "k"}, "null became {}")) // null becomes an object
	must(o.AppendPath([]string{"a", "y"}, map[string]int{"n": 3}))
	must(o.AppendPath([]string{"a", "list"}, "first")) // absent array created
	must(o.Set("raw", json.RawMessage(`{"r": [1, 2]}`)))
	if !o.DeletePath([]string{"a", "x"}) || o.DeletePath([]string{"a", "x"}) {
		t.Error("DeletePath did not report the deletion once")
	}
	if !o.Delete("dup") {
		t.Error("Delete did not report")
	}

	out, err := o.Marshal()
	must(err)
	want := `{
  "b": "<new>",
  "a": {
    "y": [
      1,
      {
        "k": false
      },
      {
        "n": 3
      }
    ],
    "list": [
      "first"
    ]
  },
  "note": "a < b & c",
  "esc": "\u00e9\n",
  "z": {
    "k": "null became {}"
  },
  "new": {
    "deep": {
      "er": 1
    }
  },
  "raw": {
    "r": [
      1,
      2
    ]
  }
}
`
	if diff := cmp.Diff(want, string(out)); diff != "" {
		t.Errorf("Marshal (-want +got):\n%s", diff)
	}
}

func TestObjectEditErrorsChangeNothing(t *testing.T) {
	t.Parallel()
	o, err := statemachine.ParseObject([]byte(`{"s": "text", "l": [1]}`))
	if err != nil {
		t.Fatal(err)
	}
	before, _ := o.Marshal()
	for name, err := range map[string]error{
		"through a string":   o.SetPath([]string{"s", "k"}, 1),
		"index out of range": o.SetPath([]string{"l", "1"}, 1),
		"index not a number": o.SetPath([]string{"l", "x"}, 1),
		"append to a string": o.AppendPath([]string{"s"}, 1),
		"unmarshalable":      o.Set("f", func() {}),
		"invalid raw":        o.Set("r", json.RawMessage(`{`)),
		"empty path":         o.SetPath(nil, 1),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if err := o.SetPath([]string{"s", "k"}, 1); !errors.Is(err, statemachine.ErrNotObject) || !strings.Contains(err.Error(), "/s/k") {
		t.Errorf("error %v: want ErrNotObject naming the path", err)
	}
	after, _ := o.Marshal()
	if !bytes.Equal(before, after) {
		t.Errorf("a failed edit changed the document:\n%s", after)
	}
}

func TestParseObjectRejects(t *testing.T) {
	t.Parallel()
	for _, src := range []string{``, `[]`, `"s"`, `null`, `{"a":}`, `{"a":1}{}`, `{"a":1`} {
		if _, err := statemachine.ParseObject([]byte(src)); err == nil {
			t.Errorf("ParseObject(%q): no error", src)
		}
	}
	if _, err := statemachine.ParseObject([]byte(`[1]`)); !errors.Is(err, statemachine.ErrNotObject) {
		t.Errorf("array: err = %v, want ErrNotObject", err)
	}
	o, err := statemachine.ParseObject([]byte(" \n{ } \n"))
	if err != nil || o.Len() != 0 {
		t.Fatalf("empty object: %v, %v", o, err)
	}
	if out, _ := o.Marshal(); string(out) != "{}\n" {
		t.Errorf("empty object marshals as %q", out)
	}
}

// The parser keeps no reference to the caller's buffer.
func TestParseObjectCopiesInput(t *testing.T) {
	t.Parallel()
	buf := []byte(`{"a": "xyz"}`)
	o, err := statemachine.ParseObject(buf)
	if err != nil {
		t.Fatal(err)
	}
	copy(buf, `{"a": "___"}`)
	if v, _ := o.Get("a"); string(v) != `"xyz"` {
		t.Errorf("value changed with the input buffer: %s", v)
	}
}

// Keys with escapes are matched by their decoded value and re-emitted as
// written.
func TestObjectEscapedKeys(t *testing.T) {
	t.Parallel()
	src := `{"t\u00e9st": 1, "a\"b": 2, "é": 3}`
	o, err := statemachine.ParseObject([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"tést": "1", `a"b`: "2", "é": "3"} {
		if v, ok := o.Get(k); !ok || string(v) != want {
			t.Errorf("Get(%q) = %s, %v", k, v, ok)
		}
	}
	out, _ := o.Marshal()
	if !strings.Contains(string(out), `"t\u00e9st": 1`) {
		t.Errorf("escaped key not kept as written:\n%s", out)
	}
}

// Any JSON object survives a round trip with its tokens in order, and edits
// through paths never produce invalid JSON.
func FuzzObjectRoundTrip(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a": [1, {"b": "c\"d\\"}], "a": null}`, `{"\u00e9": 1e5, "x": -0.0, "y": [[], {}]}`,
		`{"k": "</script> & \u2028"}`, " {\"t\":true,\"f\":false}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := statemachine.ParseObject(data)
		if err != nil {
			return
		}
		out, err := o.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tokens(t, data), tokens(t, out)); diff != "" {
			t.Fatalf("token stream changed (-in +out):\n%s", diff)
		}
		for _, k := range o.Keys() {
			_ = o.SetPath([]string{k, "0", "z"}, 1)
			_ = o.AppendPath([]string{k}, "x")
		}
		out, err = o.Marshal()
		if err != nil || !json.Valid(out) {
			t.Fatalf("invalid after edits: %v\n%s", err, out)
		}
	})
}
