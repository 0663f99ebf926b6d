package statemachine

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

//go:embed schema/step.schema.json
var stepSchemaJSON []byte

const stepSchemaURL = "https://github.com/deterministic-exec/des/statemachine/schema/step.schema.json"

// StepSchema returns the step file's JSON Schema (draft 2020-12), the text
// ValidateStep checks against.
func StepSchema() []byte { return bytes.Clone(stepSchemaJSON) }

type compiledSchema struct {
	schema *jsonschema.Schema
	source any // the schema decoded, to read the description of an anyOf
}

// stepSchema compiles the schema on first use only: the hook binary answers
// most events without validating a step file and should not pay for it.
var stepSchema = sync.OnceValues(func() (*compiledSchema, error) {
	var source any
	if err := json.Unmarshal(stepSchemaJSON, &source); err != nil {
		return nil, fmt.Errorf("decode step schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	if err := c.AddResource(stepSchemaURL, bytes.NewReader(stepSchemaJSON)); err != nil {
		return nil, fmt.Errorf("load step schema: %w", err)
	}
	s, err := c.Compile(stepSchemaURL)
	if err != nil {
		return nil, fmt.Errorf("compile step schema: %w", err)
	}
	return &compiledSchema{schema: s, source: source}, nil
})

// SchemaError is one way a document fails its schema.
type SchemaError struct {
	Pointer string // JSON pointer of the offending value; "" is the document itself
	Message string // what was expected, and what was found when it is a scalar
}

// Error renders the error as "pointer: message", the root as "(root)".
func (e SchemaError) Error() string {
	p := e.Pointer
	if p == "" {
		p = "(root)"
	}
	return p + ": " + e.Message
}

// ValidateStep checks a step file, decoded by encoding/json (numbers as
// float64 or json.Number), against the step schema. It returns the leaf
// errors, sorted by pointer then message and without duplicates, or nil when
// the document is valid. A failed anyOf is one error (the description of the
// schema holding it, e.g. the task id rule) rather than one per alternative,
// which would read as if every alternative were required.
func ValidateStep(doc any) []SchemaError { return validate(stepSchema, doc) }

// validate checks doc against a lazily compiled schema and flattens the
// errors to their sorted, distinct leaves.
func validate(schema func() (*compiledSchema, error), doc any) []SchemaError {
	cs, err := schema()
	if err != nil {
		// A bug caught by the tests; reported as a failure, never a pass.
		return []SchemaError{{Message: "internal error: " + err.Error()}}
	}
	err = cs.schema.Validate(doc)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		// e.g. a Go value that JSON cannot hold (InvalidJSONTypeError).
		return []SchemaError{{Message: "not a JSON document: " + err.Error()}}
	}
	var out []SchemaError
	cs.flatten(ve, doc, &out)
	slices.SortFunc(out, func(a, b SchemaError) int {
		if c := strings.Compare(a.Pointer, b.Pointer); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	return slices.Compact(out)
}

func (cs *compiledSchema) flatten(ve *jsonschema.ValidationError, doc any, out *[]SchemaError) {
	if len(ve.Causes) > 0 && (strings.HasSuffix(ve.KeywordLocation, "/anyOf") || strings.HasSuffix(ve.KeywordLocation, "/oneOf")) {
		*out = append(*out, SchemaError{Pointer: ve.InstanceLocation, Message: cs.alternatives(ve, doc)})
		return
	}
	if len(ve.Causes) == 0 {
		*out = append(*out, SchemaError{Pointer: ve.InstanceLocation, Message: withFound(ve.Message, doc, ve.InstanceLocation)})
		return
	}
	for _, c := range ve.Causes {
		cs.flatten(c, doc, out)
	}
}

// alternatives describes a failed anyOf/oneOf: the description of the
// schema that holds it, else each alternative's errors joined with "or".
func (cs *compiledSchema) alternatives(ve *jsonschema.ValidationError, doc any) string {
	if _, frag, ok := strings.Cut(ve.AbsoluteKeywordLocation, "#"); ok {
		parent := frag[:strings.LastIndexByte(frag, '/')]
		if m, ok := lookup(cs.source, parent).(map[string]any); ok {
			if d, ok := m["description"].(string); ok && d != "" {
				return d
			}
		}
	}
	var alts []string
	for _, c := range ve.Causes {
		var leaves []SchemaError
		cs.flatten(c, doc, &leaves)
		var parts []string
		for _, l := range leaves {
			parts = append(parts, strings.TrimPrefix(l.Error(), "(root): "))
		}
		alts = append(alts, strings.Join(parts, " and "))
	}
	return "expected one of: " + strings.Join(alts, "; or ")
}

// withFound appends the offending value to msg when it is a scalar and msg
// does not already show it.
func withFound(msg string, doc any, ptr string) string {
	if strings.Contains(msg, " but found ") { // minimum, maximum, ...
		return msg
	}
	var s string
	switch v := lookup(doc, ptr).(type) {
	case string:
		if utf8.RuneCountInString(v) > 60 {
			v = string([]rune(v)[:60]) + "…"
		}
		b, _ := json.Marshal(v)
		s = string(b)
	case bool:
		s = strconv.FormatBool(v)
	case json.Number:
		s = v.String()
	case float64:
		s = strconv.FormatFloat(v, 'g', -1, 64)
	default:
		return msg // null and containers: the message names the type found
	}
	return msg + " (found " + s + ")"
}

// lookup resolves a JSON pointer in a generically decoded value; nil when
// it does not resolve.
func lookup(v any, ptr string) any {
	if ptr == "" {
		return v
	}
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := v.(type) {
		case map[string]any:
			v = c[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}
			v = c[i]
		default:
			return nil
		}
	}
	return v
}
