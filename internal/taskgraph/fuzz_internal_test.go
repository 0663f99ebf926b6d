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
