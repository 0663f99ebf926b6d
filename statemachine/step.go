package statemachine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/deterministic-exec/des/internal/fileio"
)

// MaxStepFileSize bounds what DES reads as a step file. Real ones are tens
// of kilobytes; the bound keeps a hostile or broken file from exhausting the
// hook's memory.
const MaxStepFileSize = 16 << 20

// ErrTooLarge is wrapped when a file exceeds MaxStepFileSize.
var ErrTooLarge = fileio.ErrTooLarge

// Workflow types (docs/reference.md, "Step file").
const (
	WorkflowTDDCycle           = "tdd_cycle"
	WorkflowConfigurationSetup = "configuration_setup"
)

// Where a step file keeps its phase log: the current location first, then
// the legacy one.
var (
	phaseLogPath       = []string{"tdd_cycle", "phase_execution_log"}
	legacyPhaseLogPath = []string{"tdd_cycle", "tdd_phase_tracking", "phase_execution_log"}
)

// Step is a step file: the fields DES reads, typed, over the whole document,
// which is kept as written. The typed fields are read leniently: a field of
// the wrong type reads as absent (ValidateStep reports it), so a step file
// that fails its schema can still be inspected and explained.
//
// The typed fields are a view: change the document through the methods
// (SetTaskStatus, SetFailure, ResetPhases), which refresh them. A Step is not
// safe for concurrent use.
type Step struct {
	TaskID       string // task_id, else task_specification.task_id ("" when neither is a non-empty string)
	WorkflowType string // workflow_type; WorkflowTDDCycle when absent or null

	// state
	Status              string   // state.status ("" when absent)
	StartedAt           string   // state.started_at as written ("" when absent or null)
	CompletedAt         string   // state.completed_at as written
	FailureReason       string   // state.failure_reason
	RecoverySuggestions []string // state.recovery_suggestions

	// Phases is the phase log, from tdd_cycle.phase_execution_log, else the
	// legacy tdd_cycle.tdd_phase_tracking.phase_execution_log; PhaseLogPath
	// tells which (nil when neither is an array). Entries that are not
	// objects are left out; Phase.Pos is the position in the log.
	Phases       []Phase
	PhaseLogPath []string

	// Budgets (tdd_cycle).
	MaxTurns               *int     // tdd_cycle.max_turns
	DurationMinutes        *float64 // tdd_cycle.duration_minutes
	TotalExtensionsMinutes *float64 // tdd_cycle.total_extensions_minutes

	AllowedFilePatterns []string // allowed_file_patterns (nil when absent or not all strings)
	Safety              *Safety  // safety (nil when absent or not an object)
	Documentation       string   // documentation
	ValidationOutput    string   // validation_output

	doc     *Object
	generic map[string]any // Document's cache; nil after an edit
	err     error          // the first failed edit; Marshal returns it
}

// Phase is one entry of the phase log. Strings are "" and pointers nil when
// the field is absent, null or of the wrong type.
type Phase struct {
	Name            string // phase_name
	Index           int    // phase_index; -1 when absent or not an integer
	Pos             int    // position in the phase log array
	Status          string
	Outcome         string
	OutcomeDetails  string
	BlockedBy       string
	StartedAt       string
	EndedAt         string
	TurnCount       *int
	MaxTurns        *int
	DurationSeconds *float64
}

// Safety is the safety metadata of a configuration setup step.
type Safety struct {
	IsDestructive     bool
	AffectsProduction bool
	RollbackPlan      string
}

// ParseStep parses a step file. It fails only when data is not JSON or not
// an object; everything else (wrong types, non-canonical statuses, obsolete
// layouts) is for ValidateStep and the policy to report: which layouts are
// obsolete is decided in one place, the des.stepfile policy.
func ParseStep(data []byte) (*Step, error) {
	doc, err := ParseObject(data)
	if err != nil {
		return nil, fmt.Errorf("parse step file: %w", err)
	}
	s := &Step{doc: doc}
	s.read()
	return s, nil
}

// ReadStep reads and parses the step file at path. Files over
// MaxStepFileSize are refused unread. The raw bytes are returned too, also
// when they do not parse, so a caller can report what it found.
func ReadStep(path string) (*Step, []byte, error) {
	data, err := fileio.ReadBounded(path, MaxStepFileSize)
	if err != nil {
		return nil, nil, fmt.Errorf("read step file: %w", err)
	}
	s, err := ParseStep(data)
	if err != nil {
		return nil, data, fmt.Errorf("%s: %w", path, err)
	}
	return s, data, nil
}

// read refreshes the typed fields from the document.
func (s *Step) read() {
	d := s.doc
	*s = Step{doc: d, err: s.err}

	s.TaskID, _ = rawString(d.Get("task_id"))
	if s.TaskID == "" {
		s.TaskID, _ = rawString(d.GetPath([]string{"task_specification", "task_id"}))
	}
	s.WorkflowType = WorkflowTDDCycle
	if wt, ok := rawString(d.Get("workflow_type")); ok {
		s.WorkflowType = wt
	}

	if st, ok := d.GetObject([]string{"state"}); ok {
		s.Status, _ = rawString(st.Get("status"))
		s.StartedAt, _ = rawString(st.Get("started_at"))
		s.CompletedAt, _ = rawString(st.Get("completed_at"))
		s.FailureReason, _ = rawString(st.Get("failure_reason"))
		s.RecoverySuggestions = rawStrings(st.Get("recovery_suggestions"))
	}

	if tc, ok := d.GetObject([]string{"tdd_cycle"}); ok {
		s.MaxTurns = rawInt(tc.Get("max_turns"))
		s.DurationMinutes = rawFloat(tc.Get("duration_minutes"))
		s.TotalExtensionsMinutes = rawFloat(tc.Get("total_extensions_minutes"))
	}
	s.PhaseLogPath, s.Phases = readPhaseLog(d)

	s.AllowedFilePatterns = rawStrings(d.Get("allowed_file_patterns"))
	if sf, ok := d.GetObject([]string{"safety"}); ok {
		s.Safety = &Safety{}
		s.Safety.IsDestructive, _ = rawBool(sf.Get("is_destructive"))
		s.Safety.AffectsProduction, _ = rawBool(sf.Get("affects_production"))
		s.Safety.RollbackPlan, _ = rawString(sf.Get("rollback_plan"))
	}
	s.Documentation, _ = rawString(d.Get("documentation"))
	s.ValidationOutput, _ = rawString(d.Get("validation_output"))
}

// locatePhaseLog returns the path and the entries of the phase log: the
// current location when it holds an array, else the legacy one.
func locatePhaseLog(d *Object) ([]string, []json.RawMessage) {
	tc, _ := d.Get(phaseLogPath[0])
	return locateInCycle(tc)
}

// locateInCycle is locatePhaseLog given the value of tdd_cycle.
func locateInCycle(tc json.RawMessage) ([]string, []json.RawMessage) {
	if !isObjectText(tc) {
		return nil, nil
	}
	if v, ok := rawGet(tc, phaseLogPath[1]); ok && isArray(v) {
		return phaseLogPath, parseArrayTrusted(v)
	}
	if tr, ok := rawGet(tc, legacyPhaseLogPath[1]); ok && isObjectText(tr) {
		if v, ok := rawGet(tr, legacyPhaseLogPath[2]); ok && isArray(v) {
			return legacyPhaseLogPath, parseArrayTrusted(v)
		}
	}
	return nil, nil
}

func readPhaseLog(d *Object) ([]string, []Phase) {
	path, entries := locatePhaseLog(d)
	if path == nil {
		return nil, nil
	}
	phases := make([]Phase, 0, len(entries))
	for pos, e := range entries {
		if !isObjectText(e) {
			continue
		}
		phases = append(phases, readPhase(parseObjectTrusted(e), pos))
	}
	return slices.Clone(path), phases
}

func readPhase(o *Object, pos int) Phase {
	p := Phase{Index: -1, Pos: pos}
	p.Name, _ = rawString(o.Get("phase_name"))
	if i := rawInt(o.Get("phase_index")); i != nil {
		p.Index = *i
	}
	p.Status, _ = rawString(o.Get("status"))
	p.Outcome, _ = rawString(o.Get("outcome"))
	p.OutcomeDetails, _ = rawString(o.Get("outcome_details"))
	p.BlockedBy, _ = rawString(o.Get("blocked_by"))
	p.StartedAt, _ = rawString(o.Get("started_at"))
	p.EndedAt, _ = rawString(o.Get("ended_at"))
	p.TurnCount = rawInt(o.Get("turn_count"))
	p.MaxTurns = rawInt(o.Get("max_turns"))
	p.DurationSeconds = rawFloat(o.Get("duration_seconds"))
	return p
}

func isArray(v json.RawMessage) bool {
	t := trimSpace(v)
	return len(t) > 0 && t[0] == '['
}

func isObjectText(v json.RawMessage) bool {
	t := trimSpace(v)
	return len(t) > 0 && t[0] == '{'
}

// rawString reads a JSON string; false when absent or another type.
func rawString(v json.RawMessage, ok bool) (string, bool) {
	t := trimSpace(v)
	if !ok || len(t) == 0 || t[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(t, '\\') < 0 {
		return string(t[1 : len(t)-1]), true
	}
	var s string
	if json.Unmarshal(t, &s) != nil {
		return "", false
	}
	return s, true
}

func rawBool(v json.RawMessage, ok bool) (bool, bool) {
	switch string(trimSpace(v)) {
	case "true":
		return true, ok
	case "false":
		return false, ok
	}
	return false, false
}

func rawFloat(v json.RawMessage, ok bool) *float64 {
	t := trimSpace(v)
	if !ok || len(t) == 0 || (t[0] != '-' && (t[0] < '0' || t[0] > '9')) {
		return nil
	}
	f, err := strconv.ParseFloat(string(t), 64)
	if err != nil {
		return nil
	}
	return &f
}

// rawInt reads a number with an integral value that fits an int (3.0 and
// 1e2 count, as JSON Schema's "integer" does).
func rawInt(v json.RawMessage, ok bool) *int {
	t := trimSpace(v)
	if !ok || len(t) == 0 {
		return nil
	}
	if i, err := strconv.Atoi(string(t)); err == nil {
		return &i
	}
	f := rawFloat(v, ok)
	if f == nil || *f > 1<<53 || *f < -(1<<53) || *f != float64(int64(*f)) {
		return nil
	}
	i := int(*f)
	return &i
}

// rawStrings reads an array of strings; nil when absent or when any element
// is not a string.
func rawStrings(v json.RawMessage, ok bool) []string {
	if !ok || !isArray(v) {
		return nil
	}
	elems := parseArrayTrusted(trimSpace(v))
	out := make([]string, 0, len(elems))
	for _, e := range elems {
		s, ok := rawString(e, true)
		if !ok {
			return nil
		}
		out = append(out, s)
	}
	return out
}

// Document returns the whole document decoded generically (objects as
// map[string]any, numbers as json.Number so integers stay exact), e.g. for
// the policy input or ValidateStep. It is decoded once and cached until the
// next edit; callers must not modify it.
func (s *Step) Document() map[string]any {
	if s.generic == nil {
		dec := json.NewDecoder(bytes.NewReader(s.doc.appendJSON(nil)))
		dec.UseNumber()
		var m map[string]any
		_ = dec.Decode(&m) // the text is a valid object
		s.generic = m
	}
	return s.generic
}

// Validate checks the document against the step-file schema.
//
// Beyond the schema, a phase name given twice in the phase log is an error
// (JSON Schema cannot say "unique by field"): two entries for one phase
// could hold contradictory statuses.
func (s *Step) Validate() []SchemaError {
	errs := ValidateStep(s.Document())
	first := map[string]int{}
	for _, p := range s.Phases {
		if p.Name == "" {
			continue
		}
		if at, dup := first[p.Name]; dup {
			errs = append(errs, SchemaError{
				Pointer: pointer(append(slices.Clone(s.PhaseLogPath), strconv.Itoa(p.Pos), "phase_name")),
				Message: fmt.Sprintf("phase %s appears more than once in the phase log (first at position %d); keep one entry per phase", p.Name, at),
			})
			continue
		}
		first[p.Name] = p.Pos
	}
	return errs
}

// Object returns the underlying document. Edits made to it directly are not
// reflected in the typed fields until the next edit method or Marshal.
func (s *Step) Object() *Object { return s.doc }

// Err returns the first edit that failed, e.g. because "state" holds a
// string where DES must write an object. A failed edit changes nothing, and
// later edits are skipped: the document is never half-edited.
func (s *Step) Err() error { return s.err }

// edit applies fn to a copy of the document and keeps the result only when
// fn succeeds.
func (s *Step) edit(what string, fn func(d *Object) error) {
	if s.err != nil {
		return
	}
	// Member values are never modified in place, so a shallow copy is a
	// snapshot.
	d := &Object{members: slices.Clone(s.doc.members)}
	if err := fn(d); err != nil {
		s.err = fmt.Errorf("%s: %w", what, err)
		return
	}
	s.doc = d
	s.read()
}

func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// SetTaskStatus sets state.status, creating "state" when it is missing or
// null. Moving to IN_PROGRESS also sets state.started_at to now (RFC 3339,
// UTC) when it is absent, null or empty: a resumed task keeps its start.
// Whether the move is allowed is the policy's concern, not this method's.
func (s *Step) SetTaskStatus(status string, now time.Time) {
	s.edit("set task status", func(d *Object) error {
		if err := d.SetPath([]string{"state", "status"}, status); err != nil {
			return err
		}
		if status != TaskInProgress {
			return nil
		}
		v, ok := d.GetPath([]string{"state", "started_at"})
		if str, isStr := rawString(v, ok); ok && !isNull(v) && !(isStr && str == "") {
			return nil
		}
		return d.SetPath([]string{"state", "started_at"}, timestamp(now))
	})
}

// SetFailure marks the task FAILED with its reason and recovery suggestions
// (Gate 2, the one move DES makes outside the task table).
func (s *Step) SetFailure(reason string, suggestions []string) {
	if suggestions == nil {
		suggestions = []string{}
	}
	s.edit("mark task failed", func(d *Object) error {
		for _, kv := range []struct {
			k string
			v any
		}{{"status", TaskFailed}, {"failure_reason", reason}, {"recovery_suggestions", suggestions}} {
			if err := d.SetPath([]string{"state", kv.k}, kv.v); err != nil {
				return err
			}
		}
		return nil
	})
}

// ClearFailure removes state.failure_reason and state.recovery_suggestions,
// which SetFailure wrote: a task started again is no longer failed, and a
// reason left behind would tell the next reader (an agent, Gate 2's
// message) that it still is. The failure stays in the audit trail. Other
// members of state are kept.
func (s *Step) ClearFailure() {
	s.edit("clear the failure", func(d *Object) error {
		d.DeletePath([]string{"state", "failure_reason"})
		d.DeletePath([]string{"state", "recovery_suggestions"})
		return nil
	})
}

// PhaseHistoryEntry is what ResetPhases appends to a phase's history.
type PhaseHistoryEntry struct {
	At   string  `json:"at"`
	From *string `json:"from"` // null when the phase had no string status
	To   string  `json:"to"`
	Note string  `json:"note"`
}

// ResetPhases sets every phase named in names back to NOT_EXECUTED: status
// NOT_EXECUTED, started_at, ended_at and outcome null, and an entry
// {at, from, to, note} appended to its history array. Other fields of the
// entry (outcome_details, turn_count, ...) are kept. Names not in the log
// are ignored.
func (s *Step) ResetPhases(names []string, now time.Time, note string) {
	s.edit("reset phases", func(d *Object) error {
		for _, p := range s.Phases {
			if !slices.Contains(names, p.Name) {
				continue
			}
			path := append(slices.Clone(s.PhaseLogPath), strconv.Itoa(p.Pos))
			entry, ok := d.GetObject(path)
			if !ok {
				return fmt.Errorf("phase %s at %s is not an object", p.Name, pointer(path))
			}
			h := PhaseHistoryEntry{At: timestamp(now), To: PhaseNotExecuted, Note: note}
			if old, ok := rawString(entry.Get("status")); ok {
				h.From = &old
			}
			for _, kv := range []struct {
				k string
				v any
			}{{"status", PhaseNotExecuted}, {"started_at", nil}, {"ended_at", nil}, {"outcome", nil}} {
				if err := entry.Set(kv.k, kv.v); err != nil {
					return err
				}
			}
			if err := entry.AppendPath([]string{"history"}, h); err != nil {
				return fmt.Errorf("phase %s: %w", p.Name, err)
			}
			if err := d.SetPath(path, entry); err != nil {
				return err
			}
		}
		return nil
	})
}

// Marshal returns the document for writing back: every member DES did not
// change is kept, in its original order, with two-space indentation and a
// trailing newline. It fails when an edit failed (see Err).
func (s *Step) Marshal() ([]byte, error) {
	if s.err != nil {
		return nil, s.err
	}
	return s.doc.Marshal()
}
