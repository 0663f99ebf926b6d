package replay_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/deterministic-exec/des/internal/decisionlog"
	"github.com/deterministic-exec/des/internal/replay"
	"github.com/deterministic-exec/des/policy"
)

// engine decides with a real policy engine at the recorded time.
type engine struct{ *policy.Engine }

func (e engine) Replay(ctx context.Context, g policy.Gate, input any, at time.Time) (policy.Decision, error) {
	return e.Eval(ctx, g, input, policy.At(at))
}

func newEngine(t *testing.T, rego string) engine {
	t.Helper()
	pe, err := policy.New(t.Context(), policy.WithoutBuiltin(), policy.WithFS("team", fstest.MapFS{"team.rego": {Data: []byte(rego)}}))
	if err != nil {
		t.Fatal(err)
	}
	return engine{pe}
}

const candidate = `package des.gates.tool_use

deny contains {"code": "T-BIG", "msg": "too big"} if input.size > 3

deny contains {"code": "T-SECRET", "msg": "secret"} if input.secret == "x"

warn contains {"code": "T-W", "msg": "late"} if time.now_ns() > time.parse_rfc3339_ns("2026-11-25T00:00:00Z")

exception contains "T-WAIVED"

deny contains {"code": "T-WAIVED", "msg": "waived"} if input.waive
`

func record(t *testing.T, dir string, at time.Time, input map[string]any, erase []string, deny, warn []string, exception ...string) string {
	t.Helper()
	list := func(codes []string) []any {
		out := []any{}
		for _, c := range codes {
			out = append(out, map[string]any{"code": c, "msg": c})
		}
		return out
	}
	result := map[string]any{"deny": list(deny), "warn": list(warn)}
	if exception != nil {
		result["exception"] = []any{exception[0]}
	}
	in, _ := decisionlog.Document(input)
	res, _ := decisionlog.Document(result)
	id, _ := decisionlog.NewDecisionID()
	l := decisionlog.Open(dir, decisionlog.Options{Mask: erase, MaxBytes: 1 << 30})
	if err := l.Append(decisionlog.Event{DecisionID: id, Path: "des/gates/tool_use", Input: in, Result: res, Timestamp: at}); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestRun(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "decisions")
	day := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	same := record(t, dir, day, map[string]any{"size": 2}, nil, nil, nil)
	tightened := record(t, dir, day, map[string]any{"size": 5}, nil, nil, nil)
	loosened := record(t, dir, day, map[string]any{"size": 1}, nil, []string{"T-OLD"}, nil)
	clock := record(t, dir, day.Add(48*time.Hour), map[string]any{"size": 1}, nil, nil, nil)
	waived := record(t, dir, day, map[string]any{"size": 1, "waive": true}, nil, []string{"T-WAIVED"}, nil, "T-WAIVED")
	masked := record(t, dir, day, map[string]any{"size": 1, "secret": "x"}, []string{"/input/secret"}, nil, nil)
	unread := record(t, dir, day, map[string]any{"size": 1, "other": "x"}, []string{"/input/other"}, nil, nil)

	e := newEngine(t, candidate)
	rep, err := replay.Run(t.Context(), decisionlog.Events(dir), replay.Options{Decider: e, InputPaths: e.InputPaths})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, c := range rep.Changed {
		kinds[c.DecisionID] = c.Kind
	}
	want := map[string]string{tightened: replay.KindNewlyDenied, loosened: replay.KindNoLongerDenied, clock: replay.KindCodesChanged}
	if len(kinds) != len(want) {
		t.Errorf("changed %v, want %v", kinds, want)
	}
	for id, k := range want {
		if kinds[id] != k {
			t.Errorf("decision %s: %q, want %q", id, kinds[id], k)
		}
	}
	for _, id := range []string{same, waived, unread} {
		if _, ok := kinds[id]; ok {
			t.Errorf("decision %s changed: %q", id, kinds[id])
		}
	}
	if rep.Replayed != 6 || rep.Unchanged != 3 {
		t.Errorf("replayed %d, unchanged %d; want 6, 3", rep.Replayed, rep.Unchanged)
	}
	if len(rep.Masked) != 1 || rep.Masked[0].DecisionID != masked || !slices.Equal(rep.Masked[0].Read, []string{"/input/secret"}) {
		t.Errorf("masked %+v, want %s reading /input/secret", rep.Masked, masked)
	}
	var groups []string
	for _, g := range rep.Groups {
		groups = append(groups, g.Code+" "+g.Change)
		if g.Count != 1 || len(g.Examples) != 1 {
			t.Errorf("group %+v: want one decision", g)
		}
	}
	if !slices.Equal(groups, []string{"T-BIG deny added", "T-OLD deny removed", "T-W warn added"}) {
		t.Errorf("groups %v", groups)
	}

	// Filters: a code before or after, a time range.
	rep, err = replay.Run(t.Context(), decisionlog.Events(dir), replay.Options{Decider: e, InputPaths: e.InputPaths, Codes: []string{"T-OLD"}})
	if err != nil || rep.Replayed != 1 || len(rep.Changed) != 1 || rep.Changed[0].DecisionID != loosened {
		t.Errorf("--code T-OLD: %+v, %v", rep, err)
	}
	rep, err = replay.Run(t.Context(), decisionlog.Events(dir), replay.Options{Decider: e, InputPaths: e.InputPaths, From: day.Add(time.Hour)})
	if err != nil || rep.Replayed != 1 || rep.Changed[0].DecisionID != clock {
		t.Errorf("from a day later: %+v, %v", rep, err)
	}
	// Without knowing what the policies read, any erased input is masked.
	rep, err = replay.Run(t.Context(), decisionlog.Events(dir), replay.Options{Decider: e})
	if err != nil || len(rep.Masked) != 2 {
		t.Errorf("no InputPaths: masked %+v, %v", rep.Masked, err)
	}
}

// An input the policies fail on is skipped with the reason; a run of them
// stops the replay, naming the last decision.
func TestRunDecideError(t *testing.T) {
	t.Parallel()
	e := newEngine(t, `package des.gates.tool_use

deny contains {"code": "T-DIV", "msg": "x"} if to_number(input.word) > 0
`)
	dir := filepath.Join(t.TempDir(), "decisions")
	ok := record(t, dir, time.Now(), map[string]any{"word": "1"}, nil, []string{"T-DIV"}, nil)
	bad := record(t, dir, time.Now(), map[string]any{"word": "abc"}, nil, nil, nil)
	rep, err := replay.Run(t.Context(), decisionlog.Events(dir), replay.Options{Decider: e, InputPaths: e.InputPaths})
	if err != nil || rep.Replayed != 1 || rep.Failed != 1 || len(rep.Skipped) != 1 || rep.Skipped[0].DecisionID != bad ||
		!strings.Contains(rep.Skipped[0].Reason, "could not be decided") {
		t.Fatalf("one bad input: %+v, %v (good %s)", rep, err, ok)
	}
	var last string
	for range 9 { // with the one before: ten in a row
		last = record(t, dir, time.Now(), map[string]any{"word": "abc"}, nil, nil, nil)
	}
	_, err = replay.Run(t.Context(), decisionlog.Events(dir), replay.Options{Decider: e, InputPaths: e.InputPaths})
	if !errors.Is(err, replay.ErrDecide) || !strings.Contains(err.Error(), last) {
		t.Errorf("ten in a row: err = %v, want ErrDecide naming %s", err, last)
	}
}

// What the record does not hold whole is never decided on a guess: a result
// erased in part, an array with an element erased (the rest shifted), an
// input that is missing.
func TestRunIncompleteRecords(t *testing.T) {
	t.Parallel()
	e := newEngine(t, `package des.gates.tool_use

deny contains {"code": "T-SECOND", "msg": "x"} if input.list[1] == "b"
`)
	dir := filepath.Join(t.TempDir(), "decisions")
	at := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	result := record(t, dir, at, map[string]any{"list": []any{"a", "b"}}, []string{"/result/deny/0"}, []string{"T-SECOND"}, nil)
	shifted := record(t, dir, at, map[string]any{"list": []any{"a", "b", "c"}}, []string{"/input/list/0"}, []string{"T-SECOND"}, nil)
	id, _ := decisionlog.NewDecisionID()
	res, _ := decisionlog.Document(map[string]any{"deny": []any{}, "warn": []any{}})
	l := decisionlog.Open(dir, decisionlog.Options{MaxBytes: 1 << 30})
	if err := l.Append(decisionlog.Event{DecisionID: id, Path: "des/gates/tool_use", Result: res, Timestamp: at}); err != nil {
		t.Fatal(err)
	}
	rep, err := replay.Run(t.Context(), decisionlog.Events(dir), replay.Options{Decider: e, InputPaths: e.InputPaths})
	if err != nil || rep.Replayed != 0 || len(rep.Changed) != 0 {
		t.Fatalf("replayed %+v, %v: want none", rep, err)
	}
	if len(rep.Masked) != 1 || rep.Masked[0].DecisionID != shifted {
		t.Errorf("masked %+v, want %s (an element erased before the one read)", rep.Masked, shifted)
	}
	skipped := map[string]string{}
	for _, s := range rep.Skipped {
		skipped[s.DecisionID] = s.Reason
	}
	if !strings.Contains(skipped[result], "result was not kept whole") || !strings.Contains(skipped[id], "no input recorded") {
		t.Errorf("skipped %v", skipped)
	}
}
