package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/deterministic-exec/des/internal/statedir"
	"github.com/deterministic-exec/des/internal/testrun"
)

const evidenceDoc = `Lists the test runs des saw: each Bash call whose command ran a test runner
of data.des.evidence.test_runners, recorded at PostToolUse or
PostToolUseFailure in the project's evidence directory (per-user state,
outside the sandbox's reach), each line attested with a key only des holds.
The runs are grouped per iSDLC phase, nWave step and phase, and task graph
phase they belong to (a run outside all of them is in the group "none"), with
how many passed, failed or were inconclusive, and the last one. Lines that
do not attest (forged, replayed) are counted apart and never in a group.
Then what else des saw in iSDLC phases: a person's approval of escalated
tests, the user's replies, the subagents that stopped (and the constitutional
verdict their last message states). Exit 0, or 2 when the evidence cannot be
read.`

// evidenceGroup is one group of test runs as --json prints it.
type evidenceGroup struct {
	Kind         string          `json:"kind"` // isdlc_phase, nwave_step, task_phase or none
	Name         string          `json:"name"` // the phase; the step file and its phase for nwave_step
	StepFile     string          `json:"step_file,omitempty"`
	StepPhase    string          `json:"step_phase,omitempty"`
	Runs         int             `json:"runs"`
	Passed       int             `json:"passed"`
	Failed       int             `json:"failed"`
	Inconclusive int             `json:"inconclusive"`
	Last         *testrun.Record `json:"last"`
}

// evidenceJSON is what --json prints.
type evidenceJSON struct {
	testrun.Report
	Groups []*evidenceGroup `json:"groups"`
	Runs   []testrun.Record `json:"runs"`
	// Observations are the other records of an iSDLC workflow's phases:
	// a person's approval of escalated tests (event EscalationApproved),
	// a user's reply (UserReply), a subagent that stopped (PhaseAgentStopped).
	Observations []testrun.Record `json:"observations"`
}

func runEvidence(ctx context.Context, e env, args []string) int {
	fs := newFlagSet(e, "evidence", "[--json]", evidenceDoc)
	asJSON := fs.Bool("json", false, "print JSON: the counts, the groups and every attested run")
	if code, done := parseFlags(fs, args, 0); done {
		return code
	}
	root := commandRoot(ctx, e.lookupEnv)
	seen, rep, err := testrun.StoreOf(statedir.For(root, e.lookupEnv)).Read()
	if err != nil {
		fmt.Fprintf(e.stderr, "des-hook evidence: %v\n", err)
		return exitUsage
	}
	out := evidenceJSON{Report: rep, Groups: []*evidenceGroup{}, Runs: []testrun.Record{}, Observations: []testrun.Record{}}
	index := map[[3]string]*evidenceGroup{}
	add := func(kind, name, stepFile, stepPhase string, r testrun.Record) {
		k := [3]string{kind, name, stepPhase}
		g := index[k]
		if g == nil {
			g = &evidenceGroup{Kind: kind, Name: name, StepFile: stepFile, StepPhase: stepPhase}
			index[k] = g
			out.Groups = append(out.Groups, g)
		}
		g.Runs++
		switch r.Result {
		case testrun.Passed:
			g.Passed++
		case testrun.Failed:
			g.Failed++
		default:
			g.Inconclusive++
		}
		g.Last = &r
	}
	for _, s := range seen {
		if !s.Attested {
			continue
		}
		r, b := s.Record, s.Record.Belongs
		if !testrun.IsRun(r) {
			out.Observations = append(out.Observations, r)
			continue
		}
		out.Runs = append(out.Runs, r)
		grouped := false
		if b.ISDLCPhase != "" {
			add("isdlc_phase", b.ISDLCPhase, "", "", r)
			grouped = true
		}
		if b.StepFile != "" {
			name := b.StepFile
			if b.StepPhase != "" {
				name += " " + b.StepPhase
			}
			add("nwave_step", name, b.StepFile, b.StepPhase, r)
			grouped = true
		}
		if b.TaskPhase != "" {
			add("task_phase", b.TaskPhase, "", "", r)
			grouped = true
		}
		if !grouped {
			add("none", "", "", "", r)
		}
	}
	if *asJSON {
		return writeJSON(e, "evidence", out)
	}
	if len(out.Runs) == 0 {
		fmt.Fprintln(e.stdout, "no test runs recorded")
	} else {
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "KIND\tNAME\tRUNS\tPASSED\tFAILED\tINCONCLUSIVE\tLAST\tLAST RESULT\tLAST COMMAND")
		for _, g := range out.Groups {
			name := g.Name
			if name == "" {
				name = "-"
			}
			last := g.Last.Result
			if g.Last.Failed != nil {
				last = fmt.Sprintf("%s (%d failed)", last, *g.Last.Failed)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\n", g.Kind, name, g.Runs, g.Passed, g.Failed, g.Inconclusive,
				g.Last.Time.UTC().Format(time.RFC3339), last, oneLine(g.Last.Command, 60))
		}
		if err := tw.Flush(); err != nil {
			fmt.Fprintf(e.stderr, "des-hook evidence: %v\n", err)
			return exitUsage
		}
	}
	if len(out.Observations) > 0 {
		fmt.Fprintln(e.stdout)
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PHASE\tTIME\tOBSERVED")
		for _, r := range out.Observations {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Belongs.ISDLCPhase, r.Time.UTC().Format(time.RFC3339), observationText(r))
		}
		if err := tw.Flush(); err != nil {
			fmt.Fprintf(e.stderr, "des-hook evidence: %v\n", err)
			return exitUsage
		}
	}
	if rep.NotAttested > 0 {
		fmt.Fprintf(e.stdout, "%d line(s) of the evidence do not attest (not written by des, or replayed): not counted\n", rep.NotAttested)
	}
	if rep.Breaks > 0 {
		fmt.Fprintf(e.stdout, "%d gap(s) in the chain: lines des wrote were removed\n", rep.Breaks)
	}
	return exitOK
}

// oneLine is s on one line, cut to n runes.
func oneLine(s string, n int) string {
	r := []rune(s)
	for i, c := range r {
		if c == '\n' || c == '\r' || c == '\t' {
			r[i] = ' '
		}
	}
	if len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return string(r)
}

// observationText says what an observation of a workflow phase was.
func observationText(r testrun.Record) string {
	switch r.Event {
	case testrun.EventApproval:
		if r.Command != "" {
			return "a person approved going on past escalated tests: " + oneLine(r.Command, 60)
		}
		return "a person approved going on past escalated tests"
	case testrun.EventUserReply:
		return "the user replied (" + r.Runner + ")"
	case testrun.EventAgentStop:
		if r.Result != "" {
			return fmt.Sprintf("subagent %s stopped, stating constitutional %s", r.AgentType, r.Result)
		}
		return fmt.Sprintf("subagent %s stopped", r.AgentType)
	}
	return r.Event
}
