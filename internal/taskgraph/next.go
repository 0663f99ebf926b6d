package taskgraph

import (
	"fmt"
	"strings"
)

// What the orchestrator should do after a phase's stop (Next.Kind).
const (
	NextVerify      = "verify"      // delegate the verification phase(s) of the completed phase now
	NextWave        = "wave"        // a new wave is current: delegate its phases
	NextReimplement = "reimplement" // a verification failed: delegate the verified phase again, then its verification
	NextEscalate    = "escalate"    // the verified phase failed verification max_retries times: the user must decide
	NextRetry       = "retry"       // the phase failed (not a verification verdict): fix the cause and delegate it again
	NextWait        = "wait"        // other phases of the current wave are not completed yet
	NextComplete    = "complete"    // every wave is done
	NextUnknown     = "unknown"     // the phase is not in the graph
)

// Next is what the orchestrator should run after phase Phase stopped.
type Next struct {
	Kind    string
	Phase   string   // the phase that stopped
	Status  string   // its status now
	Wave    int      // current_wave
	Run     []string // phases to delegate now, in order (Verify, Wave, Reimplement, Retry)
	Waiting []string // phases of the current wave not completed, as "id (status…)" (Wait)
	Later   []string // verification phases of Phase that run in a later wave (Wait)
	// Verified is the phase a failed verification concerns (Reimplement,
	// Escalate), with its retries and the graph's max_retries.
	Verified            string
	Retries, MaxRetries int
	Parallel            bool // the wave of Run runs its phases in parallel
}

// NextAfter reads the graph as it stands after phase phaseID stopped (as
// Sync leaves it) and says what to run next.
func NextAfter(g *Graph, phaseID string) Next {
	n := Next{Phase: phaseID, Wave: g.CurrentWave, MaxRetries: g.MaxRetries}
	p, ok := g.Phase(phaseID)
	if !ok {
		n.Kind = NextUnknown
		return n
	}
	n.Status = p.Status
	if p.Status == StatusFailed {
		if p.Type == TypeVerification && p.VerifiesPhaseID != "" {
			if v, ok := g.Phase(p.VerifiesPhaseID); ok {
				n.Verified, n.Retries = v.PhaseID, v.Retries
				if v.Retries >= g.MaxRetries {
					n.Kind = NextEscalate
					return n
				}
				n.Kind = NextReimplement
				if v.Status != StatusCompleted {
					n.Run = append(n.Run, v.PhaseID)
				}
				n.Run = append(n.Run, p.PhaseID)
				return n
			}
		}
		n.Kind, n.Run = NextRetry, []string{p.PhaseID}
		return n
	}
	if g.Complete() {
		n.Kind = NextComplete
		return n
	}
	cur := g.Waves[g.CurrentWave]
	var later []string
	for _, v := range g.verifiers(p.PhaseID) {
		switch {
		case v.Status == StatusCompleted:
		case v.Wave == g.CurrentWave:
			n.Run = append(n.Run, v.PhaseID)
		case v.Wave > g.CurrentWave:
			later = append(later, v.PhaseID)
		}
	}
	// Right after the wave sync the new wave has not started: all of it is
	// to run, the verification of this phase among it.
	if p.Wave < g.CurrentWave && notStarted(cur) {
		n.Kind, n.Parallel, n.Run = NextWave, cur.ParallelExecution, nil
		for _, q := range cur.Phases {
			n.Run = append(n.Run, q.PhaseID)
		}
		return n
	}
	if len(n.Run) > 0 {
		n.Kind = NextVerify
		return n
	}
	n.Kind, n.Later = NextWait, later
	for _, q := range cur.Phases {
		if q.Status == StatusCompleted {
			continue
		}
		w := q.PhaseID + " (" + q.Status
		// A verification that failed waits for the re-implementation.
		if v, ok := g.Phase(q.VerifiesPhaseID); ok && q.Type == TypeVerification && q.Status == StatusFailed && v.Status != StatusCompleted {
			w += "; " + v.PhaseID + " is to be implemented again first"
		}
		n.Waiting = append(n.Waiting, w+")")
	}
	return n
}

// notStarted: every phase of the wave is pending, as a wave is right after
// it became current.
func notStarted(w Wave) bool {
	for _, p := range w.Phases {
		if p.Status != StatusPending {
			return false
		}
	}
	return true
}

// String is the advice for the orchestrator (Claude Code's
// additionalContext): short, with the exact phase ids and the prompt line
// that names each. It is "" for NextUnknown.
func (n Next) String() string {
	var b strings.Builder
	b.WriteString("Task graph: ")
	switch n.Kind {
	case NextVerify:
		fmt.Fprintf(&b, "phase %s is completed. Delegate its verification now: %s.", n.Phase, lines(n.Run))
	case NextWave:
		how := "one at a time, in this order"
		if n.Parallel {
			how = "in parallel"
		}
		fmt.Fprintf(&b, "wave %d is now current. Delegate its phases (%s): %s.", n.Wave, how, lines(n.Run))
	case NextReimplement:
		fmt.Fprintf(&b, "verification %s FAILED phase %s (failed verifications: %d of max_retries %d). ", n.Phase, n.Verified, n.Retries, n.MaxRetries)
		if len(n.Run) == 2 {
			fmt.Fprintf(&b, "Delegate %s again with the verifier's findings (%s), then %s again (%s).", n.Run[0], line(n.Run[0]), n.Run[1], line(n.Run[1]))
		} else {
			fmt.Fprintf(&b, "Delegate %s again (%s).", n.Phase, line(n.Phase))
		}
	case NextEscalate:
		fmt.Fprintf(&b, "verification %s FAILED phase %s, which has now failed verification %d times (max_retries %d). Do not delegate %s again: stop and ask the user how to proceed, with the verification reports.", n.Phase, n.Verified, n.Retries, n.MaxRetries, n.Verified)
	case NextRetry:
		fmt.Fprintf(&b, "phase %s FAILED. Fix the cause and delegate it again (%s), or ask the user.", n.Phase, line(n.Phase))
	case NextWait:
		if len(n.Waiting) > 0 {
			fmt.Fprintf(&b, "phase %s is %s. Wave %d is not complete: %s.", n.Phase, n.Status, n.Wave, strings.Join(n.Waiting, ", "))
		} else {
			fmt.Fprintf(&b, "phase %s is %s. Wave %d is current.", n.Phase, n.Status, n.Wave)
		}
		if len(n.Later) > 0 {
			fmt.Fprintf(&b, " Its verification (%s) runs in a later wave.", strings.Join(n.Later, ", "))
		}
	case NextComplete:
		fmt.Fprintf(&b, "phase %s is %s; the plan is complete (every phase of every wave is completed).", n.Phase, n.Status)
	default:
		return ""
	}
	return b.String()
}

func line(id string) string { return "prompt line `Phase ID: " + id + "`" }

func lines(ids []string) string {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = id + " (" + line(id) + ")"
	}
	return strings.Join(parts, ", ")
}
