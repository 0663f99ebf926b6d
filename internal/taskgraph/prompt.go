package taskgraph

import (
	"regexp"
	"strings"
	"sync"
)

// idPattern is what a phase_id may be (the schema says the same): letters,
// digits, '.', '_' and '-', starting and ending with a letter or digit, at
// most 128 bytes. Ending on a letter or digit lets "Phase ID: p1." in prose
// name p1.
const idPattern = `[A-Za-z0-9](?:[A-Za-z0-9._-]{0,126}[A-Za-z0-9])?`

var (
	validID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^` + idPattern + `$`) })
	// The marker is machine-written, so it is read strictly but for case
	// and spaces.
	markerRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)<!--\s*DES-TASK-PHASE:\s*(` + idPattern + `)\s*-->`)
	})
	// The line is written by a model, so it tolerates list markers, quotes,
	// headings and markdown emphasis around the key and the id, and
	// "Phase-ID" or "PhaseID"; what follows the id on the line is ignored.
	lineRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?im)^[ \t>#*_-]*phase[ _-]?id[*_]*[ \t]*:[ \t*_` + "`" + `"']*(` + idPattern + `)(?:[*_` + "`" + `"'.,;:)\]]*)(?:[ \t\r]|$)`)
	})
	// A verdict line: "VERDICT: FAIL", "**Verdict:** pass", "## VERDICT: PASS_WITH_MINOR_ISSUES".
	verdictRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?im)^[ \t>#*_-]*verdict[*_]*[ \t]*[:=-][ \t*_` + "`" + `"']*(pass|fail)`)
	})
)

// ValidPhaseID reports whether id is a well-formed phase id.
func ValidPhaseID(id string) bool { return validID().MatchString(id) }

// PhaseID returns the phase a delegation prompt names, and whether it
// names one: a marker "<!-- DES-TASK-PHASE: <id> -->" anywhere, else a
// line "Phase ID: <id>" (key case-insensitive). When both are present
// and differ, the marker wins: it is the form written for machines, while
// a prose line may quote another phase. Of several markers, or lines, the
// first wins.
func PhaseID(prompt string) (string, bool) {
	// The expressions scan the whole prompt (a line's start has no literal
	// to seek), so a prompt without the words they need is not scanned:
	// most delegations name no phase.
	folded := foldForSearch(prompt)
	if strings.Contains(folded, "des-task-phase") {
		if m := markerRE().FindStringSubmatch(prompt); m != nil {
			return m[1], true
		}
	}
	if strings.Contains(folded, "phaseid") || strings.Contains(folded, "phase id") || strings.Contains(folded, "phase_id") || strings.Contains(folded, "phase-id") {
		if m := lineRE().FindStringSubmatch(prompt); m != nil {
			return m[1], true
		}
	}
	return "", false
}

// foldForSearch lowers s for a search of ASCII words that the expressions
// match case-insensitively: (?i) also takes U+017F (long s) for "s" and
// U+212A (Kelvin) for "k"; ToLower maps the Kelvin sign, not the long s.
func foldForSearch(s string) string {
	return strings.ReplaceAll(strings.ToLower(s), "\u017f", "s")
}

// Verdict reads a verifier's verdict from its last message: "FAIL",
// "PASS" (PASS_WITH_MINOR_ISSUES included) or "" when no line gives one.
// A verdict line starts (after markdown list, quote, heading or emphasis
// marks) with "VERDICT:" in any case. A message that holds a FAIL line is
// a FAIL, wherever the line is: a PASS line after it may be quoted text (the
// implementation's own report, say), and the spec fails a verification
// whose last message holds "VERDICT: FAIL".
func Verdict(text string) string {
	m := verdictRE().FindAllStringSubmatch(text, -1)
	if m == nil {
		return ""
	}
	for _, v := range m {
		if strings.EqualFold(v[1], "fail") {
			return "FAIL"
		}
	}
	return "PASS"
}
