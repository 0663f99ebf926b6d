package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/deterministic-exec/des"
)

const escalationsDoc = `Lists the escalations of the phase workflow guards: the
PHASE_ESCALATION entries of the audit trail (a gate, an iteration corridor or a
constitutional validation that blocked an advancement), grouped by type and
phase, with how many were recorded (at most one a minute), when first and
last, and their codes. Without --all only the open ones: those whose phase is
still the current phase of the workflow state and out of which no advancement
was allowed since (an allowed advancement closes them: OPEN says when; blocked
again, they are open again). Exit 0, or 2 when the trail or the settings cannot
be read.

des-hook escalations approve [--reason TEXT] [PHASE] records that you approve
going on past PHASE (the current phase by default) although des escalated its
test iterations (the same failure repeated, or the maximum reached): the gate
then lets the workflow advance. Refused inside an agent's tool call: run it in a
terminal of your own.`

// escalationJSON is one group as --json prints it.
type escalationJSON struct {
	Type  string    `json:"type"`
	Phase string    `json:"phase"`
	Count int       `json:"count"`
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	Codes []string  `json:"codes"`
	Open  bool      `json:"open"`
	// Advanced: when an advancement out of the phase was allowed after
	// the escalation, which closed it.
	Advanced *time.Time `json:"advanced,omitempty"`
}

func runEscalations(ctx context.Context, e env, args []string) int {
	if len(args) > 0 && args[0] == "approve" {
		return runApproveEscalation(ctx, e, args[1:])
	}
	fs := newFlagSet(e, "escalations", "[--all] [--json]", escalationsDoc)
	all := fs.Bool("all", false, "list every escalation, not only the open ones")
	asJSON := fs.Bool("json", false, "print JSON")
	if code, done := parseFlags(fs, args, 0); done {
		return code
	}
	root := commandRoot(ctx, e.lookupEnv)
	eng, err := hookEngine(ctx, e, root)
	if err != nil {
		fmt.Fprintf(e.stderr, "des-hook escalations: %v\n", err)
		return exitUsage
	}
	// The current directory chooses the monorepo project, as the event's
	// cwd does in hook mode.
	cwd, _ := os.Getwd()
	groups, err := eng.Escalations(ctx, cwd, *all)
	if err != nil {
		fmt.Fprintf(e.stderr, "des-hook escalations: %v\n", err)
		return exitUsage
	}
	if *asJSON {
		out := make([]escalationJSON, len(groups))
		for i, g := range groups {
			out[i] = escalationJSON{Type: g.Type, Phase: g.Phase, Count: g.Count, First: g.First.UTC(), Last: g.Last.UTC(), Codes: g.Codes, Open: g.Open}
			if !g.Advanced.IsZero() {
				at := g.Advanced.UTC()
				out[i].Advanced = &at
			}
		}
		return writeJSON(e, "escalations", out)
	}
	if len(groups) == 0 {
		if *all {
			fmt.Fprintln(e.stdout, "no escalations recorded")
		} else {
			fmt.Fprintln(e.stdout, "no open escalations")
		}
		return exitOK
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tPHASE\tCOUNT\tFIRST\tLAST\tCODES\tOPEN")
	for _, g := range groups {
		open := "no"
		switch {
		case g.Open:
			open = "yes"
		case !g.Advanced.IsZero():
			open = "no (advanced " + g.Advanced.UTC().Format(time.RFC3339) + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\n", g.Type, g.Phase, g.Count,
			g.First.UTC().Format(time.RFC3339), g.Last.UTC().Format(time.RFC3339), strings.Join(g.Codes, ","), open)
	}
	if err := tw.Flush(); err != nil {
		fmt.Fprintf(e.stderr, "des-hook escalations: %v\n", err)
		return exitUsage
	}
	return exitOK
}

const approveDoc = `Records that you, a person, approve going on past PHASE (the workflow's current
phase by default) although des escalated its test iterations from the test runs
it saw (the circuit breaker: the same failure repeated; or the maximum of
iterations reached). The approval is kept in des's evidence, outside the
project, with --reason; it covers this escalation, not a later one. des then
writes escalation_approved into the workflow state, and the gate lets the
workflow advance past the phase. Refused inside an agent's tool call. Exit 0;
1 when there is no escalation to approve; 2 when refused or on an error.`

// runApproveEscalation is des-hook escalations approve.
func runApproveEscalation(ctx context.Context, e env, args []string) int {
	fs := newFlagSet(e, "escalations approve", "[--reason TEXT] [PHASE]", approveDoc)
	reason := fs.String("reason", "", "why you approve (kept with the approval)")
	if code, done := parseFlags(fs, args, -1); done {
		return code
	}
	if fs.NArg() > 1 {
		fmt.Fprintf(e.stderr, "des-hook escalations approve: one phase at most, got %q\n", fs.Args())
		return exitUsage
	}
	root := commandRoot(ctx, e.lookupEnv)
	if refuseAgentCall(e, "des-hook escalations approve", root, time.Now()) {
		return exitUsage
	}
	eng, err := hookEngine(ctx, e, root)
	if err != nil {
		fmt.Fprintf(e.stderr, "des-hook escalations approve: %v\n", err)
		return exitUsage
	}
	cwd, _ := os.Getwd()
	upd, err := eng.ApproveTestEscalation(ctx, cwd, fs.Arg(0), *reason)
	if errors.Is(err, des.ErrNothingToApprove) {
		fmt.Fprintf(e.stderr, "des-hook escalations approve: %v\n", err)
		return exitFail
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "des-hook escalations approve: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(e.stdout, "approved: the escalated tests of %s; des wrote escalation_approved into %s\n", upd.Phase, upd.StateFile)
	return exitOK
}
