package claudecode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/deterministic-exec/des/internal/datadoc"
)

// maxInput bounds what the hook reads from stdin (docs/reference.md, "Hook events"). Claude Code
// payloads carry whole file contents and prompts, so the bound is generous,
// but a hook must never buffer an unbounded stream.
const maxInput = 8 << 20

// Hook event names DES routes on. Other events pass through untouched.
const (
	eventPreToolUse   = "PreToolUse"
	eventPostToolUse  = "PostToolUse"
	eventSubagentStop = "SubagentStop"
	// eventPostToolUseFailure follows a tool call that failed: its effects
	// on disk are checked all the same.
	eventPostToolUseFailure = "PostToolUseFailure"
	// The subagent registry's events (orchestration governance).
	eventSubagentStart    = "SubagentStart"
	eventUserPromptSubmit = "UserPromptSubmit"
	// eventSessionStart is recorded, for des-hook doctor.
	eventSessionStart = "SessionStart"
	// eventPostToolBatch follows a batch of tool calls, listing them all:
	// a call the user declined has no PostToolUse, only this.
	eventPostToolBatch = "PostToolBatch"
)

// Tool names DES routes on. "Task" is the pre-2.1.63 name of "Agent".
const (
	toolAgent           = "Agent"
	toolTask            = "Task"
	toolWrite           = "Write"
	toolEdit            = "Edit"
	toolMultiEdit       = "MultiEdit"
	toolBash            = "Bash"
	toolNotebook        = "NotebookEdit"
	toolAskUserQuestion = "AskUserQuestion" // Claude Code's menu tool: the user answers
	toolSkill           = "Skill"
	// toolMCP stands, in the route table, for every MCP tool
	// (mcp__<server>__<tool>).
	toolMCP = "mcp__*"
)

// isSubagentTool reports whether name is the tool that starts a subagent,
// under its current name (Agent) or its older one (Task).
func isSubagentTool(name string) bool { return name == toolAgent || name == toolTask }

// Event is one Claude Code hook payload. It covers the fields of every event
// seen in the wild; fields an event does not carry stay zero. Unknown fields
// are ignored, and Raw keeps the payload verbatim for anything not listed.
type Event struct {
	// Common to every event.
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	PermissionMode string `json:"permission_mode"`
	HookEventName  string `json:"hook_event_name"`

	// Tool events (PreToolUse, PostToolUse, PostToolUseFailure, PermissionRequest).
	ToolName              string          `json:"tool_name"`
	ToolInput             json.RawMessage `json:"tool_input"`    // see the typed accessors
	ToolResponse          json.RawMessage `json:"tool_response"` // object or array, tool-specific
	ToolUseID             string          `json:"tool_use_id"`
	Error                 string          `json:"error"`        // PostToolUseFailure
	IsInterrupt           bool            `json:"is_interrupt"` // PostToolUseFailure
	DurationMS            int64           `json:"duration_ms"`
	PermissionSuggestions json.RawMessage `json:"permission_suggestions"` // PermissionRequest
	ToolCalls             json.RawMessage `json:"tool_calls"`             // PostToolBatch

	// Set when the event happens inside a subagent, and on SubagentStart/Stop.
	AgentID             string `json:"agent_id"`
	AgentType           string `json:"agent_type"`
	AgentTranscriptPath string `json:"agent_transcript_path"`

	// Stop and SubagentStop.
	StopHookActive       bool            `json:"stop_hook_active"`
	LastAssistantMessage string          `json:"last_assistant_message"`
	BackgroundTasks      json.RawMessage `json:"background_tasks"`
	SessionCrons         json.RawMessage `json:"session_crons"`

	// UserPromptSubmit.
	Prompt   string `json:"prompt"`
	PromptID string `json:"prompt_id"`

	// SessionStart (source, model), SessionEnd (reason), PreCompact (trigger,
	// custom_instructions), Notification (message, title, notification_type).
	Source             string `json:"source"`
	Model              string `json:"model"`
	Reason             string `json:"reason"`
	Trigger            string `json:"trigger"`
	CustomInstructions string `json:"custom_instructions"`
	Message            string `json:"message"`
	Title              string `json:"title"`
	NotificationType   string `json:"notification_type"`

	// TaskCreated / TaskCompleted.
	TaskID          string `json:"task_id"`
	TaskSubject     string `json:"task_subject"`
	TaskDescription string `json:"task_description"`

	// InstructionsLoaded.
	FilePath   string `json:"file_path"`
	MemoryType string `json:"memory_type"`
	LoadReason string `json:"load_reason"`

	Effort json.RawMessage `json:"effort"` // {"level": ...} on newer versions

	Raw json.RawMessage `json:"-"` // the payload as received
	// Mismatches name the fields of an unexpected JSON type, read as
	// absent (DecodeEvent).
	Mismatches []string `json:"-"`
}

// DecodeEvent decodes one hook event, as Claude Code writes it to a
// command hook's stdin: one JSON object, its fields taken by their exact
// keys. A known field of an unexpected JSON type (a future Claude Code
// changing a field des does not use) does not lose the event: it reads as
// absent and is named in Mismatches. Anything but one JSON object is an
// error saying where.
func DecodeEvent(data []byte) (*Event, error) {
	ev, mismatches, err := decodeEvent(data)
	if err != nil {
		return nil, err
	}
	ev.Mismatches = mismatches
	return ev, nil
}

// errNotObject rejects payloads that are valid JSON but not one object.
var errNotObject = errors.New("malformed JSON event: expected one JSON object")

// readEvent reads at most maxInput bytes from r and decodes one event.
// A payload over the bound is an error naming the limit: truncating it would
// judge a different document than Claude Code holds.
func readEvent(r io.Reader) (*Event, []string, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return nil, nil, fmt.Errorf("read stdin: %w", err)
	}
	if len(data) > maxInput {
		return nil, nil, fmt.Errorf("the event on stdin exceeds the %d MiB (%d bytes) input limit", maxInput>>20, maxInput)
	}
	return decodeEvent(data)
}

// decodeEvent decodes one payload. A field of an unexpected JSON type (a
// future Claude Code changing a field DES does not use, say) does not lose
// the whole event: the other fields are kept and the mismatch is returned as
// a warning, so only the mistyped field reads as absent.
func decodeEvent(data []byte) (*Event, []string, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, nil, errors.New("empty input: expected one JSON hook event on stdin")
	}
	if trimmed[0] != '{' {
		return nil, nil, errNotObject
	}
	// The whole payload is checked first (syntax, one object, nothing after
	// it); fields are then taken by their exact keys. json.Valid scans
	// without building anything; only a payload it refuses is decoded
	// again, for an error that says where and what.
	if !json.Valid(trimmed) {
		var members map[string]json.RawMessage
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		if err := dec.Decode(&members); err != nil {
			if _, derr := datadoc.Decode(trimmed); derr != nil {
				err = derr // the same error, with its line and column
			}
			return nil, nil, fmt.Errorf("malformed JSON event: %w", err)
		}
		end := int(dec.InputOffset())
		if _, err := dec.Token(); err != io.EOF {
			extra := end + len(trimmed[end:]) - len(bytes.TrimLeft(trimmed[end:], " \t\r\n"))
			return nil, nil, fmt.Errorf("malformed JSON event: %s: data after the event object", datadoc.Position(trimmed, extra))
		}
	}
	var ev Event
	mistyped, err := decodeExact(trimmed, &ev, true)
	if err != nil {
		return nil, nil, fmt.Errorf("malformed JSON event: %w", err)
	}
	var warnings []string
	for _, m := range mistyped {
		warnings = append(warnings, fmt.Sprintf("field %q: %v; treated as absent", m.Field, m.Err))
	}
	ev.Raw = json.RawMessage(trimmed)
	return &ev, warnings, nil
}

// SubagentInput is tool_input of Agent/Task: the subagent's prompt is where
// DES markers live.
type SubagentInput struct {
	Prompt          string `json:"prompt"`
	Description     string `json:"description"`
	SubagentType    string `json:"subagent_type"`
	Model           string `json:"model"`
	RunInBackground bool   `json:"run_in_background"`
	Resume          string `json:"resume"`
}

// SubagentResponse is the part of an Agent/Task tool_response DES reads:
// which subagent ran and how it ended ("completed", "async_launched", ...).
type SubagentResponse struct {
	Status  string `json:"status"`
	AgentID string `json:"agentId"`
	Prompt  string `json:"prompt"`
	IsAsync bool   `json:"isAsync"`
}

// WriteInput is tool_input of Write.
type WriteInput struct {
	FilePath string `json:"file_path"`
	Content  string `json:"content"`
}

// EditInput is tool_input of Edit, and one edit of MultiEdit.
type EditInput struct {
	FilePath   string `json:"file_path,omitempty"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

// MultiEditInput is tool_input of MultiEdit: edits applied in order to one file.
type MultiEditInput struct {
	FilePath string      `json:"file_path"`
	Edits    []EditInput `json:"edits"`
}

// BashInput is tool_input of Bash.
type BashInput struct {
	Command         string  `json:"command"`
	Description     string  `json:"description"`
	Timeout         float64 `json:"timeout"` // milliseconds; a JSON number, not always a whole one
	RunInBackground bool    `json:"run_in_background"`
}

// SubagentInput decodes tool_input of an Agent or Task call.
func (ev *Event) SubagentInput() (SubagentInput, error) {
	var in SubagentInput
	if !isSubagentTool(ev.ToolName) {
		return in, ev.wrongTool(toolAgent + " or " + toolTask)
	}
	return in, ev.toolInput(&in)
}

// SubagentStrings reads the string fields of an Agent or Task call's
// tool_input (prompt, description, subagent_type, model, resume) each on
// its own: a field that is absent or of another type is "", and does not
// lose the others, as one decode of the whole input would.
func (ev *Event) SubagentStrings() SubagentInput {
	var in SubagentInput
	var fields map[string]json.RawMessage
	if !isSubagentTool(ev.ToolName) || ev.toolInput(&fields) != nil {
		return in
	}
	for name, dst := range map[string]*string{
		"prompt": &in.Prompt, "description": &in.Description, "subagent_type": &in.SubagentType,
		"model": &in.Model, "resume": &in.Resume,
	} {
		if json.Unmarshal(fields[name], dst) != nil {
			*dst = ""
		}
	}
	return in
}

// SubagentResponse decodes tool_response of an Agent or Task call.
func (ev *Event) SubagentResponse() (SubagentResponse, error) {
	var out SubagentResponse
	if !isSubagentTool(ev.ToolName) {
		return out, ev.wrongTool(toolAgent + " or " + toolTask)
	}
	return out, decodeObject("tool_response", ev.ToolResponse, &out)
}

// WriteInput decodes tool_input of a Write call.
func (ev *Event) WriteInput() (WriteInput, error) {
	var in WriteInput
	if ev.ToolName != toolWrite {
		return in, ev.wrongTool(toolWrite)
	}
	return in, ev.toolInput(&in)
}

// EditInput decodes tool_input of an Edit call.
func (ev *Event) EditInput() (EditInput, error) {
	var in EditInput
	if ev.ToolName != toolEdit {
		return in, ev.wrongTool(toolEdit)
	}
	return in, ev.toolInput(&in)
}

// MultiEditInput decodes tool_input of a MultiEdit call.
func (ev *Event) MultiEditInput() (MultiEditInput, error) {
	var in MultiEditInput
	if ev.ToolName != toolMultiEdit {
		return in, ev.wrongTool(toolMultiEdit)
	}
	return in, ev.toolInput(&in)
}

// BashInput decodes tool_input of a Bash call.
func (ev *Event) BashInput() (BashInput, error) {
	var in BashInput
	if ev.ToolName != toolBash {
		return in, ev.wrongTool(toolBash)
	}
	return in, ev.toolInput(&in)
}

// TargetFile returns the file a Write, Edit or MultiEdit call writes, and
// false for any other tool or when tool_input names none.
func (ev *Event) TargetFile() (string, bool) {
	var in struct {
		FilePath string `json:"file_path"`
	}
	switch ev.ToolName {
	case toolWrite, toolEdit, toolMultiEdit:
	default:
		return "", false
	}
	if ev.toolInput(&in) != nil || in.FilePath == "" {
		return "", false
	}
	return in.FilePath, true
}

func (ev *Event) toolInput(v any) error { return decodeObject("tool_input", ev.ToolInput, v) }

func (ev *Event) wrongTool(want string) error {
	return fmt.Errorf("tool_input: tool is %q, not %s", ev.ToolName, want)
}

// decodeObject decodes a raw field that must be a JSON object. Unlike the
// event itself, a mistyped field here is an error: these are the fields DES
// decides on.
func decodeObject(name string, raw json.RawMessage, v any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return fmt.Errorf("%s: absent", name)
	}
	if raw[0] != '{' {
		return fmt.Errorf("%s: not a JSON object", name)
	}
	// Keys are matched exactly, duplicates last-wins, as Claude Code reads
	// them: the file judged is the file written (see decodeExact).
	if _, err := decodeExact(raw, v, false); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
