package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"
)

// EventType names the kind of an audit event (docs/reference.md, "Audit trail").
type EventType string

// The event types des writes.
const (
	TaskInvocationStarted   EventType = "TASK_INVOCATION_STARTED"
	TaskInvocationValidated EventType = "TASK_INVOCATION_VALIDATED"
	TaskInvocationRejected  EventType = "TASK_INVOCATION_REJECTED"
	PhaseStarted            EventType = "PHASE_STARTED"
	PhaseCompleted          EventType = "PHASE_COMPLETED"
	PhaseSkipped            EventType = "PHASE_SKIPPED"
	PhaseFailed             EventType = "PHASE_FAILED"
	SubagentStopValidation  EventType = "SUBAGENT_STOP_VALIDATION"
	StaleResolution         EventType = "STALE_RESOLUTION"
	CommitValidationPassed  EventType = "COMMIT_VALIDATION_PASSED"
	CommitValidationFailed  EventType = "COMMIT_VALIDATION_FAILED"
	PreExecuteSafetyPassed  EventType = "PRE_EXECUTE_SAFETY_PASSED"
	PreExecuteSafetyBlocked EventType = "PRE_EXECUTE_SAFETY_BLOCKED"
	ScopeViolation          EventType = "SCOPE_VIOLATION"
	InvalidTransition       EventType = "INVALID_TRANSITION"
	DocumentWriteBlocked    EventType = "DOCUMENT_WRITE_BLOCKED"
	TaskStateChanged        EventType = "TASK_STATE_CHANGED"
	PolicyException         EventType = "POLICY_EXCEPTION"
	HookError               EventType = "HOOK_ERROR"
	// IntegrityViolation: a tool call changed a protected file or guarded
	// document outside an allowed write, and DES restored it.
	IntegrityViolation EventType = "INTEGRITY_VIOLATION"
	// PhaseEscalation: a phase workflow guard blocked an advancement
	// (gate_blocked, corridor_blocked, constitution_blocked),
	// recorded at most once a minute per type and phase.
	PhaseEscalation EventType = "PHASE_ESCALATION"
	// TaskGraphUpdated: DES recorded in the task graph how a phase's
	// subagent ended (the wave sync).
	TaskGraphUpdated EventType = "TASK_GRAPH_UPDATED"
	// WriteNotConfirmed: PostToolUse found a step file holding another
	// JSON value than the write the guard allowed (a hook rewrote it, or
	// it is gone), so the write's phase moves are not confirmed.
	WriteNotConfirmed EventType = "WRITE_NOT_CONFIRMED"
	// GitSync: after a tool call, DES took guarded documents git rewrote
	// honestly (a checkout, pull or stash) instead of undoing them.
	GitSync EventType = "GIT_SYNC"
	// TestRunObserved: after a Bash call that ran a test runner, des
	// recorded the run in its evidence (what it ran, how it ended).
	TestRunObserved EventType = "TEST_RUN_OBSERVED"
	// TestIterationUpdated: des wrote a phase's test iterations, derived
	// from the test runs it saw, into the iSDLC workflow state.
	TestIterationUpdated EventType = "TEST_ITERATION_UPDATED"
)

// EventTypes returns the event types des writes, in the order
// docs/reference.md lists them. Each has a schema ([Schema]).
func EventTypes() []EventType {
	return []EventType{
		TaskInvocationStarted, TaskInvocationValidated, TaskInvocationRejected,
		PhaseStarted, PhaseCompleted, PhaseSkipped, PhaseFailed,
		SubagentStopValidation, StaleResolution, CommitValidationPassed, CommitValidationFailed,
		PreExecuteSafetyPassed, PreExecuteSafetyBlocked, ScopeViolation, InvalidTransition,
		DocumentWriteBlocked, TaskStateChanged, PolicyException, HookError,
		IntegrityViolation, GitSync, PhaseEscalation, TaskGraphUpdated, WriteNotConfirmed, TestRunObserved,
		TestIterationUpdated,
	}
}

// MaxLineSize is the largest encoded line, trailing newline included, that
// [Log.Append] writes.
const MaxLineSize = 1 << 20

// Keys written by the package itself; a Fields key may not use them.
const (
	keyTimestamp = "timestamp"
	keyEvent     = "event"
	keySeq       = "seq"
	keyPrev      = "prev"
)

var (
	// ErrReservedField reports a Fields key that collides with "timestamp",
	// "event", "seq" or "prev". The error names the key.
	ErrReservedField = errors.New("reserved field")
	// ErrMissingEvent reports an entry with an empty Event.
	ErrMissingEvent = errors.New("missing event")
	// ErrEntryTooLarge reports an entry whose line would exceed MaxLineSize.
	ErrEntryTooLarge = errors.New("entry too large")
	// ErrMalformedLine reports a line of a day file that is not a valid
	// entry: it does not parse, or it is torn (no trailing newline).
	ErrMalformedLine = errors.New("malformed line")
)

// Entry is one line of the trail.
type Entry struct {
	// Time is written as "timestamp" in UTC. Append stamps a zero Time with
	// the Log's clock.
	Time time.Time
	// Event is written as "event".
	Event EventType
	// Fields are the event's own fields (step_file, phase, outcome,
	// duration_ms, codes, tool_use_id, session_id, ...), written flat beside
	// "timestamp" and "event".
	Fields map[string]any
	// Seq is the line's "seq", its place in the hash chain: filled when
	// reading, 0 for a line written before the chain existed. Append ignores
	// it and numbers lines itself; MarshalJSON does not write it.
	Seq int64
	// Attested is set by Read when the line is one this Log's writers
	// recorded as their own (see [WithAttestations]) and stands where they
	// wrote it (after the lines attested before it in the trail, in the
	// order they were recorded: a copy of the line further on is not
	// attested), and on every entry read from a Log
	// without attestations. Append and MarshalJSON ignore it.
	Attested bool
}

// check reports what makes e unwritable before any encoding is attempted.
func (e Entry) check() error {
	if e.Event == "" {
		return ErrMissingEvent
	}
	for k := range e.Fields {
		if reserved(k) {
			return fmt.Errorf("%w %q", ErrReservedField, k)
		}
	}
	return nil
}

func reserved(key string) bool {
	switch key {
	case keyTimestamp, keyEvent, keySeq, keyPrev:
		return true
	}
	return false
}

// MarshalJSON encodes e as one compact JSON object with keys in a stable
// order: "timestamp", "event", then the Fields keys sorted. Seq is not
// written: only [Log.Append] numbers lines. It fails with
// [ErrReservedField] or [ErrMissingEvent] as Append would.
func (e Entry) MarshalJSON() ([]byte, error) {
	if err := e.check(); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	body, err := encodeFields(e.Fields)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	buf := appendTimestamp(append([]byte(nil), `{"timestamp":`...), e.Time)
	buf = appendString(append(buf, `,"event":`...), string(e.Event))
	return append(append(buf, body...), '}'), nil
}

// encodeLine appends the line of an entry at seq after prev to buf: the
// chain keys after "timestamp" and "event", then body (from encodeFields),
// then "}\n".
func encodeLine(buf []byte, t time.Time, event EventType, seq int64, prev string, body []byte) []byte {
	buf = appendTimestamp(append(buf, `{"timestamp":`...), t)
	buf = appendString(append(buf, `,"event":`...), string(event))
	buf = strconv.AppendInt(append(buf, `,"seq":`...), seq, 10)
	buf = append(append(append(buf, `,"prev":"`...), prev...), '"')
	return append(append(buf, body...), "}\n"...)
}

func appendTimestamp(buf []byte, t time.Time) []byte {
	buf = append(buf, '"')
	buf = t.UTC().AppendFormat(buf, time.RFC3339Nano)
	return append(buf, '"')
}

// appendString appends s as a JSON string, as encoding/json writes it
// without HTML escaping.
func appendString(buf []byte, s string) []byte {
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c >= 0x20 && c < 0x7f && c != '"' && c != '\\'
	}
	if plain {
		return append(append(append(buf, '"'), s...), '"')
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(buf, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...)
}

// encodeFields encodes fields sorted by key, each as `,"key":value`, values
// by encoding/json without HTML escaping, so that a shell command such as
// "a && b" stays readable.
func encodeFields(fields map[string]any) ([]byte, error) {
	if len(fields) == 0 {
		return nil, nil
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var buf bytes.Buffer
	// One encoder for all values; each Encode appends a newline that is cut.
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, k := range keys {
		buf.Write(appendString([]byte{','}, k))
		buf.WriteByte(':')
		if err := enc.Encode(fields[k]); err != nil {
			return nil, fmt.Errorf("field %q: %w", k, err)
		}
		buf.Truncate(buf.Len() - 1)
	}
	return buf.Bytes(), nil
}

// UnmarshalJSON decodes one line as written by MarshalJSON or Append.
// "timestamp" (RFC 3339) and "event" (a non-empty string) are required; a
// "seq", when present, must be a positive integer and fills Seq. Numbers in
// Fields are [json.Number]; the reserved "seq" and "prev" keys are not in
// Fields.
func (e *Entry) UnmarshalJSON(data []byte) error {
	if err := e.decode(data); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

// decode is UnmarshalJSON with errors left for the caller to prefix.
func (e *Entry) decode(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // exact numbers; durations and counters stay integers
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the entry's JSON object")
	}
	if m == nil {
		return errors.New("entry is not a JSON object")
	}
	ts, ok := m[keyTimestamp].(string)
	if !ok {
		return errors.New(`"timestamp" missing or not a string`)
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return fmt.Errorf(`"timestamp": %w`, err)
	}
	ev, ok := m[keyEvent].(string)
	if !ok || ev == "" {
		return errors.New(`"event" missing or not a non-empty string`)
	}
	var seq int64
	if raw, present := m[keySeq]; present {
		if seq, err = parseSeq(raw); err != nil {
			return err
		}
	}
	for _, k := range []string{keyTimestamp, keyEvent, keySeq, keyPrev} {
		delete(m, k)
	}
	if len(m) == 0 {
		m = nil
	}
	*e = Entry{Time: t.UTC(), Event: EventType(ev), Fields: m, Seq: seq}
	return nil
}

func parseSeq(raw any) (int64, error) {
	n, ok := raw.(json.Number)
	if !ok {
		return 0, errors.New(`"seq" is not a number`)
	}
	seq, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || seq < 1 {
		return 0, fmt.Errorf(`"seq" %s is not a positive integer`, n)
	}
	return seq, nil
}
