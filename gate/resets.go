package gate

import (
	"context"

	"github.com/deterministic-exec/des/audit"
)

// Gate2Resets are the phases Gate 2 said must be done again when it failed
// stepFile (reset_phases of its SUBAGENT_STOP_VALIDATION): besides
// unfinished phases, those it found finished around the write guard or
// without an outcome or a reason. Only a failure that is still the step's
// latest verdict counts: a later pass or resolution settles it, when DES
// recorded it (an attested line, as Gate 3 takes it). The failures Gate 2
// kept in evidenceDir count as well: sandboxed Bash may take a failure's
// line out of the trail. `des-hook stale --resolve` and Gate 1, restarting
// a FAILED task, reset them. unsettled says whether such a failure is the
// step's latest verdict (what Gate 3 refuses to commit).
func Gate2Resets(ctx context.Context, log *audit.Log, evidenceDir, stepFile string) (phases []string, unsettled bool, err error) {
	entries, err := gate2Verdicts(ctx, log, evidenceDir, audit.Query{StepFile: stepFile, Events: gate2Events()}, map[string]bool{stepFile: true})
	if err != nil {
		return nil, false, err
	}
	for i := len(entries) - 1; i >= 0; i-- {
		f := entries[i].Fields
		if entries[i].Event == audit.SubagentStopValidation && f["outcome"] == "NO_OPINION" {
			continue
		}
		if entries[i].Event != audit.SubagentStopValidation || f["outcome"] != "FAIL" {
			if !entries[i].Attested {
				continue // not DES's line: it settles nothing
			}
			return nil, false, nil
		}
		return stringList(f["reset_phases"]), true, nil
	}
	return nil, false, nil
}
