// Package jsonschemas validates decoded JSON documents against des's
// embedded JSON Schemas (draft 2020-12) and reports each failure as an
// [Error]: the JSON pointer of the value and a message that says what was
// expected and what was found.
//
// A [Schema] compiles on first use, once: a hook process answers most events
// without validating anything and should not pay for compiling.
package jsonschemas

import (
	"bytes"
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

// Error is one way a document fails its schema.
type Error struct {
	Pointer string `json:"pointer"` // JSON pointer of the offending value; "" is the document itself
	Message string `json:"msg"`     // what was expected, and the value found when it is a scalar
}

// Error renders the error as "pointer: message", the root as "(root)".
func (e Error) Error() string {
	p := e.Pointer
	if p == "" {
		p = "(root)"
	}
	return p + ": " + e.Message
}

// Facts renders errors as a policy input carries them: objects with the
// keys "pointer" and "msg".
func Facts(errs []Error) []any {
	out := make([]any, len(errs))
	for i, e := range errs {
		out[i] = map[string]any{"pointer": e.Pointer, "msg": e.Message}
	}
	return out
}

// Schema is a JSON Schema and the documents it refers to, compiled on first
// use. It is safe for concurrent use.
type Schema struct {
	compiled func() (*compiled, error)
}

type compiled struct {
	schema *jsonschema.Schema
	// sources are the resources decoded, by URL, to read descriptions; only
	// a failed validation needs them.
	sources func() map[string]any
	opts    options
}

type resource struct {
	url  string
	data []byte
}

type options struct {
	refs          []resource
	patternRegexp bool
}

// An Option changes how a Schema loads or reports.
type Option func(*options)

// Ref adds a document the schema refers to, under the URL its references
// resolve to.
func Ref(url string, data []byte) Option {
	return func(o *options) { o.refs = append(o.refs, resource{url, data}) }
}

// PatternRegexp reports a failed pattern as the library words it (does not
// match pattern '...'), not as the description of the schema holding it.
func PatternRegexp() Option {
	return func(o *options) { o.patternRegexp = true }
}

// New returns the schema data, whose references resolve against url.
// Nothing is decoded or compiled until the first Validate or Compile.
func New(url string, data []byte, opts ...Option) *Schema {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return &Schema{compiled: sync.OnceValues(func() (*compiled, error) {
		resources := append([]resource{{url, data}}, o.refs...)
		c := jsonschema.NewCompiler()
		c.Draft = jsonschema.Draft2020
		for _, r := range resources {
			if err := c.AddResource(r.url, bytes.NewReader(r.data)); err != nil {
				return nil, fmt.Errorf("load schema %s: %w", r.url, err)
			}
		}
		s, err := c.Compile(url)
		if err != nil {
			return nil, fmt.Errorf("compile schema %s: %w", url, err)
		}
		return &compiled{schema: s, opts: o, sources: sync.OnceValue(func() map[string]any {
			m := map[string]any{}
			for _, r := range resources {
				var v any
				_ = json.Unmarshal(r.data, &v) // it compiled, so it decodes
				m[r.url] = v
			}
			return m
		})}, nil
	})}
}

// Compile compiles the schema if it has not been, and reports whether it
// compiled.
func (s *Schema) Compile() error {
	_, err := s.compiled()
	return err
}

// Validate checks doc, decoded by encoding/json (numbers as float64 or
// json.Number), against the schema. It returns the errors sorted by pointer
// then message and without duplicates, or nil when doc is valid.
//
// The errors are the leaves of the library's error tree, except that a failed
// anyOf or oneOf is one error: the description of a schema that holds only
// the alternatives (e.g. "a task id is required: ..."), else each
// alternative's errors joined by "or". One error per alternative would read
// as if every alternative were required.
func (s *Schema) Validate(doc any) []Error {
	cs, err := s.compiled()
	if err != nil {
		// A bug the tests catch; reported as a failure, never a pass.
		return []Error{{Message: "internal error: " + err.Error()}}
	}
	err = cs.schema.Validate(doc)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		// e.g. a Go value that JSON cannot hold (InvalidJSONTypeError).
		return []Error{{Message: "not a JSON document: " + err.Error()}}
	}
	var out []Error
	cs.flatten(ve, doc, &out)
	slices.SortFunc(out, func(a, b Error) int {
		if c := strings.Compare(a.Pointer, b.Pointer); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	return slices.Compact(out)
}

func (cs *compiled) flatten(ve *jsonschema.ValidationError, doc any, out *[]Error) {
	switch kw := keyword(ve.KeywordLocation); {
	case (kw == "anyOf" || kw == "oneOf") && ve.Message == kw+" failed": // not a property named so
		*out = append(*out, Error{Pointer: ve.InstanceLocation, Message: cs.alternatives(ve, doc)})
	case len(ve.Causes) > 0:
		for _, c := range ve.Causes {
			cs.flatten(c, doc, out)
		}
	default:
		*out = append(*out, Error{Pointer: ve.InstanceLocation, Message: cs.leaf(ve, kw, doc)})
	}
}

// leaf words one failed keyword.
func (cs *compiled) leaf(ve *jsonschema.ValidationError, kw string, doc any) string {
	msg := ve.Message
	switch kw {
	case "enum", "const":
		// The library prints a null among the values as Go's <nil>.
		msg = strings.ReplaceAll(msg, " <nil>,", " null,")
		if rest, ok := strings.CutSuffix(msg, " <nil>"); ok {
			msg = rest + " null"
		}
	case "pattern":
		// A regular expression is hard to read; the schema's description
		// says it in words.
		if d := cs.description(ve.AbsoluteKeywordLocation); d != "" && !cs.opts.patternRegexp {
			msg = d
		}
	case "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf", "format":
		return msg // the message shows the value already
	}
	if found := scalar(lookup(doc, ve.InstanceLocation)); found != "" {
		msg += " (found " + found + ")"
	}
	return msg
}

// alternatives words a failed anyOf/oneOf.
func (cs *compiled) alternatives(ve *jsonschema.ValidationError, doc any) string {
	if d := cs.description(ve.AbsoluteKeywordLocation); d != "" {
		return d
	}
	var alts []string
	for _, c := range ve.Causes {
		var leaves []Error
		cs.flatten(c, doc, &leaves)
		var parts []string
		for _, l := range leaves {
			if l.Pointer == ve.InstanceLocation {
				parts = append(parts, l.Message)
			} else {
				parts = append(parts, l.Error())
			}
		}
		alts = append(alts, strings.Join(parts, " and "))
	}
	return "expected one of: " + strings.Join(alts, "; or ")
}

// description returns the description of the schema holding the keyword at
// an absolute keyword location ("url#/pointer"), or "" when it has none. For an anyOf or oneOf, only a schema that
// holds nothing else counts: a larger schema's description is about more
// than the alternatives.
func (cs *compiled) description(absLoc string) string {
	url, frag, ok := strings.Cut(absLoc, "#")
	if !ok {
		return ""
	}
	kw := keyword(frag)
	m, ok := lookup(cs.sources()[url], frag[:max(strings.LastIndexByte(frag, '/'), 0)]).(map[string]any)
	if !ok {
		return ""
	}
	if kw == "anyOf" || kw == "oneOf" {
		for k := range m {
			switch k {
			case kw, "description", "title", "$comment":
			default:
				return ""
			}
		}
	}
	d, _ := m["description"].(string)
	return d
}

// keyword is the last token of a keyword location.
func keyword(loc string) string { return loc[strings.LastIndexByte(loc, '/')+1:] }

// scalar renders a string (cut to 60 characters), bool or number as JSON;
// "" for null and containers, whose type the message names.
func scalar(v any) string {
	switch v := v.(type) {
	case string:
		if utf8.RuneCountInString(v) > 60 {
			v = string([]rune(v)[:60]) + "…"
		}
		b, _ := json.Marshal(v)
		return string(b)
	case bool:
		return strconv.FormatBool(v)
	case json.Number:
		return v.String()
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return ""
}

// lookup resolves a JSON pointer in a decoded value; nil when it does not
// resolve.
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
