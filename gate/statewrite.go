package gate

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/deterministic-exec/des/internal/datadoc"
	"github.com/deterministic-exec/des/internal/isdlc"
	"github.com/deterministic-exec/des/internal/jsonschemas"

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
		facts["schema_errors"] = jsonschemas.Facts(statemachine.ValidateState(doc))
	}
	return facts
}

// shadowedState tells, for a write creating the workflow state file rel,
// which state file is in effect now and whether it holds an active
// workflow, when rel would take its place: the state des reads is the first
// that exists of .des/state.json, the monorepo project's and
// .isdlc/state.json, so creating an earlier one replaces a later one for
// every phase guard. nil when rel would not.
func (d DocumentWrite) shadowedState(ctx context.Context, rel string) (map[string]any, error) {
	wf, err := d.Workflow.find(ctx, "")
	if err != nil || wf == nil {
		return nil, err
	}
	now, _ := wf["state_file"].(string)
	project, _ := wf["project"].(string)
	if now == "" || now == rel || stateRank(rel, project) >= stateRank(now, project) {
		return nil, nil
	}
	state, _ := wf["state"].(map[string]any)
	active, _ := state["active_workflow"].(map[string]any)
	return map[string]any{"state_file": now, "active_workflow": active != nil}, nil
}

// stateRank is the place of a state file in the order des looks for the
// workflow state; files outside that order rank last.
func stateRank(rel, project string) int {
	switch {
	case rel == ".des/state.json":
		return 0
	case project != "" && rel == ".isdlc/projects/"+project+"/state.json":
		return 1
	case rel == ".isdlc/state.json":
		return 2
	}
	return 3
}

// progressFacts adds what the progress rules read to a write of the
// workflow state rel: the whole document the write would leave
// (state.document), the workflow the file holds now
// (state.workflow_before, isdlc's type@started_at), and input.workflow for
// rel with des's evidence of the written document's workflow: a write that
// moves past a phase, or says its tests ran, is judged on what des saw.
// The facts are those of the state in effect where the call runs when rel
// is that state; otherwise (another monorepo project's state, say) rel is
// judged on its own content, with the team's requirement tables.
func (w Workflow) progressFacts(ctx context.Context, cwd, rel string, content, disk []byte, facts, in map[string]any) error {
	if w.Evidence == nil || facts["incoming"] == nil {
		return nil
	}
	v, err := datadoc.Decode(content)
	doc, ok := v.(map[string]any)
	if err != nil || !ok {
		return nil
	}
	wf, err := w.find(ctx, cwd)
	if err != nil {
		return err
	}
	out := map[string]any{}
	if wf != nil && wf["state_file"] == rel {
		for k, v := range wf {
			out[k] = v
		}
	} else if req, ok := wf["requirements"]; ok {
		out["requirements"] = req
	}
	// What the file holds before the write is disk (for a sync check, what
	// git replaced, which is no longer on disk).
	out["state_file"] = rel
	delete(out, "state")
	if dv, err := datadoc.Decode(disk); err == nil && disk != nil {
		if d, ok := dv.(map[string]any); ok {
			out["state"] = d
		}
	}
	ev, err := w.Evidence(ctx, rel, doc)
	if err != nil {
		return err
	}
	before, _ := out["state"].(map[string]any)
	facts["document"] = doc
	facts["workflow_before"] = isdlc.WorkflowID(before)
	if ev != nil {
		out["evidence"] = ev
	} else {
		delete(out, "evidence")
	}
	in["workflow"] = out
	return nil
}
