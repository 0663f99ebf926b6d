package policy_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/policy"
)

// stableCodes are the codes users, team exceptions and scripts rely on,
// with each code's severity: renaming one, removing it or changing its
// severity breaks them. docs/reference.md documents each.
var stableCodes = map[string]policy.Severity{
	"DES-MARKER-INVALID": policy.Deny, "DES-STEPFILE-MISSING": policy.Deny, "DES-STEPFILE-OUTSIDE": policy.Deny,
	"DES-STEPFILE-SCHEMA": policy.Deny, "DES-STEPFILE-OBSOLETE": policy.Deny, "DES-SECTION-MISSING": policy.Deny,
	"DES-PHASE-MISSING": policy.Deny, "DES-TASK-TERMINAL": policy.Deny, "DES-TASK-TRANSITION": policy.Deny,
	"DES-STALE-WORK": policy.Deny, "DES-SAFETY-ROLLBACK": policy.Deny, "DES-SAFETY-PRODUCTION": policy.Deny,
	"DES-SAFETY-METADATA": policy.Warn, "DES-PHASE-ABANDONED": policy.Deny, "DES-SILENT-COMPLETION": policy.Deny,
	"DES-PHASE-NO-OUTCOME": policy.Deny, "DES-PHASE-INVALID-SKIP": policy.Deny, "DES-PHASE-JUMP": policy.Deny,
	"DES-PREMATURE-COMPLETION": policy.Deny, "DES-TURN-LIMIT": policy.Deny, "DES-TIMEOUT": policy.Deny,
	"DES-SCOPE-VIOLATION": policy.Warn, "DES-VERIFY-EVIDENCE": policy.Deny, "DES-VERIFY-DOCS": policy.Deny,
	"DES-VERIFY-ROLLBACK": policy.Deny, "DES-COMMIT-INCOMPLETE": policy.Deny, "DES-COMMIT-PHASE-OPEN": policy.Deny,
	"DES-COMMIT-OUTCOME": policy.Deny, "DES-COMMIT-SKIP-REASON": policy.Deny, "DES-COMMIT-DEFERRED": policy.Deny,
	"DES-COMMIT-GAP": policy.Deny, "DES-COMMIT-STATUS": policy.Deny, "DES-COMMIT-GATE2": policy.Deny,
	"DES-COMMIT-TASK-STATUS": policy.Deny,
	"DES-STATE-INVALID":      policy.Deny, "DES-STATE-V7-UNVERSIONED": policy.Deny, "DES-STATE-V7-STALE": policy.Deny,
	"DES-STATE-V8-INDEX": policy.Deny, "DES-STATE-V8-STATUS": policy.Deny, "DES-STATE-V1": policy.Warn,
	"DES-STATE-V2": policy.Warn, "DES-STATE-V3": policy.Warn, "DES-STATE-V9": policy.Warn,
	"DES-STATE-BASH-WRITE": policy.Deny, "DES-PROTECTED-PATH": policy.Deny, "DES-INTERNAL": policy.Deny,
	"DES-INTEGRITY": policy.Deny,
	// The phase workflow guards.
	"DES-PHASE-OUT-OF-ORDER": policy.Deny, "DES-PHASE-UNTRACKED": policy.Deny, "DES-PLAN-MISSING": policy.Deny,
	"DES-PLAN-FORMAT": policy.Warn, "DES-GATE-BLOCKED": policy.Deny, "DES-ITERATION-CORRIDOR": policy.Deny,
	"DES-CONSTITUTION-PENDING": policy.Deny, "DES-BRANCH-PROTECTED": policy.Deny, "DES-BRANCH-INTERMEDIATE": policy.Deny,
	"DES-WALKTHROUGH-MISSING": policy.Warn, "DES-DISCOVER-MENU": policy.Warn,
	// Orchestration governance.
	"DES-DELEGATION-REQUIRED": policy.Deny, "DES-CONCURRENCY-LIMIT": policy.Deny,
	"DES-TASKGRAPH-INVALID": policy.Deny, "DES-TASKGRAPH-WAVE-MIX": policy.Deny,
	"DES-TASKGRAPH-WAVE-DEPENDENCY": policy.Deny, "DES-TASKGRAPH-FILE-CONFLICT": policy.Deny,
	"DES-TASKGRAPH-UNVERIFIED": policy.Deny, "DES-TASKGRAPH-DEPTH": policy.Deny, "DES-TASKGRAPH-ATOMICITY": policy.Warn,
	"DES-TASKGRAPH-TRANSITION": policy.Deny, "DES-TASKGRAPH-UNKNOWN-PHASE": policy.Deny, "DES-TASKGRAPH-WAVE": policy.Deny,
	"DES-TASKGRAPH-DEPENDENCY": policy.Deny, "DES-VERIFY-ESCALATE": policy.Deny,
}

// extensionCodes are codes des added later (adding is
// welcome, renaming is not); each is documented in docs/reference.md.
var extensionCodes = map[string]policy.Severity{
	// Phase handshake consistency of a workflow state (issue: the write guard).
	"DES-STATE-HANDSHAKE-INDEX":  policy.Warn,
	"DES-STATE-HANDSHAKE-PHASE":  policy.Warn,
	"DES-STATE-HANDSHAKE-KEY":    policy.Warn,
	"DES-STATE-HANDSHAKE-ACTIVE": policy.Warn,
	"DES-STATE-SHADOW":           policy.Deny,
	"DES-STATE-SWITCH":           policy.Deny,
	// Gate 2 could not list the changed files (no git, not a repository).
	"DES-SCOPE-UNCHECKED": policy.Warn,
	// Gate 2: the transcript disagrees with Gate 1's record of the run.
	"DES-TRANSCRIPT-TAMPERED": policy.Deny,
	// An exception for a code an organisation made unwaivable.
	"DES-EXCEPTION-REFUSED": policy.Deny,
	// Task graph from evidence (issue 28): only des's wave sync finishes a
	// phase or moves current_wave, and retries outlive a plan's task_id.
	"DES-GRAPH-STATUS-UNSEEN": policy.Deny,
	"DES-GRAPH-PLAN-FINISHED": policy.Deny,
	"DES-GRAPH-WAVE-MOVED":    policy.Deny,
	"DES-GRAPH-RETRIES-RESET": policy.Deny,
	// TDD evidence (issue 28): a test phase against the test runs des saw;
	// a warning by default (setting tdd_evidence).
	"DES-TDD-NO-RED":   policy.Deny,
	"DES-TDD-NO-GREEN": policy.Deny,
	// iSDLC from evidence (issue 28): a state write's test iterations
	// against des's.
	"DES-EVIDENCE-MISMATCH": policy.Deny,
	"DES-WORKFLOW-REUSED":   policy.Deny,
}

// TestBuiltinCodesAreStable fails when a built-in deny or warn rule can
// yield a code that stableCodes and extensionCodes do not list, with the wrong
// severity, or without a catalogue title (METADATA).
func TestBuiltinCodesAreStable(t *testing.T) {
	t.Parallel()
	e := newEngine(t)
	cat, err := e.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	if len(cat) == 0 {
		t.Fatal("empty catalogue")
	}
	for _, r := range cat {
		sev, ok := stableCodes[r.Code]
		if !ok {
			sev, ok = extensionCodes[r.Code]
		}
		switch {
		case !ok:
			t.Errorf("%s (%s, %s) is neither a stable code nor a documented extension; add it to docs/reference.md and extensionCodes", r.Code, r.Package, r.Location)
		case sev != r.Severity:
			t.Errorf("%s is %s in %s, stableCodes say %s", r.Code, r.Severity, r.Package, sev)
		}
		if r.Title == "" {
			t.Errorf("%s in %s (%s) has no METADATA title", r.Code, r.Package, r.Location)
		}
	}
}

func TestCatalogueFindsUnannotatedTeamCodes(t *testing.T) {
	t.Parallel()
	e := newEngine(t, policy.WithDirs("testdata/evalerror", "testdata/team"))
	cat, err := e.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(cat, func(r policy.Rule) bool { return r.Code == "TEAM-LEVEL" })
	if i < 0 {
		t.Fatalf("TEAM-LEVEL (no METADATA) missing from %+v", cat)
	}
	if r := cat[i]; r.Package != "des.gates.tool_use" || r.Severity != policy.Deny || r.Title != "" {
		t.Errorf("TEAM-LEVEL entry = %+v", r)
	}
	i = slices.IndexFunc(cat, func(r policy.Rule) bool { return r.Code == "TEAM-OWNER" })
	if i < 0 || cat[i].Title != "Step owner required" || cat[i].Severity != policy.Warn {
		t.Errorf("TEAM-OWNER entry wrong or missing: %+v", cat)
	}
	if !slices.IsSortedFunc(cat, func(a, b policy.Rule) int { return strings.Compare(a.Code, b.Code) }) {
		t.Error("catalogue not sorted by code")
	}
}
