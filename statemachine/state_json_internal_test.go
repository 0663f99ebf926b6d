package statemachine

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
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
	t.Parallel()
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

// stateTestDocuments are workflow states (testdata/state) and real step
// files of the corpus, to seed the differential tests with real-world JSON.
func stateTestDocuments(tb testing.TB) [][]byte {
	files, _ := filepath.Glob("testdata/state/*.json")
	steps, _ := filepath.Glob("../../shared/corpus/nwave-steps/*.json")
	files = append(files, steps[:min(len(steps), 40)]...)
	var out [][]byte
	for _, f := range files {
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
	for _, d := range firstN(stateTestDocuments(f), 5) {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := validJSON(data), json.Valid(data); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid says %v", data, got, want)
		}
	})
}

// parseStateDoc gives the object ParseObject gives, or fails with the same
// error, and the facts stateFacts extracts from that object.
func FuzzParseStateDoc(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"a":"x\"}","b":[{"c":"\\"}]}`, ` {"a" : { "b" : [ 1 , 2 ] } } `, `[]`, `{`,
		`{"phases": {"a": {"status": "x", "timing": {"retries": 1}}, "a": null}, "state_version": 2.0}`,
		`{ "active_workflow" : { "phase_status" : { "a" : "b" , "c" : 1 } , "phases" : [ "a" , "b" ] } }`} {
		f.Add([]byte(s))
	}
	for _, d := range firstN(stateTestDocuments(f), 5) {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, facts, gerr := parseStateDoc(data)
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
		if again := stateFacts(got); !reflect.DeepEqual(facts, again) {
			t.Fatalf("facts at parse %v, from the members %v", facts, again)
		}
		// encoding/json decodes invalid UTF-8 to U+FFFD; DES keeps the
		// bytes, as the Step reader does.
		if utf8.Valid(data) {
			if ref := referenceFacts(t, data); !reflect.DeepEqual(facts, ref) {
				t.Fatalf("facts %v, want %v", facts, ref)
			}
		}
	})
}

// referenceFacts is what Facts means, written the obvious way: decode the
// whole document with encoding/json and keep the known fields of the right
// kinds.
func referenceFacts(t *testing.T, data []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	return referenceObject(doc, stateFactFields)
}

func referenceObject(doc map[string]any, fields []factField) map[string]any {
	out := map[string]any{}
	for _, f := range fields {
		if x, ok := referenceFact(&f, doc[f.key]); ok {
			out[f.key] = x
		}
	}
	return out
}

func referenceFact(f *factField, v any) (any, bool) {
	switch f.kind {
	case factString:
		s, ok := v.(string)
		return s, ok
	case factBool:
		b, ok := v.(bool)
		return b, ok
	case factInt:
		n, ok := v.(json.Number)
		if !ok {
			return nil, false
		}
		_, ok = integral([]byte(n))
		return n, ok
	case factStrings:
		a, ok := v.([]any)
		if !ok {
			return nil, false
		}
		for _, e := range a {
			if _, ok := e.(string); !ok {
				return nil, false
			}
		}
		return a, true
	case factStringMap, factObjectMap:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		item := &factField{kind: factString}
		if f.kind == factObjectMap {
			item = &factField{kind: factObject, fields: f.fields}
		}
		out := map[string]any{}
		for k, e := range m {
			if x, ok := referenceFact(item, e); ok {
				out[k] = x
			}
		}
		return out, true
	case factObject:
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		return referenceObject(m, f.fields), true
	}
	return nil, false
}

func TestFactsMatchReference(t *testing.T) {
	t.Parallel()
	docs := stateTestDocuments(t)
	for _, src := range []string{
		`{"phases": {"a": {"status": "x", "timing": {"retries": 1}}, "a": null}, "state_version": 2.0}`,
		`{"active_workflow": {"phase_status": {"a": "b", "c": 1, "a": null}, "phases": ["a", "b"]}, "active_workflow": {"type": "t"}}`,
		`{"phases": {"p": {"iteration_requirements": {"test_iteration": {"completed": true, "completed": "x"}}}}}`,
	} {
		docs = append(docs, []byte(src))
	}
	for _, d := range docs {
		_, facts, err := parseStateDoc(d)
		if err != nil {
			t.Fatal(err)
		}
		if ref := referenceFacts(t, d); !reflect.DeepEqual(facts, ref) {
			t.Errorf("%.60s: facts %v, want %v", d, facts, ref)
		}
	}
}

func TestParseStateDocCopiesInput(t *testing.T) {
	t.Parallel()
	buf := []byte(`{"a": "x"}`)
	o, _, err := parseStateDoc(buf)
	if err != nil {
		t.Fatal(err)
	}
	copy(buf, `{"b": "y"}`)
	if v, _ := o.Get("a"); string(v) != `"x"` {
		t.Errorf("the object aliases the caller's buffer: %s", v)
	}
}

// Facts reads values set through Object as raw JSON with spaces around.
func TestStateFactsRawValueWithSpaces(t *testing.T) {
	t.Parallel()
	s, err := ParseState([]byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Object().Set("current_phase", json.RawMessage(`  "x"  `)); err != nil {
		t.Fatal(err)
	}
	if err := s.Object().Set("phases", json.RawMessage(" {\"a\": {\"status\": \"done\"}} ")); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"current_phase": "x", "phases": map[string]any{"a": map[string]any{"status": "done"}}}
	if got := s.Facts(); !reflect.DeepEqual(got, want) {
		t.Errorf("Facts = %v, want %v", got, want)
	}
}

// firstN is at most n documents: without the shared corpus there are fewer.
func firstN(docs [][]byte, n int) [][]byte { return docs[:min(n, len(docs))] }
