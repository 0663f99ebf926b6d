package gate

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	pathpkg "path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/internal/glob"
	"github.com/deterministic-exec/des/internal/isdlc"
	"github.com/deterministic-exec/des/internal/jsonschemas"
	"github.com/deterministic-exec/des/internal/stepdoc"
	"github.com/deterministic-exec/des/policy"
	"github.com/deterministic-exec/des/statemachine"
)

// Edit is one string replacement of an Edit or MultiEdit call.
type Edit struct {
	Old, New   string
	ReplaceAll bool
}

// WriteCall is a Write, Edit or MultiEdit call about to land.
type WriteCall struct {
	Tool      string
	Path      string  // file_path: absolute, or relative to the root
	Content   *string // Write: the whole new content
	Edits     []Edit  // Edit (one) or MultiEdit (in order)
	ToolUseID string
	SessionID string
	// Cwd is the event's working directory ("" = the root): in a monorepo
	// it chooses the project whose workflow state applies.
	Cwd string
	// AgentID is the event's agent_id, set when a subagent makes the call;
	// the audit entries the call causes carry it when not "".
	AgentID string
}

// Kinds of guarded document.
const (
	KindStep  = "step"  // a DES step file
	KindState = "state" // a multi-phase workflow state
	// KindTaskGraph is the orchestrator's task graph (setting
	// task_graph_file): its rules are des.taskgraph's.
	KindTaskGraph = "task_graph"
	// KindStateSelector is .isdlc/monorepo.json, which chooses the
	// workflow state in effect in a monorepo: a write to it is judged by
	// the state it would switch away from (des.statewrite's selector rule).
	KindStateSelector = "state_selector"
)

// StateSelectorFile is the one state selector des reads (KindStateSelector).
const StateSelectorFile = isdlc.MonorepoFile

// DocumentWrite is the write guard (des.gates.document_write): it judges
// what a write to a workflow document would produce before it lands.
type DocumentWrite struct {
	Root       string     // absolute project root
	StepGlobs  []string   // step files, root-relative globs
	StateGlobs []string   // workflow-state files, root-relative globs
	Protected  []string   // DES's own files, as for ToolUse
	Audit      *audit.Log // nil records nothing
	PendingDir string     // where allowed changes wait for PostToolUse; "" records them at once
	// StateDir is the project's per-user state directory, outside the
	// project, where des remembers the highest status each workflow phase
	// has reached (see statememory.go); "" keeps no memory, and V8 then
	// compares with the disk only.
	StateDir string
	Now      func() time.Time
	Writes   Writes // told of the pending records and of each allowed write; nil tells nothing
	// Workflow finds the workflow state in effect, so that a write creating
	// a state file that would take its place is known as such (shadowing);
	// a zero Workflow finds none.
	Workflow Workflow
	// Graph is the task graph document and how its facts are built; a
	// zero Graph guards none.
	Graph TaskGraph
}

// Kind tells whether path is a guarded document, and its root-relative path,
// from its name and what the file holds now. A path matching a step glob is
// a step file only when it looks like one (LooksLikeStep): "**/steps/*.json"
// also matches src/onboarding/steps/welcome.json and
// test/fixtures/steps/01-01.json, which are not DES's. A path that does not
// exist yet is one when it is named as a step file (01-01.json in a steps
// directory): Kind cannot see what will be written there. A
// file DES cannot read there (a FIFO, too large) is taken as a step file:
// the gate then fails closed on it rather than letting a write through
// unjudged. A path that is another hard link of a guarded document is that
// document, and rel is the document's path; when DES cannot finish looking
// for the other names (ErrLinkScan), the path is taken as a step file too.
func (d DocumentWrite) Kind(path string) (kind, rel string) {
	kind, rel, err := d.kind(path, nil)
	if err != nil {
		return KindStep, rel
	}
	return kind, rel
}

// WriteKind is Kind for a Write, Edit or MultiEdit call: a step-glob path is
// also a step file when the content the call would leave looks like one.
// An error (wrapping ErrLinkScan) means DES cannot tell: fail closed.
func (d DocumentWrite) WriteKind(call WriteCall) (kind, rel string, err error) {
	return d.kind(call.Path, func(disk []byte) []byte {
		content, _ := Incoming(call, disk)
		return content
	})
}

// kind is Kind; incoming, when set, gives the content a write would leave
// from the disk's.
func (d DocumentWrite) kind(path string, incoming func(disk []byte) []byte) (string, string, error) {
	rel := ToolUse{Root: d.Root}.normalize(path)
	if kind, rel := d.kindOf(rel, incoming); kind != "" {
		return kind, rel, nil
	}
	kind, doc, err := d.documentLink(rel)
	if err != nil {
		return "", rel, fmt.Errorf("write guard: %s: %w", rel, err)
	}
	if kind != "" {
		return kind, doc, nil
	}
	return "", rel, nil
}

// globKind is the kind a root-relative path's name gives, before looking
// at any content: a step glob's match may still not be a step file.
func (d DocumentWrite) globKind(rel string) string {
	for _, g := range d.StepGlobs {
		if glob.Match(g, rel) {
			return KindStep
		}
	}
	for _, g := range d.StateGlobs {
		if glob.Match(g, rel) {
			return KindState
		}
	}
	if d.Graph.is(rel) {
		return KindTaskGraph
	}
	if rel == StateSelectorFile {
		return KindStateSelector
	}
	return ""
}

// kindOf is the kind of the document at the root-relative path rel, by its
// name and content (Kind), not looking for other hard links.
func (d DocumentWrite) kindOf(rel string, incoming func(disk []byte) []byte) (string, string) {
	if filepath.IsAbs(filepath.FromSlash(rel)) {
		return "", rel
	}
	for _, g := range d.StepGlobs {
		if !glob.Match(g, rel) {
			continue
		}
		// Claimed by content, on disk or incoming: a look-alike check that
		// reads only files a step glob matches, at most one read. A file
		// that does not exist yet, written where DES cannot see the
		// content (Bash), is claimed by a step file's name.
		disk, err := fileio.ReadBounded(filepath.Join(d.Root, filepath.FromSlash(rel)), maxDocumentSize)
		absent := errors.Is(err, fs.ErrNotExist)
		if absent {
			disk, err = nil, nil
		}
		if err != nil || LooksLikeStep(disk) || incoming != nil && LooksLikeStep(incoming(disk)) ||
			absent && incoming == nil && stepName(rel) {
			return KindStep, rel
		}
		break // one step glob's answer is every step glob's
	}
	for _, g := range d.StateGlobs {
		if glob.Match(g, rel) {
			return KindState, rel
		}
	}
	if d.Graph.is(rel) {
		return KindTaskGraph, rel
	}
	if rel == StateSelectorFile {
		return KindStateSelector, rel
	}
	return "", rel
}

// stepNamePattern is the name of a DES step file in a steps directory:
// NN-NN.json, with nWave's variants (a letter suffix such as 01-02a, a
// prefix such as US005-03-05 or phase2-01).
var stepNamePattern = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:[A-Za-z0-9_]+-)*[A-Za-z_]*[0-9]+-[0-9]+[A-Za-z]?\.json$`)
})

// stepName reports whether rel is named as a step file in a steps directory.
func stepName(rel string) bool {
	dir, name := pathpkg.Split(rel)
	return pathpkg.Base(dir) == "steps" && stepNamePattern().MatchString(name)
}

// LooksLikeStep reports whether content is a DES step file by its shape
// (stepdoc.Looks): a JSON object with tdd_cycle, task_specification, the
// obsolete tdd_phase, or a workflow_type DES knows. A task_id alone is not
// enough: test fixtures and other tools' step files have one too.
func LooksLikeStep(content []byte) bool { return stepdoc.Looks(content) }

// Incoming is the content the call would leave in the file, from what the
// file holds now (disk, nil when it does not exist). ok is false when Claude
// Code would refuse the call itself: an Edit of a missing file, or an
// old_string that is not there, or not unique without replace_all.
//
// Edits are applied as Claude Code applies them (see editsim.go): an empty
// old_string on a missing or empty file creates it with new_string; a file
// with CRLF line endings is matched with LF edits and keeps its CRLF
// endings; new_string loses trailing white space outside Markdown; an
// old_string is matched through desanitisation and with curly quotes read as
// straight ones, and new_string then takes the file's quote style.
func Incoming(call WriteCall, disk []byte) (content []byte, ok bool) {
	if call.Content != nil {
		return []byte(*call.Content), true
	}
	if len(call.Edits) == 1 && call.Edits[0].Old == "" && len(bytes.TrimSpace(disk)) == 0 {
		e := normalizeEdit(call.Path, string(disk), call.Edits[0])
		return []byte(e.New), true
	}
	if disk == nil || len(call.Edits) == 0 {
		return nil, false
	}
	if out, ok := applyEdits(call.Path, string(disk), call.Edits); ok {
		return []byte(out), true
	}
	if !bytes.Contains(disk, []byte("\r\n")) {
		return nil, false
	}
	lf := strings.ReplaceAll(string(disk), "\r\n", "\n")
	out, ok := applyEdits(call.Path, lf, call.Edits)
	if !ok {
		return nil, false
	}
	return []byte(strings.ReplaceAll(out, "\n", "\r\n")), true
}

func applyEdits(path, out string, edits []Edit) (string, bool) {
	original := out
	for _, e := range edits {
		e = normalizeEdit(path, original, e)
		if e.Old == "" {
			return "", false
		}
		actual, found := findActualString(out, e.Old)
		if !found {
			return "", false
		}
		newStr := preserveQuoteStyle(e.Old, actual, e.New)
		if !e.ReplaceAll && strings.Count(out, actual) > 1 {
			return "", false
		}
		out = applyEditToFile(out, actual, newStr, e.ReplaceAll)
	}
	return out, true
}

// Check judges a write to a guarded document. For a path that is not
// guarded it returns Evaluated false and asks no policy; so does a call that
// Claude Code will refuse by itself. A denied write is recorded as
// DOCUMENT_WRITE_BLOCKED; the status changes of an allowed step-file write
// are recorded once PostToolUse confirms they landed (Confirm).
func (d DocumentWrite) Check(ctx context.Context, ev Evaluator, call WriteCall) (Result, error) {
	res := Result{Gate: policy.DocumentWrite}
	kind, rel, err := d.WriteKind(call)
	if err != nil || kind == "" {
		return res, err
	}
	abs := filepath.Join(d.Root, filepath.FromSlash(rel))
	disk, err := readBounded(abs)
	if err != nil {
		return res, fmt.Errorf("write guard: read %s: %w", rel, err)
	}
	return d.check(ctx, ev, call, kind, rel, disk, false)
}

// CheckSync judges content that git put at rel (relative to the root) in
// place of was (nil: absent) during a tool call, as a Write of content
// over was would be judged: a workflow state, task graph or state selector
// git checked out must pass the rules a write of it must pass. Step files
// are judged by Gate 3 on the commits that brought them; for them, and for
// paths that are not guarded documents, Evaluated is false.
func (d DocumentWrite) CheckSync(ctx context.Context, ev Evaluator, call WriteCall, was []byte) (Result, error) {
	res := Result{Gate: policy.DocumentWrite}
	kind, rel, err := d.WriteKind(call)
	if err != nil || kind == "" || kind == KindStep {
		return res, err
	}
	return d.check(ctx, ev, call, kind, rel, was, true)
}

// check is Check with the document's content before the write, disk. A
// sync check (CheckSync) records a deny, but prepares nothing for a
// PostToolUse: git's write has landed already.
func (d DocumentWrite) check(ctx context.Context, ev Evaluator, call WriteCall, kind, rel string, disk []byte, sync bool) (Result, error) {
	res := Result{Gate: policy.DocumentWrite}
	var err error
	abs := filepath.Join(d.Root, filepath.FromSlash(rel))
	content, ok := Incoming(call, disk)
	if !ok {
		return res, nil
	}
	in := map[string]any{"tool": call.Tool, "writes": []any{map[string]any{"path": rel, "tool": call.Tool}}}
	var changes []audit.Entry
	var seen map[string]any
	switch kind {
	case KindStep:
		incoming, diskStep := stepWriteFacts(rel, content, disk)
		in["step"] = incoming.facts
		if diskStep != nil {
			in["disk_step"] = lastPerName(stepStatusFacts(diskStep))
		}
		if incoming.step != nil {
			changes = stepChanges(rel, diskStep, incoming.step)
		}
	case KindState:
		if seen, err = d.readSeen(rel); err != nil {
			return res, fmt.Errorf("write guard: %w", err)
		}
		facts := stateWriteFacts(rel, content, disk, seen)
		if disk == nil {
			shadows, err := d.shadowedState(ctx, rel)
			if err != nil {
				return res, fmt.Errorf("write guard: %w", err)
			}
			if shadows != nil {
				facts["shadows"] = shadows
			}
		}
		if err := d.Workflow.progressFacts(ctx, call.Cwd, rel, content, disk, facts, in); err != nil {
			return res, fmt.Errorf("write guard: %w", err)
		}
		// The workflow on disk is one des saw; whether the write brings
		// back one des saw, as it saw it (DES-WORKFLOW-REUSED).
		saw := d.rememberWorkflow(ctx, rel, disk)
		wf, _ := in["workflow"].(map[string]any)
		doc, _ := facts["document"].(map[string]any)
		if ev, ok := wf["evidence"].(map[string]any); ok && doc != nil {
			ev["content_seen"] = sawWorkflow(saw, rel, doc)
		}
		in["state"] = facts
	case KindTaskGraph:
		in["task_graph"] = d.Graph.writeFacts(rel, content, disk)
	case KindStateSelector:
		switches, err := d.Workflow.switches(ctx, call.Cwd, content)
		if err != nil {
			return res, fmt.Errorf("write guard: %s: %w", rel, err)
		}
		in["state_selector"] = map[string]any{"path": rel, "switches": switches}
	}
	dec, err := ev.Evaluate(ctx, policy.DocumentWrite, in)
	if err != nil {
		return res, fmt.Errorf("write guard: %w", err)
	}
	res.Decision, res.Evaluated = dec, true
	if res.Denied() {
		err = d.record(ctx, audit.Entry{Event: audit.DocumentWriteBlocked, Fields: withAgent(map[string]any{
			"gate": string(policy.DocumentWrite), "tool": call.Tool, "paths": []any{rel}, "kind": kind,
			"codes": dec.Codes(), "tool_use_id": call.ToolUseID, "session_id": call.SessionID,
		}, call.AgentID)})
		return res, err
	}
	if sync {
		return res, nil
	}
	if kind == KindState {
		next, _ := dec.Info["state_seen"].(map[string]any)
		if err := d.pendState(ctx, call.ToolUseID, rel, content, next); err != nil {
			return res, fmt.Errorf("write guard: allowed, but des's memory of %s could not be prepared: %w", rel, err)
		}
	}
	if d.Writes != nil {
		// Allowed: the write is announced with the content judged, so that a
		// check of another call's effects running meanwhile keeps it.
		_ = d.Writes.Expect(abs, content)
	}
	if len(changes) > 0 {
		for i := range changes {
			changes[i].Fields["tool_use_id"], changes[i].Fields["session_id"] = call.ToolUseID, call.SessionID
			withAgent(changes[i].Fields, call.AgentID)
		}
		return res, d.pend(ctx, call.ToolUseID, rel, content, changes)
	}
	return res, nil
}

func (d DocumentWrite) record(ctx context.Context, entries ...audit.Entry) error {
	if d.Audit == nil || len(entries) == 0 {
		return nil
	}
	if err := d.Audit.Append(ctx, entries...); err != nil {
		return fmt.Errorf("%w: %w", ErrNotRecorded, err)
	}
	return nil
}

// maxDocumentSize bounds what the guard reads of a document on disk.
const maxDocumentSize = statemachine.MaxStepFileSize

// readBounded reads a regular file of at most maxDocumentSize bytes, nil
// when it does not exist. Anything else (a FIFO would block the open
// forever, a device could be endless) is an error.
func readBounded(path string) ([]byte, error) {
	data, err := fileio.ReadBounded(path, maxDocumentSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

type parsedStep struct {
	step  *statemachine.Step
	facts map[string]any
}

// stepWriteFacts parses the incoming step file and the one on disk.
func stepWriteFacts(rel string, content, disk []byte) (parsedStep, *statemachine.Step) {
	var diskStep *statemachine.Step
	if disk != nil {
		diskStep, _ = statemachine.ParseStep(disk) // an unparsable file on disk has no statuses to compare
	}
	in := parsedStep{facts: map[string]any{"path": rel}}
	step, err := statemachine.ParseStep(content)
	switch {
	case errors.Is(err, statemachine.ErrNotObject):
		in.facts["problem"], in.facts["error"] = "not_object", err.Error()
	case err != nil:
		in.facts["problem"], in.facts["error"] = "invalid_json", err.Error()
	default:
		in.step = step
		for k, v := range stepStatusFacts(step) {
			in.facts[k] = v
		}
		in.facts["document"] = step.Document()
		in.facts["schema_errors"] = jsonschemas.Facts(step.Validate())
	}
	return in, diskStep
}

// stepStatusFacts are the statuses the transition rules compare.
func stepStatusFacts(s *statemachine.Step) map[string]any {
	phases := make([]any, len(s.Phases))
	for i, p := range s.Phases {
		phases[i] = map[string]any{"name": p.Name, "status": p.Status, "outcome": p.Outcome, "blocked_by": p.BlockedBy}
	}
	return map[string]any{"task_status": s.Status, "phases": phases}
}

// lastPerName keeps one phase per name, the last, as a reader of the log
// would: a file that repeats a name must not make the policy fail.
func lastPerName(facts map[string]any) map[string]any {
	phases := facts["phases"].([]any)
	seen := map[string]bool{}
	var kept []any
	for i := len(phases) - 1; i >= 0; i-- {
		name := phases[i].(map[string]any)["name"].(string)
		if !seen[name] {
			seen[name] = true
			kept = append([]any{phases[i]}, kept...)
		}
	}
	facts["phases"] = kept
	return facts
}

// phaseEvents names the audit event of a phase reaching a status.
var phaseEvents = map[string]audit.EventType{
	statemachine.PhaseInProgress: audit.PhaseStarted,
	statemachine.PhaseExecuted:   audit.PhaseCompleted,
	statemachine.PhaseSkipped:    audit.PhaseSkipped,
	statemachine.PhaseFailed:     audit.PhaseFailed,
}

// stepChanges are the audit entries of the status changes a write makes.
func stepChanges(rel string, disk, incoming *statemachine.Step) []audit.Entry {
	var out []audit.Entry
	from := statemachine.TaskTodo
	before := map[string]statemachine.Phase{}
	if disk != nil {
		from = cmpOr(disk.Status, statemachine.TaskTodo)
		for _, p := range disk.Phases {
			before[p.Name] = p
		}
	}
	if to := cmpOr(incoming.Status, statemachine.TaskTodo); to != from {
		out = append(out, audit.Entry{Event: audit.TaskStateChanged, Fields: map[string]any{"step_file": rel, "from": from, "to": to, "by": "write"}})
	}
	for _, p := range incoming.Phases {
		was := cmpOr(before[p.Name].Status, statemachine.PhaseNotExecuted)
		event, ok := phaseEvents[p.Status]
		if !ok || p.Status == was {
			continue
		}
		fields := map[string]any{"step_file": rel, "phase": p.Name, "from": was, "to": p.Status}
		if p.Outcome != "" {
			fields["outcome"] = p.Outcome
		}
		if p.BlockedBy != "" {
			fields["blocked_by"] = p.BlockedBy
		}
		out = append(out, audit.Entry{Event: event, Fields: fields})
	}
	return out
}

func cmpOr(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// pending is an allowed write waiting for PostToolUse: the write may still
// be refused (a permission prompt), so its changes are recorded only once
// the file is seen to hold what was allowed.
type pending struct {
	Path    string        `json:"path"` // root-relative
	SHA256  string        `json:"sha256"`
	Entries []audit.Entry `json:"entries"`
	// Document is the content allowed, when it is JSON: a formatter hook
	// may rewrite the file before des's PostToolUse (re-indent it, add a
	// trailing newline), and the write is confirmed when the file still
	// holds the same JSON value.
	Document json.RawMessage `json:"document,omitempty"`
}

func (d DocumentWrite) pend(ctx context.Context, toolUseID, rel string, content []byte, entries []audit.Entry) error {
	if d.PendingDir == "" || !safeID(toolUseID) {
		return d.record(ctx, entries...) // nothing to confirm against: record now
	}
	sum := sha256.Sum256(content)
	rec := pending{Path: rel, SHA256: hex.EncodeToString(sum[:]), Entries: entries}
	if json.Valid(content) {
		rec.Document = content
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	p := filepath.Join(d.PendingDir, toolUseID+".json")
	return Announced(ctx, d.Writes, p, data, func() error {
		// Sandboxed Bash may write .des/runs: inside the project, nothing
		// is followed (a link at the record or above it is refused).
		if rel, ok := within(d.Root, p); ok && d.Root != "" {
			return fileio.WriteAtomicIn(d.Root, rel, data, true)
		}
		if err := os.MkdirAll(d.PendingDir, 0o755); err != nil { // a directory a program chose outside the project
			return err
		}
		return statemachine.WriteFileAtomic(p, data)
	})
}

// readPending reads the pending record name of dir, nil when there is
// none, and returns how to remove it. Inside root nothing is followed
// (fileio.OpenDirIn) and, everywhere, only a regular file is read, opened
// without blocking: a FIFO at a record's name would hold PostToolUse.
func readPending(root, dir, name string) (data []byte, remove func() error, err error) {
	if rel, ok := within(root, dir); ok && root != "" {
		d, err := fileio.OpenDirIn(root, rel, false)
		if err != nil {
			return nil, nil, err
		}
		if data, err = fileio.ReadBoundedIn(d, name, maxRecordSize); err != nil {
			d.Close()
			return nil, nil, err
		}
		return data, func() error { defer d.Close(); return d.Remove(name) }, nil
	}
	path := filepath.Join(dir, name)
	if data, err = fileio.ReadBounded(path, maxRecordSize); err != nil {
		return nil, nil, err
	}
	return data, func() error { return os.Remove(path) }, nil
}

// Confirm is PostToolUse for a Write, Edit or MultiEdit: when an allowed
// write recorded changes under toolUseID and the file now holds the content
// that was allowed, the changes are appended to the audit trail with
// "confirmed": true, and, for a workflow state, des's memory of its phase
// statuses moves on. Otherwise nothing is recorded. It returns whether
// changes were confirmed. ConfirmResult also says why a step write was not.
func (d DocumentWrite) Confirm(ctx context.Context, toolUseID string) (bool, error) {
	c, err := d.ConfirmResult(ctx, toolUseID)
	return c.Confirmed, err
}

// Confirmation is what PostToolUse found of an allowed write.
type Confirmation struct {
	Confirmed bool
	// Path is the step file (or workflow state) whose pending write was not confirmed, and
	// Mismatch what the file holds instead ("" when confirmed, or when no
	// step write was pending). Such a write is audited as
	// WRITE_NOT_CONFIRMED: its phase moves are not in the trail, and Gate
	// 2 will find the phases it finished started around the guard.
	Path, Mismatch string
	// Reformatted is what the document at Path holds when the write was
	// confirmed with other bytes than the ones allowed (a formatter hook
	// rewrote them: same JSON value), nil otherwise. The effect check's
	// baseline takes these bytes as the allowed write.
	Reformatted []byte
}

// ConfirmResult is Confirm, saying why a pending step or workflow-state
// write was not confirmed. A document is taken as holding what was allowed
// when it holds the same JSON value, whatever its formatting (key order, white
// space, a trailing newline): formatter hooks rewrite files after a Write.
func (d DocumentWrite) ConfirmResult(ctx context.Context, toolUseID string) (Confirmation, error) {
	state, err := d.confirmState(ctx, toolUseID)
	if err != nil {
		return state, err
	}
	c, err := d.confirmSteps(ctx, toolUseID)
	if !c.Confirmed && c.Mismatch == "" {
		// No step write was pending: the workflow state's outcome.
		return state, err
	}
	c.Confirmed = c.Confirmed || state.Confirmed
	return c, err
}

func (d DocumentWrite) confirmSteps(ctx context.Context, toolUseID string) (Confirmation, error) {
	if d.PendingDir == "" || !safeID(toolUseID) {
		return Confirmation{}, nil
	}
	path := filepath.Join(d.PendingDir, toolUseID+".json")
	raw, remove, err := readPending(d.Root, d.PendingDir, toolUseID+".json")
	if errors.Is(err, fs.ErrNotExist) {
		return Confirmation{}, nil
	}
	if err != nil {
		return Confirmation{}, fmt.Errorf("write guard: pending record %s: %w", path, err)
	}
	defer Announced(ctx, d.Writes, path, nil, remove)
	var p pending
	if err := json.Unmarshal(raw, &p); err != nil {
		return Confirmation{}, fmt.Errorf("write guard: pending record %s: %w", path, err)
	}
	c, err := d.landed(ctx, toolUseID, "step_file", p.Path, p.SHA256, p.Document)
	if err != nil || !c.Confirmed {
		return c, err
	}
	for i := range p.Entries {
		p.Entries[i].Fields["confirmed"] = true
	}
	return c, d.record(ctx, p.Entries...)
}

// landed compares the document at rel with the write allowed under
// toolUseID (the SHA-256 of its bytes, and its JSON value when it is
// JSON). Confirmed when it holds those bytes, or the same JSON value
// (Reformatted then holds the bytes a formatter left). Otherwise the write
// did not land as allowed (a permission prompt refused it, or a hook
// rewrote its content): audited as WRITE_NOT_CONFIRMED under key
// (step_file, state_file) at once, never silent.
func (d DocumentWrite) landed(ctx context.Context, toolUseID, key, rel, sum string, doc json.RawMessage) (Confirmation, error) {
	now, err := readBounded(filepath.Join(d.Root, filepath.FromSlash(rel)))
	if err != nil {
		return Confirmation{}, err
	}
	got := sha256.Sum256(now)
	same := hex.EncodeToString(got[:]) == sum
	mismatch := ""
	switch {
	case now == nil:
		mismatch = "the file is gone"
	case same:
	case doc == nil:
		mismatch = "its bytes differ from what was allowed"
	default:
		mismatch = jsonDifference(doc, now)
	}
	if mismatch != "" {
		c := Confirmation{Path: rel, Mismatch: mismatch}
		return c, d.record(ctx, audit.Entry{Event: audit.WriteNotConfirmed, Fields: map[string]any{
			key: rel, "tool_use_id": toolUseID, "what": mismatch,
		}})
	}
	c := Confirmation{Confirmed: true}
	if !same {
		c.Path, c.Reformatted = rel, now
	}
	return c, nil
}
