package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"
)

// EventType names the kind of an audit event (contract §7).
type EventType string

// The event types of contract §7.
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
)

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
// order: "timestamp", "event", then the Fields keys sorted. It fails with
// [ErrReservedField] or [ErrMissingEvent] as Append would.
func (e Entry) MarshalJSON() ([]byte, error) {
	data, err := e.encode()
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	return data, nil
}

// encode is MarshalJSON with errors left for the caller to prefix.
func (e Entry) encode() ([]byte, error) {
	if err := e.check(); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	// One encoder for keys and values: HTML escaping off, and each Encode
	// appends a newline that put strips again.
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	put := func(v any) error {
		if err := enc.Encode(v); err != nil {
			return err
		}
		buf.Truncate(buf.Len() - 1)
		return nil
	}
	buf.WriteString(`{"timestamp":`)
	if err := put(e.Time.UTC().Format(time.RFC3339Nano)); err != nil {
		return nil, err
	}
	buf.WriteString(`,"event":`)
	if err := put(string(e.Event)); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(e.Fields))
	for k := range e.Fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		buf.WriteByte(',')
		if err := put(k); err != nil {
			return nil, err
		}
		buf.WriteByte(':')
		if err := put(e.Fields[k]); err != nil {
			return nil, fmt.Errorf("field %q: %w", k, err)
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// UnmarshalJSON decodes one line as written by MarshalJSON. "timestamp" (RFC
// 3339) and "event" (a non-empty string) are required. Numbers in Fields are
// [json.Number]; the reserved "seq" and "prev" keys are dropped.
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
	for _, k := range []string{keyTimestamp, keyEvent, keySeq, keyPrev} {
		delete(m, k)
	}
	if len(m) == 0 {
		m = nil
	}
	*e = Entry{Time: t.UTC(), Event: EventType(ev), Fields: m}
	return nil
}
