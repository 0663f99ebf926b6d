package statemachine

import (
	"bytes"
	_ "embed"

	"github.com/deterministic-exec/des/internal/jsonschemas"
)

//go:embed schema/step.schema.json
var stepSchemaJSON []byte

// stepSchema compiles on first use only: the hook binary answers most
// events without validating a step file and should not pay for it.
var stepSchema = jsonschemas.New("https://github.com/deterministic-exec/des/statemachine/schema/step.schema.json", stepSchemaJSON)

// StepSchema returns the step file's JSON Schema (draft 2020-12), the text
// ValidateStep checks against.
func StepSchema() []byte { return bytes.Clone(stepSchemaJSON) }

// SchemaError is one way a document fails its schema: Pointer is the JSON
// pointer of the offending value ("" is the document itself), Message what
// was expected, and what was found when it is a scalar. Error renders it as
// "pointer: message", the root as "(root)".
type SchemaError = jsonschemas.Error

// ValidateStep checks a step file, decoded by encoding/json (numbers as
// float64 or json.Number), against the step schema. It returns the leaf
// errors, sorted by pointer then message and without duplicates, or nil when
// the document is valid. A failed anyOf is one error (the description of the
// schema holding it, e.g. the task id rule) rather than one per alternative,
// which would read as if every alternative were required.
func ValidateStep(doc any) []SchemaError { return stepSchema.Validate(doc) }
