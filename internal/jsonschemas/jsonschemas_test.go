package jsonschemas_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/deterministic-exec/des/internal/jsonschemas"
)

const (
	mainURL = "https://example.com/main.schema.json"
	refURL  = "https://example.com/shared.schema.json"
)

const mainSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$id": "https://example.com/main.schema.json",
  "type": "object",
  "$ref": "shared.schema.json",
  "allOf": [
    {
      "description": "a name is required: name or spec.name",
      "anyOf": [{"required": ["name"]}, {"required": ["spec"], "properties": {"spec": {"required": ["name"]}}}]
    }
  ],
  "properties": {
    "name": {"type": "string", "minLength": 1},
    "count": {"type": ["integer", "null"], "minimum": 0},
    "flag": {"type": ["boolean", "null"]},
    "status": {"enum": ["open", "closed", null]},
    "kind": {"const": "task"},
    "id": {"type": "string", "pattern": "^[a-z]+$", "description": "an id is lowercase letters"},
    "code": {"type": "string", "pattern": "^[0-9]+$"},
    "target": {
      "description": "a target is a path or a url",
      "type": "object",
      "oneOf": [{"required": ["path"]}, {"required": ["url"]}]
    },
    "anyOf": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}},
    "items": {"type": "array", "items": {"type": "string"}}
  }
}`

const sharedSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$id": "https://example.com/shared.schema.json",
  "properties": {
    "stamp": {"type": "string", "pattern": "^[0-9]{4}$", "description": "a stamp is four digits"}
  }
}`

func decode(t *testing.T, src string) any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(src))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return v
}

func TestValidate(t *testing.T) {
	s := jsonschemas.New(mainURL, []byte(mainSchema), jsonschemas.Ref(refURL, []byte(sharedSchema)))
	long := strings.Repeat("é", 70)
	for _, tc := range []struct {
		name string
		doc  string
		want []jsonschemas.Error
	}{
		{"valid", `{"name": "a", "status": null, "target": {"path": "p"}}`, nil},
		{"spec name", `{"spec": {"name": "a"}}`, nil},
		{"not an object", `[]`, []jsonschemas.Error{{"", "expected object, but got array"}}},
		// A failed anyOf is the description of the schema holding only it.
		{"no name", `{}`, []jsonschemas.Error{{"", "a name is required: name or spec.name"}}},
		// The scalar found follows the message; strings are cut.
		{"number found", `{"name": 1}`, []jsonschemas.Error{{"/name", "expected string, but got number (found 1)"}}},
		{"bool found", `{"name": "a", "count": true}`, []jsonschemas.Error{{"/count", "expected integer or null, but got boolean (found true)"}}},
		{"string found", `{"name": "a", "flag": "yes"}`, []jsonschemas.Error{{"/flag", `expected boolean or null, but got string (found "yes")`}}},
		{"long string cut", `{"name": "a", "flag": "` + long + `"}`, []jsonschemas.Error{{"/flag", `expected boolean or null, but got string (found "` + long[:120] + `…")`}}},
		{"empty string", `{"name": ""}`, []jsonschemas.Error{{"/name", `length must be >= 1, but got 0 (found "")`}}},
		{"container not shown", `{"name": {"x": 1}}`, []jsonschemas.Error{{"/name", "expected string, but got object"}}},
		{"minimum shows the value once", `{"name": "a", "count": -2}`, []jsonschemas.Error{{"/count", "must be >= 0 but found -2"}}},
		// null in an enum reads as JSON, not Go.
		{"enum with null", `{"name": "a", "status": "done"}`, []jsonschemas.Error{{"/status", `value must be one of "open", "closed", null (found "done")`}}},
		{"const", `{"name": "a", "kind": "bug"}`, []jsonschemas.Error{{"/kind", `value must be "task" (found "bug")`}}},
		// A pattern reads as its description, in this resource or another.
		{"pattern described", `{"name": "a", "id": "A1"}`, []jsonschemas.Error{{"/id", `an id is lowercase letters (found "A1")`}}},
		{"pattern in a ref", `{"name": "a", "stamp": "x"}`, []jsonschemas.Error{{"/stamp", `a stamp is four digits (found "x")`}}},
		{"pattern undescribed", `{"name": "a", "code": "x"}`, []jsonschemas.Error{{"/code", `does not match pattern '^[0-9]+$' (found "x")`}}},
		// A oneOf whose schema holds more than the alternatives lists them.
		{"oneOf none", `{"name": "a", "target": {}}`, []jsonschemas.Error{{"/target", "expected one of: missing properties: 'path'; or missing properties: 'url'"}}},
		{"oneOf both", `{"name": "a", "target": {"path": "p", "url": "u"}}`, []jsonschemas.Error{{"/target", "valid against schemas at indexes 0 and 1"}}},
		// A property named anyOf is not an anyOf.
		{"property named anyOf", `{"name": "a", "anyOf": {"a": 1, "b": 2}}`, []jsonschemas.Error{
			{"/anyOf/a", "expected string, but got number (found 1)"},
			{"/anyOf/b", "expected string, but got number (found 2)"},
		}},
		// All errors, sorted by pointer then message.
		{"sorted", `{"items": ["a", 2], "flag": 1, "count": "x"}`, []jsonschemas.Error{
			{"", "a name is required: name or spec.name"},
			{"/count", `expected integer or null, but got string (found "x")`},
			{"/flag", "expected boolean or null, but got number (found 1)"},
			{"/items/1", "expected string, but got number (found 2)"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, s.Validate(decode(t, tc.doc))); diff != "" {
				t.Errorf("Validate(%s) (-want +got):\n%s", tc.doc, diff)
			}
		})
	}
}

func TestAlternativesWithoutDescription(t *testing.T) {
	s := jsonschemas.New(mainURL, []byte(`{"properties": {"v": {"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 1}]}}}`))
	got := s.Validate(decode(t, `{"v": 0}`))
	want := []jsonschemas.Error{{"/v", "expected one of: expected string, but got number (found 0); or must be >= 1 but found 0"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestPatternRegexp(t *testing.T) {
	s := jsonschemas.New(mainURL, []byte(mainSchema), jsonschemas.Ref(refURL, []byte(sharedSchema)), jsonschemas.PatternRegexp())
	got := s.Validate(decode(t, `{"name": "a", "stamp": "x"}`))
	want := []jsonschemas.Error{{"/stamp", `does not match pattern '^[0-9]{4}$' (found "x")`}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// A document JSON cannot hold, and a schema that does not compile, fail
// validation rather than pass it.
func TestFailures(t *testing.T) {
	s := jsonschemas.New(mainURL, []byte(mainSchema), jsonschemas.Ref(refURL, []byte(sharedSchema)))
	if errs := s.Validate(map[string]any{"name": struct{}{}}); len(errs) != 1 || !strings.HasPrefix(errs[0].Message, "not a JSON document: ") {
		t.Errorf("Go struct: %v", errs)
	}
	if err := s.Compile(); err != nil {
		t.Errorf("Compile = %v", err)
	}
	for _, bad := range []string{`{`, `{"type": 3}`, `{"$ref": "missing.schema.json"}`} {
		b := jsonschemas.New(mainURL, []byte(bad))
		if err := b.Compile(); err == nil {
			t.Errorf("%s compiled", bad)
		}
		if errs := b.Validate(map[string]any{}); len(errs) != 1 || errs[0].Pointer != "" || !strings.HasPrefix(errs[0].Message, "internal error: ") {
			t.Errorf("%s: Validate = %v", bad, errs)
		}
	}
}

func TestConcurrentFirstUse(t *testing.T) {
	s := jsonschemas.New(mainURL, []byte(mainSchema), jsonschemas.Ref(refURL, []byte(sharedSchema)))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if errs := s.Validate(map[string]any{"name": 1.0}); len(errs) != 1 {
				t.Errorf("Validate = %v", errs)
			}
		})
	}
	wg.Wait()
}

func TestErrorAndFacts(t *testing.T) {
	errs := []jsonschemas.Error{{"", "m"}, {"/a", "n"}}
	if got := errs[0].Error() + "; " + errs[1].Error(); got != "(root): m; /a: n" {
		t.Errorf("Error() = %q", got)
	}
	want := []any{map[string]any{"pointer": "", "msg": "m"}, map[string]any{"pointer": "/a", "msg": "n"}}
	if diff := cmp.Diff(want, jsonschemas.Facts(errs)); diff != "" {
		t.Errorf("Facts (-want +got):\n%s", diff)
	}
	if f := jsonschemas.Facts(nil); f == nil || len(f) != 0 {
		t.Errorf("Facts(nil) = %#v, want an empty list", f)
	}
}
