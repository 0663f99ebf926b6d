// Package replay decides recorded decisions again, with the policies of now
// or a candidate's, and says which would come out otherwise: a team tries a
// policy change on the decisions des logged last week before it ships.
//
// A recorded decision (an event of package decisionlog) keeps the gate's
// input and the decision it got. Run re-decides each input on its gate at the
// time it was recorded, through a Decider with no effects, and compares the
// codes that block (deny, not waived) and those that warn. An input a mask or
// the size bound erased in part is decided again only when the policies do not
// read the erased part; otherwise it is reported as masked, never guessed.
package replay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/deterministic-exec/des/internal/decisionlog"
	"github.com/deterministic-exec/des/policy"
)

// Decider decides a gate on an input at a time, with no effects
// (des.Engine.Replay).
type Decider interface {
	Replay(ctx context.Context, gate policy.Gate, input any, at time.Time) (policy.Decision, error)
}

// Options are what Run replays and with what.
type Options struct {
	Decider Decider
	// InputPaths lists what a gate's policies read (policy.Engine.InputPaths);
	// nil takes them to read everything, so any erased input is masked.
	InputPaths func(policy.Gate) ([]string, error)
	From, To   time.Time // the recorded decisions' times, To excluded; zero is open
	Gates      []string  // only these gates; none is all
	Codes      []string  // only decisions that yielded one of these codes, before or after; none is all
	Examples   int       // decision ids kept per group (default 3)
	// Timeout bounds one decision (default 5 s): one that takes longer is
	// skipped as one the policies could not decide.
	Timeout time.Duration
}

// Outcome is what a decision blocked and warned on, by code.
type Outcome struct {
	Denied bool     `json:"denied"`
	Deny   []string `json:"deny"`   // codes that block, sorted, once each
	Warn   []string `json:"warn"`   // codes that warn
	Waived []string `json:"waived"` // codes an exception waived
}

// Change is a recorded decision that comes out otherwise.
type Change struct {
	DecisionID string    `json:"decision_id"`
	Time       time.Time `json:"timestamp"`
	Gate       string    `json:"gate"`
	Kind       string    `json:"kind"` // KindNewlyDenied, KindNoLongerDenied or KindCodesChanged
	Before     Outcome   `json:"before"`
	After      Outcome   `json:"after"`
	Place      string    `json:"place"` // file:line of the record
}

// Kinds of Change.
const (
	KindNewlyDenied    = "newly denied"
	KindNoLongerDenied = "no longer denied"
	KindCodesChanged   = "codes changed"
)

// Group is the changes of one gate and one code in one direction.
type Group struct {
	Gate     string   `json:"gate"`
	Code     string   `json:"code"`
	Change   string   `json:"change"` // "deny added", "deny removed", "warn added", "warn removed"
	Count    int      `json:"count"`
	Examples []string `json:"examples"` // decision ids, the first ones
}

// NotReplayed is a recorded decision that was not decided again, and why.
type NotReplayed struct {
	DecisionID string    `json:"decision_id,omitempty"`
	Time       time.Time `json:"timestamp,omitzero"`
	Gate       string    `json:"gate,omitempty"`
	Place      string    `json:"place"`
	Reason     string    `json:"reason"`
	// Erased and Read are, for a masked input, the parts erased from the
	// record and the parts the policies read that overlap them.
	Erased []string `json:"erased,omitempty"`
	Read   []string `json:"read,omitempty"`
}

// Report is what Run found.
type Report struct {
	Replayed  int           `json:"replayed"`
	Unchanged int           `json:"unchanged"`
	Changed   []Change      `json:"changed"`
	Groups    []Group       `json:"groups"`
	Masked    []NotReplayed `json:"masked"`  // input erased where the policies read
	Skipped   []NotReplayed `json:"skipped"` // no input or result recorded, an error recorded, a line not an event, an input the policies failed on
	Failed    int           `json:"failed"`  // of Skipped, the decisions the policies failed on
}

// ErrDecide is Run stopping because the policies could not decide: what a
// gate reads could not be found, or maxFailedInARow decisions in a row
// failed (policies that fail on every input, a server down). A decision that
// fails alone is skipped, with the reason.
var ErrDecide = errors.New("replay: could not decide")

// maxFailedInARow is how many decisions may fail one after the other before
// Run stops.
const maxFailedInARow = 10

// Run replays the events in the order given.
func Run(ctx context.Context, events iter.Seq2[decisionlog.Recorded, error], o Options) (*Report, error) {
	if o.Examples <= 0 {
		o.Examples = 3
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	rep := &Report{Changed: []Change{}, Groups: []Group{}, Masked: []NotReplayed{}, Skipped: []NotReplayed{}}
	reads := map[policy.Gate][]string{}
	groups := map[[3]string]*Group{}
	failedInARow := 0
	for rec, err := range events {
		if err != nil {
			if le := (*decisionlog.LineError)(nil); errors.As(err, &le) {
				rep.Skipped = append(rep.Skipped, NotReplayed{Place: fmt.Sprintf("%s:%d", le.File, le.Line), Reason: le.Reason})
				continue
			}
			return rep, err
		}
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		ev := rec.Event
		gate, ok := strings.CutPrefix(ev.Path, "des/gates/")
		if !o.selected(ev, gate) {
			continue
		}
		nr := NotReplayed{DecisionID: ev.DecisionID, Time: ev.Timestamp, Gate: gate, Place: fmt.Sprintf("%s:%d", rec.File, rec.Line)}
		skip := func(reason string) { nr.Reason = reason; rep.Skipped = append(rep.Skipped, nr) }
		switch {
		case !ok || !slices.Contains(policy.Gates(), policy.Gate(gate)):
			skip(fmt.Sprintf("path %q is not a des gate", ev.Path))
			continue
		case ev.Error != nil:
			skip("the decision was not made: " + ev.Error.Message)
			continue
		case ev.Timestamp.IsZero():
			skip("no time recorded: the policies would read another")
			continue
		case ev.Result == nil || len(erasedUnder(ev.Erased, "/result")) > 0:
			skip("its result was not kept whole (erased " + strings.Join(erasedUnder(ev.Erased, "/result"), ", ") + "): the recorded outcome is not known")
			continue
		case ev.Input == nil && !slices.Contains(ev.Erased, "/input"):
			skip("no input recorded")
			continue
		}
		before, err := recordedOutcome(*ev.Result)
		if err != nil {
			skip("its result is not a gate decision: " + err.Error())
			continue
		}
		g := policy.Gate(gate)
		if erased := erasedUnder(ev.Erased, "/input"); len(erased) > 0 {
			read, known := reads[g]
			if !known && o.InputPaths != nil {
				if read, err = o.InputPaths(g); err != nil {
					return rep, fmt.Errorf("%w: what gate %s reads: %w", ErrDecide, g, err)
				}
				reads[g] = read
			}
			if o.InputPaths == nil {
				read = []string{"/input"}
			}
			if overlap := overlapping(erased, read); len(overlap) > 0 {
				nr.Reason = "its input was erased where the policies read"
				nr.Erased, nr.Read = erased, overlap
				if len(o.Codes) == 0 || o.hasCode(before) {
					rep.Masked = append(rep.Masked, nr)
				}
				continue
			}
		}
		if ev.Input == nil { // erased whole, and the policies read nothing
			nr.Reason, nr.Erased, nr.Read = "its input was erased whole", []string{"/input"}, []string{}
			rep.Masked = append(rep.Masked, nr)
			continue
		}
		dctx, cancel := context.WithTimeout(ctx, o.Timeout)
		d, err := o.Decider.Replay(dctx, g, *ev.Input, ev.Timestamp)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return rep, ctx.Err()
			}
			// One input the policies cannot decide (a line another program
			// wrote, say) is that decision's problem; a run of them is the
			// policies' or the server's, and the rest would fail too.
			skip("could not be decided: " + err.Error())
			rep.Failed++
			if failedInARow++; failedInARow == maxFailedInARow {
				return rep, fmt.Errorf("%w: the last %d decisions, up to %s (%s): %w", ErrDecide, maxFailedInARow, ev.DecisionID, nr.Place, err)
			}
			continue
		}
		failedInARow = 0
		after := decidedOutcome(d)
		if len(o.Codes) > 0 && !o.hasCode(before) && !o.hasCode(after) {
			continue
		}
		rep.Replayed++
		kind := compare(before, after)
		if kind == "" {
			rep.Unchanged++
			continue
		}
		rep.Changed = append(rep.Changed, Change{DecisionID: ev.DecisionID, Time: ev.Timestamp, Gate: gate, Kind: kind, Before: before, After: after, Place: nr.Place})
		for _, d := range diffs(before, after) {
			key := [3]string{gate, d.code, d.change}
			gr := groups[key]
			if gr == nil {
				gr = &Group{Gate: gate, Code: d.code, Change: d.change, Examples: []string{}}
				groups[key] = gr
			}
			gr.Count++
			if len(gr.Examples) < o.Examples {
				gr.Examples = append(gr.Examples, ev.DecisionID)
			}
		}
	}
	for _, g := range groups {
		rep.Groups = append(rep.Groups, *g)
	}
	slices.SortFunc(rep.Groups, func(a, b Group) int {
		return cmp.Or(cmp.Compare(a.Gate, b.Gate), cmp.Compare(a.Code, b.Code), cmp.Compare(a.Change, b.Change))
	})
	return rep, nil
}

func (o Options) selected(ev decisionlog.Event, gate string) bool {
	if !o.From.IsZero() && ev.Timestamp.Before(o.From) {
		return false
	}
	if !o.To.IsZero() && !ev.Timestamp.Before(o.To) {
		return false
	}
	return len(o.Gates) == 0 || slices.Contains(o.Gates, gate)
}

func (o Options) hasCode(out Outcome) bool {
	for _, c := range o.Codes {
		if slices.Contains(out.Deny, c) || slices.Contains(out.Warn, c) || slices.Contains(out.Waived, c) {
			return true
		}
	}
	return false
}

// recordedOutcome reads a logged result: deny and warn hold the waived
// violations too, and exception the codes that waived one; a violation
// marked unwaivable was not waived (as package policy decides).
func recordedOutcome(result any) (Outcome, error) {
	m, ok := result.(map[string]any)
	if !ok {
		return Outcome{}, fmt.Errorf("%T, not an object", result)
	}
	waive := map[string]bool{}
	if ex, ok := m["exception"].([]any); ok {
		for _, c := range ex {
			if s, ok := c.(string); ok {
				waive[s] = true
			}
		}
	}
	var out Outcome
	for _, sev := range []string{"deny", "warn"} {
		list, ok := m[sev].([]any)
		if !ok && m[sev] != nil {
			return Outcome{}, fmt.Errorf("%s is %T, not a list", sev, m[sev])
		}
		for _, x := range list {
			v, _ := x.(map[string]any)
			code, ok := v["code"].(string)
			if !ok {
				return Outcome{}, fmt.Errorf("a %s without a code: %v", sev, x)
			}
			switch {
			case waive[code] && v["unwaivable"] != true:
				out.Waived = append(out.Waived, code)
			case sev == "deny":
				out.Deny = append(out.Deny, code)
			default:
				out.Warn = append(out.Warn, code)
			}
		}
	}
	return out.normal(), nil
}

func decidedOutcome(d policy.Decision) Outcome {
	var out Outcome
	for _, v := range d.Deny {
		out.Deny = append(out.Deny, v.Code)
	}
	for _, v := range d.Warn {
		out.Warn = append(out.Warn, v.Code)
	}
	for _, v := range d.Waived {
		out.Waived = append(out.Waived, v.Code)
	}
	return out.normal()
}

func (o Outcome) normal() Outcome {
	for _, l := range []*[]string{&o.Deny, &o.Warn, &o.Waived} {
		if *l == nil {
			*l = []string{}
		}
		slices.Sort(*l)
		*l = slices.Compact(*l)
	}
	o.Denied = len(o.Deny) > 0
	return o
}

func compare(before, after Outcome) string {
	switch {
	case !before.Denied && after.Denied:
		return KindNewlyDenied
	case before.Denied && !after.Denied:
		return KindNoLongerDenied
	case !slices.Equal(before.Deny, after.Deny) || !slices.Equal(before.Warn, after.Warn):
		return KindCodesChanged
	}
	return ""
}

type codeDiff struct{ code, change string }

func diffs(before, after Outcome) []codeDiff {
	var out []codeDiff
	for _, s := range []struct {
		name string
		b, a []string
	}{{"deny", before.Deny, after.Deny}, {"warn", before.Warn, after.Warn}} {
		for _, c := range s.a {
			if !slices.Contains(s.b, c) {
				out = append(out, codeDiff{c, s.name + " added"})
			}
		}
		for _, c := range s.b {
			if !slices.Contains(s.a, c) {
				out = append(out, codeDiff{c, s.name + " removed"})
			}
		}
	}
	return out
}

// erasedUnder are the erased pointers at or under root ("/input").
func erasedUnder(erased []string, root string) []string {
	var out []string
	for _, p := range erased {
		if p == root || strings.HasPrefix(p, root+"/") {
			out = append(out, p)
		}
	}
	return out
}

// overlapping are the read paths that hold, or are held by, an erased one.
// An erased array index shifts the elements after it, so it stands for any
// index of its array.
func overlapping(erased, read []string) []string {
	var out []string
	for _, r := range read {
		rs := segments(r)
		for _, e := range erased {
			if prefixMatch(segments(e), rs) {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

// prefixMatch says whether one of the paths is a prefix of the other, an
// index of erased matching any key.
func prefixMatch(erased, read []string) bool {
	for i := range min(len(erased), len(read)) {
		if erased[i] != read[i] && !isIndex(erased[i]) {
			return false
		}
	}
	return true
}

func isIndex(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n >= 0 && strconv.Itoa(n) == s
}

// segments splits a pointer into its keys as the mask reads it; a key that
// does not unescape is compared as written.
func segments(p string) []string {
	parts, _ := decisionlog.Segments(p)
	return parts
}
