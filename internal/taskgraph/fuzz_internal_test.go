package taskgraph

import (
	"os"
	"testing"
)

// FuzzParse runs the parse, the schema, the advice and the in-memory wave
// sync on any document: no panic, and a sync that succeeds writes a graph
// that reads back as it says.
func FuzzParse(f *testing.F) {
	example, err := os.ReadFile("testdata/active_task_graph.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(example), "impl_calc", "FAIL")
	f.Add(`{"waves":[{"phases":[{"phase_id":"a","type":"verification","verifies_phase_id":"a","status":"completed"}]}]}`, "a", "FAIL")
	f.Add(`{"waves":[{"phases":[]},{"phases":[{"phase_id":"b","type":"x","status":null}]}],"current_wave":0}`, "b", "")
	f.Add(`{"waves":[{"phases":[{"phase_id":"a","type":"x","retries":-2}]}],"current_wave":-1,"max_retries":-1}`, "a", "")
	f.Fuzz(func(t *testing.T, doc, phase, verdict string) {
		g, d, err := Parse([]byte(doc))
		if err != nil {
			return
		}
		_ = Validate(d)
		_ = NextAfter(g, phase).String()
		var u Update
		out, err := syncBytes([]byte(doc), phase, Outcome{Verdict: verdict}, &u)
		if err != nil {
			return
		}
		after, _, err := Parse(out)
		if err != nil {
			t.Fatalf("sync wrote an unreadable graph: %v\n%s", err, out)
		}
		if p, _ := after.Phase(phase); p.Status != u.To || after.CurrentWave != u.WaveAfter {
			t.Fatalf("sync says %+v, the graph says %+v, wave %d", u, p, after.CurrentWave)
		}
		if !u.Changed && string(out) != doc {
			t.Fatal("an unchanged graph was rewritten")
		}
	})
}

// phaseIDScan is PhaseID without its search for the words first.
func phaseIDScan(prompt string) (string, bool) {
	if m := markerRE().FindStringSubmatch(prompt); m != nil {
		return m[1], true
	}
	if m := lineRE().FindStringSubmatch(prompt); m != nil {
		return m[1], true
	}
	return "", false
}

// The search for the words before the expressions never loses a match:
// case, the long s and the Kelvin sign that (?i) folds, markdown around
// the key.
func FuzzPhaseIDPrefilter(f *testing.F) {
	for _, s := range []string{
		"Phase ID: p1", "PHA\u017fE ID: p1", "phase_id: x", "**Phase-ID**: `p2`", "PhaseID: a.b", "> ## phase id: q",
		"<!-- DES-TASK-PHASE: impl -->", "<!-- des-tas\u212a-pha\u017fe: k1 -->", "<!--DES-TASK-PHASE:x-->",
		"no phase here", "phase\tid: t", "PHASE İD: p", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, prompt string) {
		id, ok := PhaseID(prompt)
		wantID, wantOK := phaseIDScan(prompt)
		if id != wantID || ok != wantOK {
			t.Fatalf("PhaseID(%q) = %q, %v; the expressions alone: %q, %v", prompt, id, ok, wantID, wantOK)
		}
	})
}
