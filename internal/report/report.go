// Package report builds the timeline report of a project's recorded
// history from its audit trail: one lane per session and subagent, nWave
// steps with their phases and Gate 1, 2 and 3 verdicts, iSDLC phases with
// their gates and escalations, task-graph waves, every deny and warning by
// code, integrity restorations, and the trail's verification status. Build
// makes the model (also written as JSON); WriteHTML renders it as one
// self-contained page: no network, no script or style from outside.
package report

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/internal/decisionlog"
)

// Trail is the audit trail's verification, as `des-hook audit verify` says it.
type Trail struct {
	Status  string   `json:"status"`  // TrailIntact, TrailBroken or TrailUnchecked
	Summary string   `json:"summary"` // its first line
	Notes   []string `json:"notes,omitempty"`
}

// Trail statuses.
const (
	TrailIntact    = "intact"
	TrailBroken    = "broken"
	TrailUnchecked = "unchecked"
)

// Options are what Build reads besides the entries.
type Options struct {
	Project  string
	Now      time.Time
	From, To time.Time         // the entries' times, To excluded; zero is open
	Phases   []string          // the nWave phases in order (data.des.steps.canonical_phases)
	Titles   map[string]string // code → its title (the policies' catalogue)
	Severity map[string]string // code → "deny" or "warn"
	Trail    Trail
	// Decisions are the decision log's events: an entry's messages are
	// those of the decision of the same codes made just before it (the
	// trail records codes, the decision log what each said).
	Decisions []decisionlog.Event
}

// Event is one entry of the trail as the report shows it.
type Event struct {
	Seq       int64          `json:"seq"`
	Time      time.Time      `json:"timestamp"`
	Event     string         `json:"event"`
	Kind      string         `json:"kind"` // see kindOf
	Lane      string         `json:"lane"`
	Session   string         `json:"session_id,omitempty"`
	Agent     string         `json:"agent_id,omitempty"`
	AgentType string         `json:"agent_type,omitempty"`
	Step      string         `json:"step_file,omitempty"`
	Phase     string         `json:"phase,omitempty"`
	Codes     []string       `json:"codes,omitempty"`
	What      string         `json:"what"`
	Messages  []string       `json:"messages,omitempty"` // what the gate said, from the decision log`
	Attested  bool           `json:"attested"`           // des wrote this line (false: a line des did not write)
	Fields    map[string]any `json:"fields"`
	index     int            // its place in Report.Events
}

// Anchor is the event's id in the page: e-<seq>, or e-0-<place> for a
// line from before the chain.
func (e Event) Anchor() string { return anchor(e.Seq, e.index) }

func anchor(seq int64, index int) string {
	if seq > 0 {
		return fmt.Sprintf("e-%d", seq)
	}
	return fmt.Sprintf("e-0-%d", index)
}

// Kinds of Event.
const (
	KindDeny    = "deny"   // a gate blocked
	KindWarn    = "warn"   // a gate let it through with warnings
	KindPass    = "pass"   // a gate let it through
	KindWaived  = "waived" // an exception waived a code
	KindEscal   = "escalation"
	KindRestore = "restore" // the effect check undid a change
	KindSync    = "sync"    // the effect check took what git changed
	KindError   = "error"   // des could not carry out a decision, a write not confirmed
	KindInfo    = "info"
)

// Lane is one session, or one subagent of a session.
type Lane struct {
	ID      string    `json:"id"`
	Label   string    `json:"label"`
	Session string    `json:"session_id,omitempty"`
	Agent   string    `json:"agent_id,omitempty"`
	Events  int       `json:"events"`
	Denies  int       `json:"denies"`
	First   time.Time `json:"first"`
	Last    time.Time `json:"last"`
}

// Step is an nWave step file: its phases as the confirmed writes moved them,
// and its gates' verdicts.
type Step struct {
	File   string      `json:"step_file"`
	Status string      `json:"status,omitempty"` // the task status last recorded
	Phases []PhaseCell `json:"phases"`
	Gates  []Verdict   `json:"gates"`
}

// PhaseCell is a phase of a step and its last recorded status.
type PhaseCell struct {
	Name   string `json:"name"`
	Status string `json:"status"` // NOT_EXECUTED when nothing was recorded
	Seq    int64  `json:"seq,omitempty"`
}

// Verdict is a gate's judgement recorded in the trail.
type Verdict struct {
	Gate     string    `json:"gate"` // "Gate 1", "Gate 2", "Gate 3"
	Outcome  string    `json:"outcome"`
	Codes    []string  `json:"codes,omitempty"`
	Time     time.Time `json:"timestamp"`
	Seq      int64     `json:"seq"`
	Attested bool      `json:"attested"`
	Anchor   string    `json:"-"`
}

// WorkflowPhase is a phase of an iSDLC workflow: the guards' decisions on
// delegations and advancements in it, its escalations and test iterations.
type WorkflowPhase struct {
	Phase       string    `json:"phase"`
	Allowed     int       `json:"allowed"`
	Denied      int       `json:"denied"`
	Escalations []Verdict `json:"escalations"`
	Tests       []Verdict `json:"tests"` // TEST_ITERATION_UPDATED: outcome is the last test result
	Seqs        []int64   `json:"seqs"`
}

// Wave is a task graph phase's end as des's wave sync recorded it.
type Wave struct {
	TaskGraph string    `json:"task_graph"`
	Phase     string    `json:"phase"`
	Status    string    `json:"status"`
	Verdict   string    `json:"verdict,omitempty"`
	WaveFrom  any       `json:"wave_from,omitempty"`
	WaveTo    any       `json:"wave_to,omitempty"`
	Time      time.Time `json:"timestamp"`
	Seq       int64     `json:"seq"`
	Attested  bool      `json:"attested"`
	Anchor    string    `json:"-"`
}

// Code is a code the gates yielded, with the events that carry it.
type Code struct {
	Code     string   `json:"code"`
	Severity string   `json:"severity"` // deny, warn, waived, or the catalogue's for other events (an escalation's)
	Title    string   `json:"title,omitempty"`
	Messages []string `json:"messages,omitempty"` // the first distinct messages it came with
	Count    int      `json:"count"`              // events
	Seqs     []int64  `json:"seqs"`
	// Unattested counts the events with the code that des did not write.
	Unattested int      `json:"unattested"`
	Anchors    []string `json:"-"` // of the first events
}

// Report is the model of the page.
type Report struct {
	Project   string    `json:"project"`
	Generated time.Time `json:"generated"`
	From      time.Time `json:"from,omitzero"`
	To        time.Time `json:"to,omitzero"`
	Trail     Trail     `json:"trail"`
	// Unattested counts the lines des did not write (not in its
	// attestations): chained, so the trail verifies, but not des's.
	Unattested int             `json:"unattested"`
	Counts     map[string]int  `json:"counts"` // by kind
	Lanes      []Lane          `json:"lanes"`
	Steps      []Step          `json:"steps"`
	Workflow   []WorkflowPhase `json:"workflow"`
	Waves      []Wave          `json:"waves"`
	Codes      []Code          `json:"codes"`
	Events     []Event         `json:"events"`
}

// Build makes the report of entries (the trail, oldest first).
func Build(entries []audit.Entry, o Options) *Report {
	r := &Report{Project: o.Project, Generated: o.Now.UTC(), From: o.From, To: o.To, Trail: o.Trail, Counts: map[string]int{},
		Lanes: []Lane{}, Steps: []Step{}, Workflow: []WorkflowPhase{}, Waves: []Wave{}, Codes: []Code{}, Events: []Event{}}
	lanes := map[string]*Lane{}
	steps := map[string]*Step{}
	phases := map[string]map[string]PhaseCell{}
	flows := map[string]*WorkflowPhase{}
	codes := map[[2]string]*Code{}
	said := indexDecisions(o.Decisions)
	for _, e := range entries {
		if !o.From.IsZero() && e.Time.Before(o.From) || !o.To.IsZero() && !e.Time.Before(o.To) {
			continue
		}
		ev := event(e)
		ev.index = len(r.Events)
		ev.Messages = said.messages(ev)
		if !ev.Attested {
			r.Unattested++
		}
		r.Counts[ev.Kind]++
		l := lanes[ev.Lane]
		if l == nil {
			l = &Lane{ID: ev.Lane, Label: laneLabel(ev), Session: ev.Session, Agent: ev.Agent, First: ev.Time, Last: ev.Time}
			lanes[ev.Lane] = l
		}
		l.Events++
		l.First, l.Last = minTime(l.First, ev.Time), maxTime(l.Last, ev.Time)
		if ev.Kind == KindDeny {
			l.Denies++
		}
		sev := ""
		switch ev.Kind {
		case KindDeny:
			sev = "deny"
		case KindWarn, KindPass:
			sev = "warn" // codes on an entry that let the call through are warnings
		case KindWaived:
			sev = "waived"
		}
		for i, c := range ev.Codes {
			if slices.Contains(ev.Codes[:i], c) {
				continue // two violations of one code: one event
			}
			s := sev
			if s == "" {
				s = cmp.Or(o.Severity[c], "info")
			}
			k := [2]string{c, s}
			cd := codes[k]
			if cd == nil {
				cd = &Code{Code: c, Severity: s, Title: o.Titles[c]}
				codes[k] = cd
			}
			cd.Count++
			cd.Seqs = append(cd.Seqs, ev.Seq)
			if len(cd.Anchors) < 5 {
				cd.Anchors = append(cd.Anchors, ev.Anchor())
			}
			if !ev.Attested {
				cd.Unattested++
			}
			for _, m := range ev.Messages {
				if strings.HasPrefix(m, "["+c+"] ") && len(cd.Messages) < 3 && !slices.Contains(cd.Messages, m) {
					cd.Messages = append(cd.Messages, m)
				}
			}
		}
		collectStep(ev, steps, phases)
		collectWorkflow(ev, flows)
		if ev.Event == string(audit.TaskGraphUpdated) {
			r.Waves = append(r.Waves, Wave{TaskGraph: str(ev.Fields, "task_graph"), Phase: ev.Phase, Status: str(ev.Fields, "status"),
				Verdict: str(ev.Fields, "verdict"), WaveFrom: ev.Fields["wave_from"], WaveTo: ev.Fields["wave_to"], Time: ev.Time, Seq: ev.Seq,
				Attested: ev.Attested, Anchor: ev.Anchor()})
		}
		r.Events = append(r.Events, ev)
	}
	for _, l := range lanes {
		r.Lanes = append(r.Lanes, *l)
	}
	slices.SortFunc(r.Lanes, func(a, b Lane) int { return cmp.Or(a.First.Compare(b.First), cmp.Compare(a.ID, b.ID)) })
	for _, file := range slices.Sorted(maps.Keys(steps)) {
		s := steps[file]
		s.Phases = phaseCells(o.Phases, phases[file])
		r.Steps = append(r.Steps, *s)
	}
	for _, f := range flows {
		r.Workflow = append(r.Workflow, *f)
	}
	slices.SortFunc(r.Workflow, func(a, b WorkflowPhase) int { return cmp.Compare(a.Seqs[0], b.Seqs[0]) })
	for _, c := range codes {
		r.Codes = append(r.Codes, *c)
	}
	slices.SortFunc(r.Codes, func(a, b Code) int {
		return cmp.Or(cmp.Compare(sevRank(a.Severity), sevRank(b.Severity)), cmp.Compare(b.Count, a.Count), cmp.Compare(a.Code, b.Code))
	})
	return r
}

// decisions index the decision log's events by their codes.
type decisions map[string][]said

type said struct {
	at       time.Time
	messages []string // "[CODE] msg"
}

func indexDecisions(evs []decisionlog.Event) decisions {
	d := decisions{}
	for _, ev := range evs {
		if ev.Result == nil {
			continue
		}
		res, _ := (*ev.Result).(map[string]any)
		var codes, msgs []string
		for _, sev := range []string{"deny", "warn"} {
			list, _ := res[sev].([]any)
			for _, x := range list {
				v, _ := x.(map[string]any)
				code, _ := v["code"].(string)
				msg, _ := v["msg"].(string)
				if code == "" {
					continue
				}
				codes = append(codes, code)
				if m := "[" + code + "] " + msg; msg != "" && !slices.Contains(msgs, m) {
					msgs = append(msgs, m)
				}
			}
		}
		if len(codes) > 0 {
			key := codeKey(codes)
			d[key] = append(d[key], said{at: ev.Timestamp, messages: msgs})
		}
	}
	for _, list := range d {
		slices.SortStableFunc(list, func(a, b said) int { return a.at.Compare(b.at) })
	}
	return d
}

// codeKey is a set of codes as one string.
func codeKey(codes []string) string {
	c := slices.Clone(codes)
	slices.Sort(c)
	return strings.Join(slices.Compact(c), " ")
}

// messages are those of the last decision with ev's codes made at most 10 s
// before ev was recorded (an entry is written after its decision). The
// decision log is not attested: the page says where they come from.
func (d decisions) messages(ev Event) []string {
	if len(ev.Codes) == 0 {
		return nil
	}
	list := d[codeKey(ev.Codes)]
	// The first decision after ev's time; the one before it is the match.
	i, _ := slices.BinarySearchFunc(list, ev.Time, func(s said, t time.Time) int {
		if s.at.After(t) {
			return 1
		}
		return -1
	})
	if i == 0 || ev.Time.Sub(list[i-1].at) > 10*time.Second {
		return nil
	}
	return list[i-1].messages
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func sevRank(s string) int {
	switch s {
	case "deny":
		return 0
	case "warn":
		return 1
	case "waived":
		return 2
	}
	return 3
}

func event(e audit.Entry) Event {
	f := e.Fields
	if f == nil {
		f = map[string]any{}
	}
	ev := Event{
		Seq: e.Seq, Time: e.Time.UTC(), Event: string(e.Event), Attested: e.Attested, Fields: f,
		Session: str(f, "session_id"), Agent: str(f, "agent_id"), AgentType: str(f, "agent_type"),
		Step: str(f, "step_file"), Phase: cmp.Or(str(f, "phase"), str(f, "task_phase"), str(f, "isdlc_phase")),
	}
	ev.Codes = strs(f["codes"])
	if c := str(f, "code"); c != "" && len(ev.Codes) == 0 {
		ev.Codes = []string{c}
	}
	ev.Kind = kindOf(ev)
	// Quoted parts: no session or agent id can make another lane's key.
	switch {
	case ev.Session != "" || ev.Agent != "":
		ev.Lane = fmt.Sprintf("session %q agent %q", ev.Session, ev.Agent)
	case str(f, "source") != "":
		ev.Lane = fmt.Sprintf("source %q", str(f, "source")) // Gate 3 run by git or by hand
	default:
		ev.Lane = "none"
	}
	ev.What = describe(ev)
	return ev
}

func laneLabel(ev Event) string {
	switch {
	case ev.Agent != "":
		label := "subagent " + short(ev.Agent)
		if ev.AgentType != "" {
			label += " (" + ev.AgentType + ")"
		}
		if ev.Session != "" {
			label += " of session " + short(ev.Session)
		}
		return label
	case ev.Session != "":
		return "session " + short(ev.Session)
	case str(ev.Fields, "source") != "":
		return str(ev.Fields, "source") + " (outside a session)"
	}
	return "outside a session"
}

// short is an id's first 8 characters, for a label (the full id is in the
// lane's title).
func short(id string) string {
	if r := []rune(id); len(r) > 12 {
		return string(r[:8]) + "…"
	}
	return id
}

func kindOf(ev Event) string {
	f := ev.Fields
	switch audit.EventType(ev.Event) {
	case audit.TaskInvocationRejected, audit.DocumentWriteBlocked, audit.PreExecuteSafetyBlocked, audit.CommitValidationFailed,
		audit.ScopeViolation, audit.InvalidTransition:
		return KindDeny
	case audit.SubagentStopValidation:
		switch str(f, "outcome") {
		case "FAIL":
			return KindDeny
		case "PASS":
			if len(ev.Codes) > 0 {
				return KindWarn
			}
			return KindPass
		}
		return KindInfo
	case audit.TaskInvocationValidated, audit.CommitValidationPassed, audit.PreExecuteSafetyPassed:
		if len(ev.Codes) > 0 {
			return KindWarn
		}
		return KindPass
	case audit.PolicyException:
		return KindWaived
	case audit.PhaseEscalation:
		return KindEscal
	case audit.IntegrityViolation:
		changes, _ := ev.Fields["changes"].([]any)
		for _, c := range changes {
			if ch, _ := c.(map[string]any); ch["restored"] == false {
				return KindError // a change des could not undo
			}
		}
		return KindRestore
	case audit.GitSync:
		return KindSync
	case audit.HookError, audit.WriteNotConfirmed:
		return KindError
	}
	return KindInfo
}

// describe is one line of what happened.
func describe(ev Event) string {
	f := ev.Fields
	codes := ""
	if len(ev.Codes) > 0 {
		codes = ": " + strings.Join(ev.Codes, ", ")
	}
	subject := cmp.Or(ev.Step, str(f, "state_file"), strings.Join(strs(f["paths"]), ", "))
	switch audit.EventType(ev.Event) {
	case audit.TaskInvocationValidated:
		return fmt.Sprintf("Gate 1 allowed %s%s", cmp.Or(subject, "a subagent call"), codes)
	case audit.TaskInvocationRejected:
		return fmt.Sprintf("Gate 1 denied %s%s", cmp.Or(subject, "a subagent call"), codes)
	case audit.TaskInvocationStarted:
		return fmt.Sprintf("%s started by %s", subject, cmp.Or(ev.AgentType, "a subagent"))
	case audit.PhaseStarted, audit.PhaseCompleted, audit.PhaseSkipped, audit.PhaseFailed:
		return fmt.Sprintf("%s %s → %s", ev.Phase, str(f, "from"), str(f, "to"))
	case audit.SubagentStopValidation:
		return fmt.Sprintf("Gate 2 %s on %s (%s)%s", str(f, "outcome"), subject, str(f, "action"), codes)
	case audit.CommitValidationPassed:
		return fmt.Sprintf("Gate 3 passed %s%s", cmp.Or(subject, "a commit"), codes)
	case audit.CommitValidationFailed:
		return fmt.Sprintf("Gate 3 failed %s%s", cmp.Or(subject, "a commit"), codes)
	case audit.DocumentWriteBlocked:
		return fmt.Sprintf("%s to %s blocked%s", str(f, "tool"), subject, codes)
	case audit.IntegrityViolation:
		if ev.Kind == KindError {
			return fmt.Sprintf("could not restore all of %s after %s%s", subject, str(f, "tool"), codes)
		}
		return fmt.Sprintf("restored %s after %s%s", subject, str(f, "tool"), codes)
	case audit.GitSync:
		return fmt.Sprintf("took %s as git changed it", subject)
	case audit.PhaseEscalation:
		return fmt.Sprintf("escalation %s in %s%s", str(f, "type"), ev.Phase, codes)
	case audit.TaskGraphUpdated:
		return fmt.Sprintf("task graph phase %s: %s", ev.Phase, str(f, "status"))
	case audit.TaskStateChanged:
		return fmt.Sprintf("%s %s → %s by %s", subject, str(f, "from"), str(f, "to"), str(f, "by"))
	case audit.TestRunObserved:
		return fmt.Sprintf("%s %s: %s", str(f, "runner"), str(f, "result"), str(f, "command"))
	case audit.TestIterationUpdated:
		return fmt.Sprintf("test iteration %v in %s: %s", f["current_iteration"], ev.Phase, str(f, "last_test_result"))
	case audit.PolicyException:
		return fmt.Sprintf("%s waived in %s: %s", str(f, "code"), str(f, "gate"), str(f, "msg"))
	case audit.HookError:
		return "des could not carry out a decision: " + str(f, "error")
	case audit.WriteNotConfirmed:
		return fmt.Sprintf("write to %s not confirmed: %s", subject, str(f, "what"))
	}
	return strings.TrimSpace(strings.ToLower(strings.ReplaceAll(ev.Event, "_", " ")) + " " + subject + codes)
}

func collectStep(ev Event, steps map[string]*Step, phases map[string]map[string]PhaseCell) {
	if ev.Step == "" {
		return
	}
	s := steps[ev.Step]
	if s == nil {
		s = &Step{File: ev.Step, Gates: []Verdict{}}
		steps[ev.Step] = s
		phases[ev.Step] = map[string]PhaseCell{}
	}
	v := Verdict{Codes: ev.Codes, Time: ev.Time, Seq: ev.Seq, Attested: ev.Attested, Anchor: ev.Anchor()}
	switch audit.EventType(ev.Event) {
	case audit.TaskInvocationValidated, audit.TaskInvocationRejected, audit.PreExecuteSafetyBlocked:
		v.Gate, v.Outcome = "Gate 1", map[bool]string{true: "denied", false: "allowed"}[ev.Kind == KindDeny]
	case audit.SubagentStopValidation:
		v.Gate, v.Outcome = "Gate 2", str(ev.Fields, "outcome")
	case audit.CommitValidationPassed, audit.CommitValidationFailed:
		v.Gate, v.Outcome = "Gate 3", map[bool]string{true: "failed", false: "passed"}[ev.Kind == KindDeny]
	case audit.PhaseStarted, audit.PhaseCompleted, audit.PhaseSkipped, audit.PhaseFailed:
		if ev.Phase != "" {
			phases[ev.Step][ev.Phase] = PhaseCell{Name: ev.Phase, Status: str(ev.Fields, "to"), Seq: ev.Seq}
		}
	case audit.TaskInvocationStarted:
		s.Status = cmp.Or(str(ev.Fields, "status"), s.Status)
	case audit.TaskStateChanged, audit.StaleResolution:
		s.Status = cmp.Or(str(ev.Fields, "to"), s.Status)
	}
	if v.Gate != "" {
		s.Gates = append(s.Gates, v)
	}
}

// phaseCells lists the canonical phases, then any other phase recorded.
func phaseCells(order []string, got map[string]PhaseCell) []PhaseCell {
	out := []PhaseCell{}
	for _, p := range order {
		c, ok := got[p]
		if !ok {
			c = PhaseCell{Name: p, Status: "NOT_EXECUTED"}
		}
		out = append(out, c)
	}
	for _, p := range slices.Sorted(maps.Keys(got)) {
		if !slices.Contains(order, p) {
			out = append(out, got[p])
		}
	}
	return out
}

func collectWorkflow(ev Event, flows map[string]*WorkflowPhase) {
	f := ev.Fields
	var phase string
	switch audit.EventType(ev.Event) {
	case audit.PhaseEscalation, audit.TestIterationUpdated:
		phase = ev.Phase
	case audit.TaskInvocationValidated, audit.TaskInvocationRejected:
		if _, ok := f["advancement"]; ok || f["delegation"] != nil || f["target"] != nil {
			phase = str(f, "phase")
		}
	}
	if phase == "" {
		return
	}
	w := flows[phase]
	if w == nil {
		w = &WorkflowPhase{Phase: phase, Escalations: []Verdict{}, Tests: []Verdict{}}
		flows[phase] = w
	}
	w.Seqs = append(w.Seqs, ev.Seq)
	switch audit.EventType(ev.Event) {
	case audit.PhaseEscalation:
		w.Escalations = append(w.Escalations, Verdict{Gate: str(f, "type"), Outcome: "escalated", Codes: ev.Codes, Time: ev.Time, Seq: ev.Seq, Attested: ev.Attested, Anchor: ev.Anchor()})
	case audit.TestIterationUpdated:
		w.Tests = append(w.Tests, Verdict{Gate: fmt.Sprintf("iteration %v", f["current_iteration"]), Outcome: str(f, "last_test_result"), Time: ev.Time, Seq: ev.Seq, Attested: ev.Attested, Anchor: ev.Anchor()})
	case audit.TaskInvocationRejected:
		w.Denied++
	default:
		w.Allowed++
	}
}

func str(f map[string]any, k string) string {
	switch v := f[k].(type) {
	case string:
		return v
	case nil:
		return ""
	case fmt.Stringer:
		return v.String()
	default:
		return fmt.Sprint(v)
	}
}

func strs(v any) []string {
	var out []string
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
	case []string:
		out = append(out, x...)
	}
	return out
}
