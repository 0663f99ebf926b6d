package gate

import (
	"encoding/json"
	"errors"

	"github.com/deterministic-exec/des/statemachine"
)

// stateWriteFacts are what the workflow-state rules (des.statewrite) read:
// the known fields of the incoming document and of the file on disk, nulls
// dropped, des's memory of the document (seen, nil when none), and what is
// wrong with the incoming content.
func stateWriteFacts(rel string, content, disk []byte, seen map[string]any) map[string]any {
	facts := map[string]any{"path": rel}
	if seen != nil {
		facts["seen"] = seen
	}
	if disk != nil {
		if s, err := statemachine.ParseState(disk); err == nil {
			facts["disk"] = s.Facts()
		}
	}
	s, err := statemachine.ParseState(content)
	switch {
	case errors.Is(err, statemachine.ErrNotObject):
		facts["problem"], facts["error"] = "not_object", err.Error()
		return facts
	case err != nil:
		facts["problem"], facts["error"] = "invalid_json", err.Error()
		return facts
	}
	facts["incoming"] = s.Facts()
	var doc any
	if err := json.Unmarshal(content, &doc); err == nil {
		facts["schema_errors"] = schemaFacts(statemachine.ValidateState(doc))
	}
	return facts
}
