package audit

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// ErrSchema reports an entry that fails its event type's JSON Schema, or
// whose event type has none. Append writes nothing when an entry fails.
var ErrSchema = errors.New("entry fails its event schema")

//go:embed schema/*.schema.json
var schemaFS embed.FS

const schemaBase = "https://github.com/deterministic-exec/des/audit/schema/"

// Schema returns the JSON Schema (draft 2020-12) of an event type's line, or
// of the keys every line has (file "entry.schema.json") when event is "".
// The event schemas refer to that one as "entry.schema.json". It returns
// nil for an event type des does not write (EventTypes lists them).
func Schema(event EventType) []byte {
	name := "entry"
	if event != "" {
		name = string(event)
	}
	data, err := schemaFS.ReadFile("schema/" + name + ".schema.json")
	if err != nil {
		return nil
	}
	return data
}

// eventSchemas compiles each event type's schema on first use, once per
// process: a hook appends one to three entries of one to three types, and
// compiling all nineteen would cost more than the append.
var eventSchemas = newEventSchemas()

// schemaSet holds the compiled schemas of the event types used so far. One
// compiler serves them all, so that the schema they share ("entry") is
// loaded and checked against the meta-schema once.
type schemaSet struct {
	mu       sync.Mutex
	compiler *jsonschema.Compiler
	loaded   map[string]bool // resources added to compiler
	compiled map[EventType]*jsonschema.Schema
}

func newEventSchemas() *schemaSet {
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft2020
	return &schemaSet{compiler: c, loaded: map[string]bool{}, compiled: map[EventType]*jsonschema.Schema{}}
}

// get returns the compiled schema of event; ok is false for an event type
// des does not write (EventTypes lists them).
func (ss *schemaSet) get(event EventType) (s *jsonschema.Schema, ok bool, err error) {
	if !slices.Contains(EventTypes(), event) {
		return nil, false, nil
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if s := ss.compiled[event]; s != nil {
		return s, true, nil
	}
	for _, name := range []string{"entry", string(event)} {
		if ss.loaded[name] {
			continue
		}
		data, err := schemaFS.ReadFile("schema/" + name + ".schema.json")
		if err != nil {
			return nil, true, fmt.Errorf("load schema of %s: %w", event, err)
		}
		if err := ss.compiler.AddResource(schemaBase+name+".schema.json", bytes.NewReader(data)); err != nil {
			return nil, true, fmt.Errorf("load schema of %s: %w", event, err)
		}
		ss.loaded[name] = true
	}
	s, err = ss.compiler.Compile(schemaBase + string(event) + ".schema.json")
	if err != nil {
		return nil, true, fmt.Errorf("compile schema of %s: %w", event, err)
	}
	ss.compiled[event] = s
	return s, true, nil
}

// Placeholders for the keys Append sets under the lock, so that an entry can
// be checked against its schema before the lock is taken.
var (
	placeholderSeq  = json.Number("1")
	placeholderPrev = strings.Repeat("0", 64)
)

// validate checks an entry, whose fields body encodeFields produced, against
// its event type's schema. The error names the event and the JSON pointer of
// each failing value.
func validate(e Entry, timestamp string, body []byte) error {
	schema, ok, err := eventSchemas.get(e.Event)
	if !ok {
		return fmt.Errorf("%w: no schema for event type %q (not one of audit.EventTypes)", ErrSchema, e.Event)
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrSchema, e.Event, err)
	}
	// The document is the line as JSON sees it: the body decoded again, so
	// that Go values (ints, []string, structs) become JSON values.
	doc := map[string]any{}
	if len(body) > 0 {
		dec := json.NewDecoder(bytes.NewReader(append(append([]byte{'{'}, body[1:]...), '}')))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil {
			return fmt.Errorf("%w: %s: decode fields: %w", ErrSchema, e.Event, err)
		}
	}
	doc[keyTimestamp], doc[keyEvent] = timestamp, string(e.Event)
	doc[keySeq], doc[keyPrev] = placeholderSeq, placeholderPrev
	err = schema.Validate(doc)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return fmt.Errorf("%w: %s: %w", ErrSchema, e.Event, err)
	}
	return fmt.Errorf("%w: %s: %s", ErrSchema, e.Event, strings.Join(leaves(ve), "; "))
}

// leaves renders the innermost causes of a validation error as
// "pointer: message", the document itself as "(root)".
func leaves(ve *jsonschema.ValidationError) []string {
	var out []string
	var walk func(*jsonschema.ValidationError)
	walk = func(v *jsonschema.ValidationError) {
		if len(v.Causes) == 0 {
			p := v.InstanceLocation
			if p == "" {
				p = "(root)"
			}
			out = append(out, p+": "+v.Message)
			return
		}
		for _, c := range v.Causes {
			walk(c)
		}
	}
	walk(ve)
	slices.Sort(out)
	return slices.Compact(out)
}
