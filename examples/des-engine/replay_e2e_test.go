package main

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/internal/decisionlog"
	"github.com/deterministic-exec/des/internal/opatest"
	"github.com/deterministic-exec/des/internal/replay"
	"github.com/deterministic-exec/des/internal/testenv"
)

// Tighten: a team rule that sends software-crafter's steps through
// review first; loosen: an exception for Gate 1's missing phase.
const (
	replayTighten = `package des.gates.pre_invocation

deny contains {"code": "TEAM-CRAFTER-REVIEW", "msg": "software-crafter's steps are reviewed first"} if {
	input.call.subagent_type == "software-crafter"
}
`
	replayLoosen = `package des.gates.pre_invocation

exception contains "DES-PHASE-MISSING"

exception contains "DES-SECTION-MISSING"
`
)

// replayJSON is `des-hook replay --json`'s output.
type replayJSON struct {
	DecisionPoint string `json:"decision_point"`
	replay.Report
}

// replayProject runs real hook events in a Gate 1 project with the decision
// log at its defaults: Gate 1 denies an incomplete prompt, a write to the
// settings is denied, a complete prompt passes. It returns the project and
// the decision ids by what they decided.
func replayProject(t *testing.T, env ...string) (root string, ids map[string]string) {
	t.Helper()
	raw, err := os.ReadFile("testdata/gate1-incomplete-prompt.json")
	if err != nil {
		t.Fatal(err)
	}
	root = gate1Project(t, "TODO")
	if reason := denyReason(t, runHookProcess(t, root, env, raw)); !strings.Contains(reason, "DES-PHASE-MISSING") {
		t.Fatalf("Gate 1: reason %q", reason)
	}
	if reason := denyReason(t, runHookProcess(t, root, env, writeEvent(root, "Edit", ".des/config.json"))); !strings.Contains(reason, "DES-PROTECTED-PATH") {
		t.Fatalf("settings write: reason %q", reason)
	}
	if reason := denyReason(t, runHookProcess(t, root, env, agentEvent(root, "Agent", renderPrompt(t, "execute-step")))); reason != "" {
		t.Fatalf("complete prompt: reason %q", reason)
	}
	ids = map[string]string{}
	for rec, err := range decisionlog.Events(filepath.Join(root, ".des/decisions")) {
		if err != nil {
			t.Fatal(err)
		}
		in, _ := (*rec.Input).(map[string]any)
		switch {
		case rec.Path == "des/gates/pre_invocation":
			if ids["gate1"] == "" {
				ids["gate1"] = rec.DecisionID // the first: the incomplete prompt
			} else {
				ids["complete"] = rec.DecisionID
			}
		case rec.Path == "des/gates/tool_use":
			writes, _ := in["writes"].([]any)
			for _, w := range writes {
				p, _ := w.(map[string]any)["path"].(string)
				ids[p] = rec.DecisionID
			}
		}
	}
	for _, k := range []string{"gate1", ".des/config.json", "complete"} {
		if ids[k] == "" {
			t.Fatalf("no recorded decision for %s: %v", k, ids)
		}
	}
	return root, ids
}

func runReplayJSON(t *testing.T, root string, env envMap, wantCode int, args ...string) replayJSON {
	t.Helper()
	if env == nil {
		env = envMap{}
	}
	env["CLAUDE_PROJECT_DIR"] = root
	r := runCLI(t, env, append([]string{"replay", "--json"}, args...)...)
	if r.code != wantCode {
		t.Fatalf("replay %v: exit %d, want %d\nstdout %s\nstderr %s", args, r.code, wantCode, r.stdout, r.stderr)
	}
	var out replayJSON
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("replay --json output: %v\n%s", err, r.stdout)
	}
	return out
}

// Decisions recorded by real hook runs, replayed: with the project's own
// policies nothing changes; a tightened rule flips exactly the write to
// src/; a loosened one, exactly Gate 1's deny; and the replay records
// nothing at all.
func TestE2EReplayTightenLoosen(t *testing.T) {
	t.Parallel()
	root, ids := replayProject(t)
	before := snapshot(t, filepath.Join(root, ".des"))
	// The replays below run with a state directory of their own, which
	// must stay empty: no witness, no attestation, no installation id.
	state := t.TempDir()
	t.Cleanup(func() {
		if entries, _ := os.ReadDir(state); len(entries) != 0 {
			t.Errorf("a replay wrote to the state directory: %v", entries)
		}
	})

	same := runReplayJSON(t, root, envMap{"DES_STATE_DIR": state}, 0, "--fail-on-change")
	if same.Replayed != 3 || same.Unchanged != 3 || len(same.Changed) != 0 || len(same.Masked) != 0 || len(same.Skipped) != 0 {
		t.Fatalf("replay with the project's policies: %+v", same.Report)
	}

	tight := t.TempDir()
	writeFile(t, tight, "team.rego", replayTighten)
	got := runReplayJSON(t, root, envMap{"DES_STATE_DIR": state}, 1, "--policies", tight, "--fail-on-change")
	kinds := map[string]string{}
	for _, c := range got.Changed {
		kinds[c.DecisionID] = c.Kind
		if !slices.Contains(c.After.Deny, "TEAM-CRAFTER-REVIEW") {
			t.Errorf("tightened: %s denied by %v", c.DecisionID, c.After.Deny)
		}
	}
	if len(kinds) != 2 || kinds[ids["complete"]] != replay.KindNewlyDenied || kinds[ids["gate1"]] != replay.KindCodesChanged {
		t.Fatalf("tightened: changed %v, want %s newly denied and %s with a code more", kinds, ids["complete"], ids["gate1"])
	}
	if g := got.Groups; len(g) != 1 || g[0].Gate != "pre_invocation" || g[0].Code != "TEAM-CRAFTER-REVIEW" || g[0].Change != "deny added" || g[0].Count != 2 ||
		!slices.Equal(g[0].Examples, []string{ids["gate1"], ids["complete"]}) {
		t.Errorf("tightened: groups %+v", got.Groups)
	}

	loose := t.TempDir()
	writeFile(t, loose, "team.rego", replayLoosen)
	got = runReplayJSON(t, root, nil, 0, "--policies", loose)
	if len(got.Changed) != 1 || got.Changed[0].DecisionID != ids["gate1"] || got.Changed[0].Kind != replay.KindNoLongerDenied ||
		!slices.Equal(got.Changed[0].After.Waived, []string{"DES-PHASE-MISSING", "DES-SECTION-MISSING"}) {
		t.Fatalf("loosened: changed %+v, want only %s no longer denied", got.Changed, ids["gate1"])
	}

	// Filters: a gate, a code, a time range that holds nothing.
	if got := runReplayJSON(t, root, nil, 0, "--policies", tight, "--gate", "tool_use"); got.Replayed != 1 || len(got.Changed) != 0 {
		t.Errorf("--gate tool_use: %+v", got.Report)
	}
	if got := runReplayJSON(t, root, nil, 0, "--policies", tight, "--code", "DES-PROTECTED-PATH", "--fail-on-change"); got.Replayed != 1 || len(got.Changed) != 0 {
		t.Errorf("--code DES-PROTECTED-PATH: %+v", got.Report)
	}
	if got := runReplayJSON(t, root, nil, 1, "--policies", tight, "--code", "TEAM-CRAFTER-REVIEW", "--fail-on-change"); got.Replayed != 2 || len(got.Changed) != 2 {
		t.Errorf("--code TEAM-CRAFTER-REVIEW: %+v", got.Report)
	}
	if got := runReplayJSON(t, root, nil, 0, "--policies", tight, "--to", "2000-01-01"); got.Replayed != 0 {
		t.Errorf("--to 2000-01-01: %+v", got.Report)
	}

	// Through the built binary, as a team's CI runs it: the same change,
	// exit 1 with --fail-on-change.
	if r := runIn(t, root, []string{"CLAUDE_PROJECT_DIR=" + root, "DES_STATE_DIR=" + state}, "replay", "--policies", tight, "--fail-on-change"); r.code != 1 || !strings.Contains(r.stdout, "2 changed (1 newly denied") {
		t.Errorf("des-hook replay --fail-on-change: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// The text output names the change, its gate and code, and the decision.
	r := runCLI(t, envMap{"CLAUDE_PROJECT_DIR": root}, "replay", "--policies", tight)
	for _, want := range []string{"3 decisions decided again in process", "2 changed (1 newly denied", "TEAM-CRAFTER-REVIEW", "deny added", ids["complete"]} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("replay text output lacks %q (exit %d):\n%s%s", want, r.code, r.stdout, r.stderr)
		}
	}

	if after := snapshot(t, filepath.Join(root, ".des")); !maps.Equal(before, after) {
		for p := range after {
			if before[p] != after[p] {
				t.Errorf("replay changed %s", p)
			}
		}
		t.Fatal("a replay recorded something")
	}
}

// A decision whose input was masked where the policies read is listed as
// masked, never decided on a guess; the rest are replayed.
func TestE2EReplayMasked(t *testing.T) {
	t.Parallel()
	root, ids := replayProject(t, "DES_DECISION_LOG_MASK=/input/call/prompt,/input/command")
	tight := t.TempDir()
	writeFile(t, tight, "team.rego", replayTighten)
	got := runReplayJSON(t, root, nil, 0, "--policies", tight, "--fail-on-change")
	var masked []string
	for _, m := range got.Masked {
		masked = append(masked, m.DecisionID)
		if !slices.Contains(m.Read, "/input/call/prompt") || !slices.Contains(m.Erased, "/input/call/prompt") {
			t.Errorf("masked %+v: want erased and read at /input/call/prompt", m)
		}
	}
	slices.Sort(masked)
	want := []string{ids["gate1"], ids["complete"]}
	slices.Sort(want)
	if !slices.Equal(masked, want) {
		t.Fatalf("masked %v, want both Agent calls %v", masked, want)
	}
	if got.Replayed != 1 || len(got.Changed) != 0 {
		t.Errorf("the unmasked decision: %+v", got.Report)
	}
	r := runCLI(t, envMap{"CLAUDE_PROJECT_DIR": root}, "replay")
	if r.code != 0 || !strings.Contains(r.stdout, "2 masked") || !strings.Contains(r.stdout, "decision_log_mask") {
		t.Errorf("text output:\n%s%s", r.stdout, r.stderr)
	}
}

// Bad input to replay: a clear error naming the flag, exit 2; a project
// with no decisions says where it looked.
func TestReplayErrors(t *testing.T) {
	t.Parallel()
	root := newTestProject(t)
	env := envMap{"CLAUDE_PROJECT_DIR": root}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--from", "last week"}, `--from: "last week" is not a time`},
		{[]string{"--gate", "nope"}, `--gate "nope": not a gate`},
		{[]string{"--policies", filepath.Join(root, "missing")}, "missing"},
	} {
		r := runCLI(t, env, append([]string{"replay"}, c.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("replay %v: exit %d, stderr %q; want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
	bad := t.TempDir()
	writeFile(t, bad, "team.rego", "package des.gates.tool_use\n\ndeny contains x if {\n")
	if r := runCLI(t, env, "replay", "--policies", bad); r.code != 2 || !strings.Contains(r.stderr, "team.rego:") {
		t.Errorf("a candidate that does not parse: exit %d, stderr %q", r.code, r.stderr)
	}
	r := runCLI(t, env, "replay")
	if r.code != 0 || !strings.Contains(r.stdout, "no recorded decisions in "+filepath.Join(root, ".des/decisions")) {
		t.Errorf("no decisions: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// Through a real OPA server: the project's decision point is opa_url, and
// the server holds the tightened policies; the replay asks it.
func TestE2EReplayOnOPAServer(t *testing.T) {
	t.Parallel()
	testenv.Long(t)
	root, ids := replayProject(t)
	team := t.TempDir()
	writeFile(t, team, "team.rego", replayTighten)
	srv := opatest.Start(t, opatest.Options{}, "../../rego", team)
	got := runReplayJSON(t, root, envMap{"DES_OPA_URL": srv.URL}, 1, "--fail-on-change")
	if got.DecisionPoint != srv.URL || len(got.Changed) != 2 || got.Changed[1].DecisionID != ids["complete"] ||
		!slices.Equal(got.Changed[1].After.Deny, []string{"TEAM-CRAFTER-REVIEW"}) {
		t.Fatalf("on the OPA server: %+v", got)
	}
}
