package taskgraph

import (
	"bytes"
	_ "embed"

	"github.com/deterministic-exec/des/internal/jsonschemas"
)

//go:embed taskgraph.schema.json
var schemaJSON []byte

// compiledSchema compiles on first use: most hook events never validate a
// graph and should not pay for it.
var compiledSchema = jsonschemas.New("https://github.com/deterministic-exec/des/internal/taskgraph/taskgraph.schema.json", schemaJSON)

// Schema returns the task graph's JSON Schema (draft 2020-12), the text
// Validate checks against.
func Schema() []byte { return bytes.Clone(schemaJSON) }

// SchemaError is one way a document fails the schema: Pointer is the JSON
// pointer of the offending value ("" is the document), Message what was
// expected (a pattern's in the words of its description) and the scalar
// found. Error renders "pointer: message", the document itself as "(root)".
type SchemaError = jsonschemas.Error

// Validate checks a decoded document (numbers as json.Number or float64)
// against the schema. It returns the leaf errors sorted by pointer then
// message, without duplicates; nil when the document is valid.
func Validate(doc any) []SchemaError { return compiledSchema.Validate(doc) }
