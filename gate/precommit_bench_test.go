package gate_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/policy"
)

// benchTrail fills the trail of the days before gate1Now with what a busy
// project leaves: for each of n steps a failed and a passing Gate 2 verdict,
// a stale resolution for one in ten, and the phase events of its 14 phases
// (which Gate 3 reads past).
func benchTrail(b *testing.B, p *project, steps []string) {
	b.Helper()
	var entries []audit.Entry
	at := gate1Now.Add(-48 * time.Hour)
	for i, s := range steps {
		for _, name := range canonical {
			at = at.Add(time.Second)
			entries = append(entries, audit.Entry{Time: at, Event: audit.PhaseCompleted, Fields: map[string]any{
				"step_file": s, "phase": name, "from": "IN_PROGRESS", "to": "EXECUTED", "outcome": "PASS", "confirmed": true, "tool_use_id": "toolu_x", "session_id": "s"}})
		}
		at = at.Add(time.Second)
		entries = append(entries, stopVerdict(s, "FAIL", at, "DES-PHASE-ABANDONED"))
		if i%10 == 0 {
			at = at.Add(time.Second)
			entries = append(entries, audit.Entry{Time: at, Event: audit.StaleResolution, Fields: map[string]any{"step_file": s, "phases": []any{}, "from": "FAILED", "to": "PARTIAL"}})
		}
		at = at.Add(time.Second)
		entries = append(entries, stopVerdict(s, "PASS", at))
	}
	p.appendAudit(entries...)
}

// benchPreCommit times Gate 3 over files in one process: each step file
// read and parsed, the trail read once, one evaluation per file, one audit
// append of the verdicts. Today's day file, which only the verdicts go to,
// is removed between rounds so that every round reads the same trail.
func benchPreCommit(b *testing.B, p *project, c gate.Commit) {
	today := filepath.Join(p.eng.Audit().Dir(), audit.FileName(gate1Now))
	if _, err := p.eng.CheckCommit(b.Context(), c); err != nil { // warm: compile, schema
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		if err := os.Remove(today); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res, err := p.eng.CheckCommit(b.Context(), c)
		if err != nil || len(res.Files) != len(c.Files) {
			b.Fatalf("%v: %d verdicts", err, len(res.Files))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(len(c.Files)), "µs/file")
}

// BenchmarkPreCommit300 is the figure: Gate 3 over 300 finished
// step files (about 4 KB each, on disk) with a trail of 5,000 lines.
func BenchmarkPreCommit300(b *testing.B) {
	p := newProjectTB(b)
	var c gate.Commit
	var steps []string
	for i := range 300 {
		rel := fmt.Sprintf("docs/feature/f%02d/steps/%02d-%02d.json", i/20, i/20+1, i%20+1)
		step := doneStep()
		step["task_id"] = fmt.Sprintf("%02d-%02d", i/20+1, i%20+1)
		p.writeStep(rel, step)
		steps = append(steps, rel)
		c.Files = append(c.Files, gate.CommitFile{Path: rel})
	}
	benchTrail(b, p, steps)
	benchPreCommit(b, p, c)
}

// BenchmarkPreCommitCorpus is Gate 3 over the 300 real step files, held in
// memory (staged content), most of which fail with many violations.
func BenchmarkPreCommitCorpus(b *testing.B) {
	files := stepCorpus(b)
	p := newProjectTB(b)
	var steps []string
	for _, f := range files {
		steps = append(steps, f.Path)
	}
	benchTrail(b, p, steps)
	benchPreCommit(b, p, gate.Commit{Files: files})
}

// BenchmarkPreCommitEval is one warm evaluation of des.gates.pre_commit on
// the input Gate 3 builds for a finished 14-phase step file with two Gate 2
// verdicts, already converted to an ast.Value: the policy's share of a file.
func BenchmarkPreCommitEval(b *testing.B) {
	p := newProjectTB(b)
	p.writeStep(stepRel, doneStep())
	p.appendAudit(stopVerdict(stepRel, "FAIL", gate1Now.Add(-2*time.Hour)), stopVerdict(stepRel, "PASS", gate1Now.Add(-time.Hour)))
	f := &fakeEvaluator{}
	if _, err := (gate.PreCommit{Root: p.root, Audit: p.eng.Audit(), Workers: 1}).Check(b.Context(), f, gate.Commit{Files: []gate.CommitFile{{Path: stepRel}}}); err != nil {
		b.Fatal(err)
	}
	in, err := ast.InterfaceToValue(f.calls[0])
	if err != nil {
		b.Fatal(err)
	}
	pe, err := p.eng.Policy(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	at := policy.At(gate1Now)
	if d, err := pe.Eval(b.Context(), policy.PreCommit, in, at); err != nil || !d.Allowed() {
		b.Fatalf("%+v %v", d, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := pe.Eval(b.Context(), policy.PreCommit, in, at); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPreCommitCorpusPassing is Gate 3 over 300 real step files that
// pass: the 66 of the corpus that do (41 finished, 25 plans), repeated under different paths, the
// size of real finished steps (10 KB on average, with their prose).
func BenchmarkPreCommitCorpusPassing(b *testing.B) {
	p := newProjectTB(b)
	res, err := p.eng.CheckCommit(b.Context(), gate.Commit{Files: stepCorpus(b)})
	if err != nil {
		b.Fatal(err)
	}
	var passing []gate.CommitFile
	for i, f := range res.Files {
		if !f.Denied() {
			passing = append(passing, stepCorpus(b)[i])
		}
	}
	var c gate.Commit
	var steps []string
	for i := range 300 {
		f := passing[i%len(passing)]
		rel := fmt.Sprintf("docs/feature/f%02d/steps/%02d-%02d.json", i/20, i/20+1, i%20+1)
		c.Files = append(c.Files, gate.CommitFile{Path: rel, Content: f.Content})
		steps = append(steps, rel)
	}
	benchTrail(b, p, steps)
	benchPreCommit(b, p, c)
}
