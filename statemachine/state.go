package statemachine

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/internal/filelock"
	"github.com/deterministic-exec/des/internal/jsonschemas"
)

// MaxStateFileSize bounds what DES reads as a workflow state. Real ones are
// tens of kilobytes.
const MaxStateFileSize = 16 << 20

// State is a multi-phase workflow state (docs/reference.md, "Workflow state": .des/state.json,
// .isdlc/state.json, .isdlc/projects/<p>/state.json): the fields DES reads,
// typed, over the whole document, which is kept as written (unknown fields,
// key order and spelling).
//
// The typed fields are read leniently, like a Step's: a field that is
// absent, null or of the wrong type reads as the zero value (nil for
// pointers, maps and slices; "" for strings), and ValidateState reports the
// wrong types. Counts and indexes are integers: 3.0 and 1e2 count, as JSON
// Schema's "integer" does; 2.5, or an integer outside ±2^53 written with a
// fraction or exponent, is of the wrong type.
//
// StateVersion is an int64 (documented as a number; the state schema
// requires an integer): it is the optimistic-locking counter, which
// WriteState increments by one, and a fractional version has no meaning.
//
// The typed fields are a view, read when the State is parsed. Edits made
// through Object are written by WriteState and Marshal but are not reflected
// in the typed fields; StateVersion in particular stays the version the
// document was read with, which is what WriteState checks against the disk.
// A State is not safe for concurrent use while it is being edited.
type State struct {
	StateVersion   *int64                // state_version
	CurrentPhase   string                // current_phase
	ActiveAgent    string                // active_agent
	ActiveWorkflow *Workflow             // active_workflow (nil when absent, null or not an object)
	Phases         map[string]PhaseState // phases, by key; entries that are not objects are left out

	doc *Object
}

// Workflow is the active_workflow object.
type Workflow struct {
	Type              string            // type
	Phases            []string          // phases (nil unless an array of strings)
	CurrentPhase      string            // current_phase
	CurrentPhaseIndex *int              // current_phase_index
	PhaseStatus       map[string]string // phase_status; members that are not strings are left out
	GitBranch         *GitBranch        // git_branch
	SupervisedReview  *SupervisedReview // supervised_review
	RecoveryAction    *RecoveryAction   // recovery_action
}

// GitBranch is active_workflow.git_branch.
type GitBranch struct {
	Name   string
	Status string
}

// SupervisedReview is active_workflow.supervised_review, read from the
// incoming document for the supervised-redo exemption of rule V8.
type SupervisedReview struct {
	Status    string // status, e.g. "redo_pending"
	RedoCount *int   // redo_count
}

// RecoveryAction is active_workflow.recovery_action, read from the incoming
// document for the retry and rollback exemptions of rule V8.
type RecoveryAction struct {
	Type string // type, e.g. "retry" or "rollback"
}

// PhaseState is one member of phases. Statuses are free strings: only
// pending < in_progress < completed is ordered (by the policy).
type PhaseState struct {
	Status                   string                    // status
	Started                  string                    // started (a timestamp as written)
	Completed                string                    // completed (a timestamp as written)
	Summary                  string                    // summary
	TestIteration            *TestIteration            // iteration_requirements.test_iteration
	InteractiveElicitation   *InteractiveElicitation   // iteration_requirements.interactive_elicitation
	ConstitutionalValidation *ConstitutionalValidation // constitutional_validation
	Timing                   *PhaseTiming              // timing
}

// TestIteration is iteration_requirements.test_iteration of a phase.
type TestIteration struct {
	Completed        *bool  // completed
	CurrentIteration *int   // current_iteration
	LastTestResult   string // last_test_result
}

// InteractiveElicitation is iteration_requirements.interactive_elicitation
// of a phase.
type InteractiveElicitation struct {
	Completed        *bool // completed
	MenuInteractions *int  // menu_interactions
}

// ConstitutionalValidation is constitutional_validation of a phase.
type ConstitutionalValidation struct {
	Completed      *bool  // completed
	IterationsUsed *int   // iterations_used
	Status         string // status
}

// PhaseTiming is timing of a phase.
type PhaseTiming struct {
	StartedAt   string // started_at
	CompletedAt string // completed_at
	Retries     *int   // retries
}

// ParseState parses a workflow state. It fails only when data is not JSON
// (the error names the syntax error) or not an object (the error wraps
// ErrNotObject); wrong types and unknown statuses are for ValidateState and
// the policy to report.
func ParseState(data []byte) (*State, error) {
	doc, facts, err := parseStateDoc(data)
	if err != nil {
		return nil, fmt.Errorf("parse workflow state: %w", err)
	}
	s := &State{doc: doc}
	s.read(facts)
	return s, nil
}

// ReadState reads and parses the workflow state at path. Files over
// MaxStateFileSize are refused unread. The raw bytes are returned too, also
// when they do not parse.
func ReadState(path string) (*State, []byte, error) {
	data, err := fileio.ReadBounded(path, MaxStateFileSize)
	if err != nil {
		return nil, nil, fmt.Errorf("read workflow state: %w", err)
	}
	s, err := ParseState(data)
	if err != nil {
		return nil, data, fmt.Errorf("%s: %w", path, err)
	}
	return s, data, nil
}

// Object returns the underlying document. Edits made to it are written by
// Marshal and WriteState but do not change the typed fields.
func (s *State) Object() *Object { return s.doc }

// Marshal returns the document as it stands, indented with two spaces and
// ending with a newline; every member keeps its order and spelling.
func (s *State) Marshal() ([]byte, error) { return s.doc.Marshal() }

// Document returns the whole document decoded generically (objects as
// map[string]any, numbers as json.Number), e.g. for ValidateState. It is
// decoded on each call.
func (s *State) Document() map[string]any {
	dec := json.NewDecoder(bytes.NewReader(s.doc.appendJSON(nil)))
	dec.UseNumber()
	var m map[string]any
	_ = dec.Decode(&m) // the text is a valid object
	return m
}

// Validate checks the document against the workflow-state schema.
func (s *State) Validate() []SchemaError { return ValidateState(s.Document()) }

// Facts returns the fields of the documented workflow state that DES and
// its policies read, and nothing else, as a JSON-like value ready for a
// policy input:
//
//	state_version, current_phase, active_agent,
//	active_workflow{type, phases[], current_phase, current_phase_index,
//	  phase_status{<phase>: status}, git_branch{name, status},
//	  supervised_review{status, redo_count}, recovery_action{type}},
//	phases{<phase>: {status, started, completed, summary,
//	  iteration_requirements{test_iteration{completed, current_iteration, last_test_result},
//	    interactive_elicitation{completed, menu_interactions}},
//	  constitutional_validation{completed, iterations_used, status},
//	  timing{started_at, completed_at, retries}}}
//
// Objects are map[string]any, arrays []any, strings string, booleans bool
// and numbers json.Number holding the number as written (so Rego compares
// them exactly: OPA reads a json.Number as a number). A field is left out
// when it is absent, null, or not of its schema type (a string index, a
// count of 2.5, an array with a non-string): a policy sees it as absent, so
// a rule comparing it does not fire, and ValidateState reports the wrong
// type. Unknown fields (workflow_history among them) are left out, so a
// large document shrinks to what the rules read. An object that is present
// is kept even when none of its known fields is, as an empty map. A
// repeated key counts once, its last occurrence, as encoding/json reads it.
//
// The result is computed from the document on each call (edits through
// Object show) and belongs to the caller.
func (s *State) Facts() map[string]any { return stateFacts(s.doc) }

// read fills the typed fields from the facts.
func (s *State) read(f map[string]any) {
	if v, ok := f["state_version"].(json.Number); ok {
		if n, ok := integral([]byte(v)); ok {
			s.StateVersion = &n
		}
	}
	s.CurrentPhase, _ = f["current_phase"].(string)
	s.ActiveAgent, _ = f["active_agent"].(string)
	if aw, ok := f["active_workflow"].(map[string]any); ok {
		w := &Workflow{
			CurrentPhaseIndex: factIntPtr(aw["current_phase_index"]),
		}
		w.Type, _ = aw["type"].(string)
		w.CurrentPhase, _ = aw["current_phase"].(string)
		if ps, ok := aw["phases"].([]any); ok {
			w.Phases = make([]string, len(ps))
			for i, p := range ps {
				w.Phases[i] = p.(string)
			}
		}
		if ps, ok := aw["phase_status"].(map[string]any); ok {
			w.PhaseStatus = make(map[string]string, len(ps))
			for k, v := range ps {
				w.PhaseStatus[k] = v.(string)
			}
		}
		if g, ok := aw["git_branch"].(map[string]any); ok {
			w.GitBranch = &GitBranch{}
			w.GitBranch.Name, _ = g["name"].(string)
			w.GitBranch.Status, _ = g["status"].(string)
		}
		if r, ok := aw["supervised_review"].(map[string]any); ok {
			w.SupervisedReview = &SupervisedReview{RedoCount: factIntPtr(r["redo_count"])}
			w.SupervisedReview.Status, _ = r["status"].(string)
		}
		if r, ok := aw["recovery_action"].(map[string]any); ok {
			w.RecoveryAction = &RecoveryAction{}
			w.RecoveryAction.Type, _ = r["type"].(string)
		}
		s.ActiveWorkflow = w
	}
	if ps, ok := f["phases"].(map[string]any); ok {
		s.Phases = make(map[string]PhaseState, len(ps))
		for k, v := range ps {
			s.Phases[k] = readPhaseState(v.(map[string]any))
		}
	}
}

func readPhaseState(m map[string]any) PhaseState {
	var p PhaseState
	p.Status, _ = m["status"].(string)
	p.Started, _ = m["started"].(string)
	p.Completed, _ = m["completed"].(string)
	p.Summary, _ = m["summary"].(string)
	if ir, ok := m["iteration_requirements"].(map[string]any); ok {
		if t, ok := ir["test_iteration"].(map[string]any); ok {
			p.TestIteration = &TestIteration{
				Completed:        factBoolPtr(t["completed"]),
				CurrentIteration: factIntPtr(t["current_iteration"]),
			}
			p.TestIteration.LastTestResult, _ = t["last_test_result"].(string)
		}
		if e, ok := ir["interactive_elicitation"].(map[string]any); ok {
			p.InteractiveElicitation = &InteractiveElicitation{
				Completed:        factBoolPtr(e["completed"]),
				MenuInteractions: factIntPtr(e["menu_interactions"]),
			}
		}
	}
	if c, ok := m["constitutional_validation"].(map[string]any); ok {
		p.ConstitutionalValidation = &ConstitutionalValidation{
			Completed:      factBoolPtr(c["completed"]),
			IterationsUsed: factIntPtr(c["iterations_used"]),
		}
		p.ConstitutionalValidation.Status, _ = c["status"].(string)
	}
	if t, ok := m["timing"].(map[string]any); ok {
		p.Timing = &PhaseTiming{Retries: factIntPtr(t["retries"])}
		p.Timing.StartedAt, _ = t["started_at"].(string)
		p.Timing.CompletedAt, _ = t["completed_at"].(string)
	}
	return p
}

func factIntPtr(v any) *int {
	n, ok := v.(json.Number)
	if !ok {
		return nil
	}
	i, ok := integral([]byte(n))
	if !ok || i != int64(int(i)) {
		return nil
	}
	x := int(i)
	return &x
}

func factBoolPtr(v any) *bool {
	b, ok := v.(bool)
	if !ok {
		return nil
	}
	return &b
}

// integral reads a JSON number with an integral value as an int64: any
// int64 written as an integer, or a number written with a fraction or an
// exponent whose value is integral and within ±2^53 (3.0, 1e2).
func integral(t []byte) (int64, bool) {
	t = trimSpace(t)
	if len(t) == 0 || (t[0] != '-' && (t[0] < '0' || t[0] > '9')) {
		return 0, false
	}
	if i, err := strconv.ParseInt(string(t), 10, 64); err == nil {
		return i, true
	}
	f, err := strconv.ParseFloat(string(t), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	return int64(f), true
}

// The shape of the facts: which members of which objects DES reads, and
// their types.
type factKind uint8

const (
	factString    factKind = iota
	factInt                // an integral number, kept as json.Number
	factBool               //
	factStrings            // an array of strings
	factStringMap          // an object whose members are strings (others left out)
	factObject             // an object with known fields
	factObjectMap          // an object whose members are objects with known fields
)

type factField struct {
	key    string
	kind   factKind
	fields []factField // factObject, factObjectMap
}

var stateFactFields = []factField{
	{key: "state_version", kind: factInt},
	{key: "current_phase", kind: factString},
	{key: "active_agent", kind: factString},
	{key: "active_workflow", kind: factObject, fields: []factField{
		{key: "type", kind: factString},
		{key: "phases", kind: factStrings},
		{key: "current_phase", kind: factString},
		{key: "current_phase_index", kind: factInt},
		{key: "phase_status", kind: factStringMap},
		{key: "git_branch", kind: factObject, fields: []factField{
			{key: "name", kind: factString},
			{key: "status", kind: factString},
		}},
		{key: "supervised_review", kind: factObject, fields: []factField{
			{key: "status", kind: factString},
			{key: "redo_count", kind: factInt},
		}},
		{key: "recovery_action", kind: factObject, fields: []factField{
			{key: "type", kind: factString},
		}},
	}},
	{key: "phases", kind: factObjectMap, fields: []factField{
		{key: "status", kind: factString},
		{key: "started", kind: factString},
		{key: "completed", kind: factString},
		{key: "summary", kind: factString},
		{key: "iteration_requirements", kind: factObject, fields: []factField{
			{key: "test_iteration", kind: factObject, fields: []factField{
				{key: "completed", kind: factBool},
				{key: "current_iteration", kind: factInt},
				{key: "last_test_result", kind: factString},
			}},
			{key: "interactive_elicitation", kind: factObject, fields: []factField{
				{key: "completed", kind: factBool},
				{key: "menu_interactions", kind: factInt},
			}},
		}},
		{key: "constitutional_validation", kind: factObject, fields: []factField{
			{key: "completed", kind: factBool},
			{key: "iterations_used", kind: factInt},
			{key: "status", kind: factString},
		}},
		{key: "timing", kind: factObject, fields: []factField{
			{key: "started_at", kind: factString},
			{key: "completed_at", kind: factString},
			{key: "retries", kind: factInt},
		}},
	}},
}

// stateFacts extracts the facts from a document's members.
func stateFacts(doc *Object) map[string]any {
	out := make(map[string]any, len(stateFactFields))
	for _, m := range doc.members {
		v := trimSpace(m.value) // a value given to Set as raw JSON may carry spaces
		putFact(out, stateFactFields, m.rawKey, v, 0)
	}
	return out
}

// putFact reads the value starting at data[i], the value of the member
// rawKey, and returns the offset just past it. When rawKey is one of fields
// it records the value in out if it has the field's kind, and otherwise
// removes an earlier occurrence (the last occurrence of a key counts).
// Values of other members are skipped unread.
func putFact(out map[string]any, fields []factField, rawKey []byte, data []byte, i int) int {
	// The known keys are plain ASCII: a key written without escapes matches
	// one byte for byte, whatever else it holds.
	key := rawKey[1 : len(rawKey)-1]
	escaped := bytes.IndexByte(key, '\\') >= 0
	for k := range fields {
		f := &fields[k]
		if escaped && !keyIs(rawKey, f.key) || !escaped && string(key) != f.key {
			continue
		}
		x, ok, end := factAt(f, data, i)
		if ok {
			out[f.key] = x
		} else {
			delete(out, f.key)
		}
		return end
	}
	return scanValue(data, i)
}

// factAt reads the value starting at data[i] as a fact of kind f.kind: the
// value, whether it has that kind, and the offset just past it. The text is
// valid JSON, and each byte of it is looked at once.
func factAt(f *factField, data []byte, i int) (x any, ok bool, end int) {
	switch c := data[i]; f.kind {
	case factObject:
		if c != '{' {
			break
		}
		out := map[string]any{}
		end := walkObject(data, i, func(rawKey []byte, j int) int { return putFact(out, f.fields, rawKey, data, j) })
		return out, true, end
	case factObjectMap, factStringMap:
		if c != '{' {
			break
		}
		item := &factField{kind: factObject, fields: f.fields}
		if f.kind == factStringMap {
			item = &factField{kind: factString}
		}
		out := map[string]any{}
		end := walkObject(data, i, func(rawKey []byte, j int) int {
			k := decodeKey(rawKey)
			x, ok, end := factAt(item, data, j)
			if ok {
				out[k] = x
			} else {
				delete(out, k)
			}
			return end
		})
		return out, true, end
	case factStrings:
		if c != '[' {
			break
		}
		end := scanValue(data, i)
		elems := parseArrayTrusted(data[i:end])
		out := make([]any, len(elems))
		for n, e := range elems {
			s, ok := rawString(e, true)
			if !ok {
				return nil, false, end
			}
			out[n] = s
		}
		return out, true, end
	case factString:
		end := scanValue(data, i)
		x, ok := rawString(data[i:end], true)
		return x, ok, end
	case factInt:
		end := scanValue(data, i)
		if _, ok := integral(data[i:end]); ok {
			return json.Number(data[i:end]), true, end
		}
		return nil, false, end
	case factBool:
		end := scanValue(data, i)
		x, ok := rawBool(data[i:end], true)
		return x, ok, end
	}
	return nil, false, scanValue(data, i)
}

//go:embed schema/state.schema.json
var stateSchemaJSON []byte

// stateSchema compiles on first use only.
var stateSchema = jsonschemas.New("https://github.com/deterministic-exec/des/statemachine/schema/state.schema.json", stateSchemaJSON)

// StateSchema returns the workflow state's JSON Schema (draft 2020-12), the
// text ValidateState checks against.
func StateSchema() []byte { return bytes.Clone(stateSchemaJSON) }

// ValidateState checks a workflow state, decoded by encoding/json (numbers
// as float64 or json.Number), against the state schema, as ValidateStep
// does for a step file: the leaf errors sorted by pointer then message,
// without duplicates, or nil when the document is valid.
//
// The schema is loose: the document must be an object; the
// known fields (those Facts lists, and workflow_history, an array) have
// their types or are null; counts (redo_count, current_iteration,
// menu_interactions, iterations_used, retries) are integers ≥ 0, so a
// negative count cannot pass for work done; state_version and
// current_phase_index are integers; statuses are free strings; unknown
// fields are allowed. Nothing is required.
func ValidateState(doc any) []SchemaError { return stateSchema.Validate(doc) }

// ErrStaleState is wrapped (through a *StaleStateError) when WriteState
// refuses a write based on a version older than the one on disk, or on no
// version while the disk has one.
var ErrStaleState = errors.New("stale workflow state")

// StaleStateError is the error of a refused write: it names both versions.
// errors.Is(err, ErrStaleState) reports it.
type StaleStateError struct {
	Path string
	Base *int64 // the version the write was based on (State.StateVersion); nil when unversioned
	Disk int64  // the version on disk
}

func (e *StaleStateError) Error() string {
	base := "no version (state_version absent or null)"
	if e.Base != nil {
		base = "version " + strconv.FormatInt(*e.Base, 10)
	}
	return fmt.Sprintf("write %s: %v: the write is based on %s but the file holds version %d; read it again and reapply the change",
		e.Path, ErrStaleState, base, e.Disk)
}

// Unwrap returns ErrStaleState.
func (e *StaleStateError) Unwrap() error { return ErrStaleState }

// DefaultLockTimeout is how long WriteState waits for the state's lock by
// default.
const DefaultLockTimeout = 5 * time.Second

// WriteOption configures WriteState.
type WriteOption func(*writeConfig)

type writeConfig struct {
	ctx     context.Context
	timeout time.Duration
}

// WithLockTimeout bounds the wait for the lock (DefaultLockTimeout by
// default), so a stuck peer cannot hang the writer. A timeout of zero or
// less tries once without waiting.
func WithLockTimeout(d time.Duration) WriteOption {
	return func(c *writeConfig) { c.timeout = d }
}

// WithContext makes the wait for the lock give up when ctx is done (as well
// as at the lock timeout). Once the lock is held the write runs to its end:
// stopping between the temporary file and the rename would gain nothing.
func WithContext(ctx context.Context) WriteOption {
	return func(c *writeConfig) { c.ctx = ctx }
}

// WriteState writes s to path as the next version of the workflow state,
// the library side of optimistic locking (rule V7). Under an exclusive lock
// on the sidecar file <path>.lock, held from reading the disk to the rename,
// it reads the version on disk, compares it with the version s was based
// on (s.StateVersion, the version s was read with), and writes s's document
// with state_version set to the new version, which it returns:
//
//	file on disk                      s.StateVersion  result
//	absent, or state_version missing  nil             writes version 1
//	absent, or state_version missing  b               writes version b+1
//	state_version d                   nil             refused: *StaleStateError (unversioned)
//	state_version d                   b < d           refused: *StaleStateError (stale)
//	state_version d                   b ≥ d           writes version b+1
//
// ("missing" is absent or null, as everywhere in des's documents.)
//
// Every write sets the disk version above the version it was based on and
// above the disk version it replaced, and a write is refused when the disk
// is above its base, so of the writes based on the same version (or on no
// version) at most one succeeds, whether the writers are goroutines or
// processes. A base above the disk (a file restored from an older copy) is
// allowed, as V7 allows it, and continues from the base so the version never
// goes back.
//
// s is never modified. The document written is s.Object() with every
// state_version member set to the new version (a new one goes first),
// indented with two spaces; every other member is kept in order and as
// written. To write again, read the file again (ReadState) or parse the
// written bytes; the returned version is the new base. WriteState checks no
// schema or policy: that is the gate's work.
//
// The replacement is atomic (WriteFileAtomic: temporary file in the same
// directory, fsync, rename, directory fsync): a crash at any instant leaves
// the previous or the new document, never a torn one. A temporary file left
// by a writer that crashed (.<name>.tmp-<digits>) is removed by the next
// WriteState to the same file, under the lock; readers never look at them.
//
// Errors, the file left as it was in each case: a stale base; a lock not
// obtained in time (wrapping context.DeadlineExceeded, or the context's
// error); a file on disk that is not a JSON object, or whose state_version
// is neither null nor an integer (WriteState will not guess a version: fix
// or remove the file); a missing directory (it is not created); any I/O
// error.
//
// The lock file is created next to the state file (with symbolic links
// resolved, so every path to the same file shares one lock) and left in
// place: deleting it while writers run would let two of them lock different
// files. Only writers going through WriteState are serialised: a tool that
// writes the file directly bypasses the lock (the document-write gate
// guards those writes). On Unix the lock is flock(2), on Windows
// LockFileEx, both released by the system when a process dies. On other
// systems it is the existence of the lock file (O_EXCL), which a crashed
// writer leaves behind: remove it by hand once no writer runs.
func WriteState(path string, s *State, opts ...WriteOption) (newVersion int64, err error) {
	if s == nil || s.doc == nil {
		return 0, fmt.Errorf("write workflow state %s: no state", path)
	}
	cfg := writeConfig{ctx: context.Background(), timeout: DefaultLockTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	target, err := stateTarget(path)
	if err != nil {
		return 0, fmt.Errorf("write workflow state %s: %w", path, err)
	}
	ctx, cancel := context.WithTimeout(cfg.ctx, max(cfg.timeout, 0))
	defer cancel()
	unlock, err := lockState(ctx, target+".lock")
	if err != nil {
		return 0, fmt.Errorf("write workflow state %s: %w", path, err)
	}
	defer unlock()

	disk, err := diskStateVersion(target)
	if err != nil {
		return 0, fmt.Errorf("write workflow state %s: %w", path, err)
	}
	newVersion, err = nextStateVersion(disk, s.StateVersion)
	if err != nil {
		var stale *StaleStateError
		if errors.As(err, &stale) {
			stale.Path = path
			return 0, stale
		}
		return 0, fmt.Errorf("write workflow state %s: %w", path, err)
	}
	data, err := withStateVersion(s.doc, newVersion).Marshal()
	if err != nil {
		return 0, fmt.Errorf("write workflow state %s: %w", path, err)
	}
	removeTempLeftovers(target)
	if err := WriteFileAtomic(target, data); err != nil {
		return 0, fmt.Errorf("write workflow state %s: %w", path, err)
	}
	return newVersion, nil
}

// nextStateVersion applies WriteState's version rules: disk is the version
// on disk (nil when the file is absent or unversioned), base the version
// the write is based on.
func nextStateVersion(disk, base *int64) (int64, error) {
	if disk != nil && (base == nil || *base < *disk) {
		return 0, &StaleStateError{Base: base, Disk: *disk}
	}
	var b int64
	if base != nil {
		b = *base
	}
	if b == math.MaxInt64 {
		return 0, errors.New("state_version cannot be incremented past the largest int64")
	}
	return b + 1, nil
}

// diskStateVersion reads the version of the state file at target: nil when
// the file does not exist or its state_version is absent or null.
func diskStateVersion(target string) (*int64, error) {
	data, err := fileio.ReadBounded(target, MaxStateFileSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the version on disk: %w", err)
	}
	if !validJSON(data) {
		return nil, errors.New("the file on disk is not valid JSON; fix or remove it")
	}
	data = trimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, fmt.Errorf("the file on disk is %w (found %s); fix or remove it", ErrNotObject, kindOf(data))
	}
	v, ok := rawGet(data, "state_version")
	if !ok || isNull(v) {
		return nil, nil
	}
	n, ok := integral(v)
	if !ok {
		return nil, fmt.Errorf("the file on disk has state_version %s, not an integer; fix or remove it", truncateRaw(v))
	}
	return &n, nil
}

func truncateRaw(v json.RawMessage) string {
	if len(v) > 40 {
		return string(v[:40]) + "…"
	}
	return string(v)
}

// withStateVersion returns a copy of doc whose state_version members (all
// of them, should the key be repeated) hold version; when there is none, it
// is added first.
func withStateVersion(doc *Object, version int64) *Object {
	raw := json.RawMessage(strconv.FormatInt(version, 10))
	// Member values are never modified in place, so copying the members is
	// a snapshot: the caller's document stays as it was.
	d := &Object{members: slices.Clone(doc.members)}
	found := false
	for i := range d.members {
		if keyIs(d.members[i].rawKey, "state_version") {
			d.members[i].value = raw
			found = true
		}
	}
	if !found {
		d.members = slices.Insert(d.members, 0, member{rawKey: []byte(`"state_version"`), value: raw})
	}
	return d
}

// stateTarget returns the file WriteState replaces: path made absolute with
// symbolic links resolved (in its directory when it does not exist yet), so
// that every path to one file names the same lock.
func stateTarget(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	dir, base := filepath.Split(abs)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		return filepath.Join(real, base), nil
	}
	return abs, nil // the directory is missing: the write will say so
}

// removeTempLeftovers removes the temporary files WriteFileAtomic leaves
// for target when its writer dies between creating and renaming them. It
// runs under the state's lock, so no WriteState to target is in flight.
func removeTempLeftovers(target string) {
	dir, base := filepath.Split(target)
	prefix := "." + base + ".tmp-"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return // the write reports what is wrong with the directory
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || rest == "" || !e.Type().IsRegular() || strings.Trim(rest, "0123456789") != "" {
			continue
		}
		_ = os.Remove(filepath.Join(dir, e.Name())) // best effort: another cleaner may have won
	}
}

// stateLocks holds, for each lock file, a semaphore that serialises the
// goroutines of this process before they contend for the file lock.
var stateLocks sync.Map // lock path → chan struct{}

// lockState takes the in-process semaphore and the file lock of lockPath,
// giving up when ctx is done. The returned func releases both.
func lockState(ctx context.Context, lockPath string) (unlock func(), err error) {
	v, _ := stateLocks.LoadOrStore(lockPath, make(chan struct{}, 1))
	sem := v.(chan struct{})
	select {
	case sem <- struct{}{}: // a free semaphore is taken even with a zero timeout
	default:
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return nil, fmt.Errorf("lock %s: %w", lockPath, ctx.Err())
		}
	}
	fl, err := filelock.Acquire(ctx, lockPath) // tries once before it looks at ctx
	if err != nil {
		<-sem
		return nil, err
	}
	return func() {
		_ = fl.Unlock() // closing releases the lock in any case
		<-sem
	}, nil
}
