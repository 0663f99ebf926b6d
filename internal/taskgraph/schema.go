package taskgraph

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

	"github.com/santhosh-tekuri/jsonschema/v5"
)

//go:embed taskgraph.schema.json
var schemaJSON []byte

const schemaURL = "https://github.com/deterministic-exec/des/internal/taskgraph/taskgraph.schema.json"

// Schema returns the task graph's JSON Schema (draft 2020-12), the text
// Validate checks against.
func Schema() []byte { return bytes.Clone(schemaJSON) }

type compiled struct {
	schema *jsonschema.Schema
	source any // the schema decoded, to read a pattern's description
}

// compiledSchema compiles on first use: most hook events never validate a
// graph and should not pay for it.
var compiledSchema = sync.OnceValues(func() (*compiled, error) {
	var source any
	if err := json.Unmarshal(schemaJSON, &source); err != nil {
		return nil, fmt.Errorf("decode task graph schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	if err := c.AddResource(schemaURL, bytes.NewReader(schemaJSON)); err != nil {
		return nil, fmt.Errorf("load task graph schema: %w", err)
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("compile task graph schema: %w", err)
	}
	return &compiled{schema: s, source: source}, nil
})

// SchemaError is one way a document fails the schema.
type SchemaError struct {
	Pointer string `json:"pointer"` // JSON pointer of the offending value; "" is the document
	Message string `json:"msg"`
}

// Error renders "pointer: message", the document itself as "(root)".
func (e SchemaError) Error() string {
	p := e.Pointer
	if p == "" {
		p = "(root)"
	}
	return p + ": " + e.Message
}

// Validate checks a decoded document (numbers as json.Number or float64)
// against the schema. It returns the leaf errors sorted by pointer then
// message, without duplicates; nil when the document is valid.
func Validate(doc any) []SchemaError {
	cs, err := compiledSchema()
	if err != nil {
		// A bug the tests catch; reported as a failure, never a pass.
		return []SchemaError{{Message: "internal error: " + err.Error()}}
	}
	err = cs.schema.Validate(doc)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
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

func (cs *compiled) flatten(ve *jsonschema.ValidationError, doc any, out *[]SchemaError) {
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			cs.flatten(c, doc, out)
		}
		return
	}
	msg := strings.ReplaceAll(ve.Message, "<nil>", "null") // the library prints a null enum value as Go's
	// A pattern failure reads as a regular expression; the schema's
	// description says it in words.
	if strings.HasSuffix(ve.KeywordLocation, "/pattern") {
		if _, frag, ok := strings.Cut(ve.AbsoluteKeywordLocation, "#"); ok {
			if m, ok := lookup(cs.source, strings.TrimSuffix(frag, "/pattern")).(map[string]any); ok {
				if d, ok := m["description"].(string); ok {
					msg = d
				}
			}
		}
	}
	if s, ok := lookup(doc, ve.InstanceLocation).(string); ok && !strings.Contains(msg, "found") {
		if len(s) > 60 {
			s = s[:60] + "…"
		}
		b, _ := json.Marshal(s)
		msg += " (found " + string(b) + ")"
	}
	*out = append(*out, SchemaError{Pointer: ve.InstanceLocation, Message: msg})
}

// lookup resolves a JSON pointer in a decoded value; nil when it does not.
func lookup(v any, ptr string) any {
	if ptr == "" {
		return v
	}
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
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
