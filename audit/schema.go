package audit

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/deterministic-exec/des/internal/jsonschemas"
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

// eventSchemas holds each event type's schema, compiled on first use, once
// per process: a hook appends one to three entries of one to three types,
// and compiling all of them would cost more than the append. Each compiles
// its own copy of the shared entry schema (about 0.2 ms for each further
// type a process appends). The table is built on first use too, so that
// init allocates next to nothing (TestE2EInitWork).
var eventSchemas = sync.OnceValue(newEventSchemas)

func newEventSchemas() map[EventType]*jsonschemas.Schema {
	entry := Schema("")
	m := make(map[EventType]*jsonschemas.Schema, len(EventTypes()))
	for _, ev := range EventTypes() {
		// A failed pattern shows its regular expression: what failed is
		// des's own writing, and the reader is a developer.
		m[ev] = jsonschemas.New(schemaBase+string(ev)+".schema.json", Schema(ev),
			jsonschemas.Ref(schemaBase+"entry.schema.json", entry), jsonschemas.PatternRegexp())
	}
	return m
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
	schema, ok := eventSchemas()[e.Event]
	if !ok {
		return fmt.Errorf("%w: no schema for event type %q (not one of audit.EventTypes)", ErrSchema, e.Event)
	}
	if err := schema.Compile(); err != nil {
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
	errs := schema.Validate(doc)
	if errs == nil {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, se := range errs {
		msgs[i] = se.Error()
	}
	return fmt.Errorf("%w: %s: %s", ErrSchema, e.Event, strings.Join(msgs, "; "))
}
