package statemachine

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var validJSONSeeds = []string{
	``, ` `, `{}`, `[]`, ` {} `, `{} {}`, `{}x`, `{`, `}`, `[`, `]`, `{]`, `[}`, `[1,]`, `{"a":1,}`, `{,}`, `[,1]`,
	`{"a"}`, `{"a":}`, `{"a" 1}`, `{1:2}`, `{"a":1 "b":2}`, `[1 2]`, `[[[]]]`, `[{"a":[{}]}]`,
	`0`, `-0`, `01`, `-`, `1.`, `.5`, `1.5`, `1e`, `1e+`, `1E-5`, `-1.5e+10`, `2.`, `+1`, `1x`, `1.5.5`,
	`true`, `false`, `null`, `tru`, `nul`, `truex`, `nulll`, `True`,
	`""`, `"\"`, `"\\"`, `"\u00e9"`, `"\u00g9"`, `"\u00e"`, `"\x"`, `"a` + "\x01" + `b"`, "\"\x7f\"", "\"\xff\xfe\"",
	`"\/\b\f\n\r\t"`, `"a"x`, `"` + "\t" + `"`, "\t\r\n {}\n", "\v{}", "{\"a\":\"\\u12", "[\"\\", `"\\\"`,
	strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth),
	strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1),
	strings.Repeat(`{"a":`, maxJSONDepth) + "1" + strings.Repeat("}", maxJSONDepth),
	strings.Repeat(`{"a":`, maxJSONDepth+1) + "1" + strings.Repeat("}", maxJSONDepth+1),
}

func TestValidJSONAgreesWithEncodingJSON(t *testing.T) {
	seeds := append([]string(nil), validJSONSeeds...)
	for _, f := range stateTestDocuments(t) {
		seeds = append(seeds, string(f))
	}
	for _, s := range seeds {
		if got, want := validJSON([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("validJSON(%.80q) = %v, json.Valid says %v", s, got, want)
		}
	}
}

// stateTestDocuments are the real step files of the corpus, to seed the
// differential tests with real-world JSON.
func stateTestDocuments(tb testing.TB) [][]byte {
	files, _ := filepath.Glob("../../shared/corpus/nwave-steps/*.json")
	var out [][]byte
	for _, f := range files[:min(len(files), 40)] {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func FuzzValidJSON(f *testing.F) {
	for _, s := range validJSONSeeds[:len(validJSONSeeds)-4] {
		f.Add([]byte(s))
	}
	for _, d := range stateTestDocuments(f)[:5] {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := validJSON(data), json.Valid(data); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid says %v", data, got, want)
		}
	})
}

// parseStateObject and ParseObject give the same object, or both fail with
// the same error.
func FuzzParseStateObject(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"a":"x\"}","b":[{"c":"\\"}]}`, ` {"a" : { "b" : [ 1 , 2 ] } } `, `[]`, `{`} {
		f.Add([]byte(s))
	}
	for _, d := range stateTestDocuments(f)[:5] {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, gerr := parseStateObject(data)
		want, werr := ParseObject(data)
		if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
			t.Fatalf("errors differ: %v, want %v", gerr, werr)
		}
		if gerr != nil {
			return
		}
		if len(got.members) != len(want.members) {
			t.Fatalf("%d members, want %d", len(got.members), len(want.members))
		}
		for i := range got.members {
			if !bytes.Equal(got.members[i].rawKey, want.members[i].rawKey) || !bytes.Equal(got.members[i].value, want.members[i].value) {
				t.Fatalf("member %d: %s: %s, want %s: %s", i, got.members[i].rawKey, got.members[i].value, want.members[i].rawKey, want.members[i].value)
			}
		}
		// The facts never fail on a valid object, whatever its shape.
		_ = stateFacts(got)
	})
}

func TestParseStateObjectCopiesInput(t *testing.T) {
	buf := []byte(`{"a": "x"}`)
	o, err := parseStateObject(buf)
	if err != nil {
		t.Fatal(err)
	}
	copy(buf, `{"b": "y"}`)
	if v, _ := o.Get("a"); string(v) != `"x"` {
		t.Errorf("the object aliases the caller's buffer: %s", v)
	}
}
