package main

// The task graph as a guarded document (CONTRACT §9 "Task graph", §4
// DES-STATE-BASH-WRITE and DES-PROTECTED-PATH, §10): every document_write
// rule on Write, Edit and MultiEdit of the graph, the status transitions,
// Bash writes, the registry directory protected, and the effect check.
// Helpers are in taskgraph_e2e_test.go.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tgMut is a change to the plan: it returns the document to write (a
// gdoc, or a string written as is).
type tgMut func(t testing.TB, g gdoc) any

// tgWaves replaces the plan's waves.
func tgWaves(waves ...gdoc) tgMut {
	return func(t testing.TB, g gdoc) any {
		list := []any{}
		for _, w := range waves {
			list = append(list, w)
		}
		g["waves"] = list
		return g
	}
}

// Every DES-TASKGRAPH-* rule of document_write on a Write of the graph,
// on a project without a graph on disk (a new plan) and, the same again,
// on one with the valid plan on disk, written from the main thread and
// from a subagent. Each document breaks one rule unless the case says
// otherwise; the plan (tgPlan) breaks none.
func TestGraphDocumentRules(t *testing.T) {
	t.Parallel()
	atomic := func(ph gdoc, depth int) gdoc {
		ph["is_atomic"], ph["depth"], ph["estimated_minutes"] = true, depth, 20
		return ph
	}
	// depthPlan is the plan with both implementation phases atomic at depth
	// d, with tier and complexity_score as given (nil: absent).
	depthPlan := func(tier, score any, d int) tgMut {
		return func(t testing.TB, g gdoc) any {
			delete(g, "tier")
			delete(g, "complexity_score")
			if tier != nil {
				g["tier"] = tier
			}
			if score != nil {
				g["complexity_score"] = score
			}
			atomic(tgPhaseOf(t, g, "phase_0_0"), d)
			atomic(tgPhaseOf(t, g, "phase_0_1"), d)
			return g
		}
	}
	onPhase := func(id string, f func(ph gdoc)) tgMut {
		return func(t testing.TB, g gdoc) any { f(tgPhaseOf(t, g, id)); return g }
	}
	impl := tgImpl
	cases := []struct {
		name string
		mut  tgMut
		w    tgWant
	}{
		{"the plan", func(t testing.TB, g gdoc) any { return g }, tgAllow},

		// DES-TASKGRAPH-INVALID: not a JSON object, fails the schema, a
		// phase_id repeats.
		{"invalid: an array", func(testing.TB, gdoc) any { return "[]\n" }, tgDenies("DES-TASKGRAPH-INVALID")},
		{"invalid: not JSON", func(testing.TB, gdoc) any { return `{"waves": [` }, tgDenies("DES-TASKGRAPH-INVALID")},
		{"invalid: no waves", func(t testing.TB, g gdoc) any { delete(g, "waves"); return g }, tgDenies("DES-TASKGRAPH-INVALID").with("waves")},
		{"invalid: waves an object", func(t testing.TB, g gdoc) any { g["waves"] = gdoc{"0": g["waves"]}; return g }, tgDenies("DES-TASKGRAPH-INVALID").with("waves")},
		{"invalid: a wave without phases", func(t testing.TB, g gdoc) any {
			g["waves"] = append(g["waves"].([]any), gdoc{"wave_id": 3, "parallel_execution": false})
			return g
		}, tgDenies("DES-TASKGRAPH-INVALID").with("phases")},
		{"invalid: a phase without type", onPhase("phase_2_0", func(ph gdoc) { delete(ph, "type") }), tgDenies("DES-TASKGRAPH-INVALID").with("type")},
		{"invalid: a phase without phase_id", onPhase("phase_2_0", func(ph gdoc) { delete(ph, "phase_id") }), tgDenies("DES-TASKGRAPH-INVALID").with("phase_id")},
		{"invalid: depends_on not a list", onPhase("phase_2_0", func(ph gdoc) { ph["depends_on"] = "phase_1_0" }), tgDenies("DES-TASKGRAPH-INVALID").with("depends_on")},
		// The contract lists the statuses (types may be others, statuses
		// not). Only on a new plan: over the plan on disk, pending→done is
		// also a transition outside the table.
		{"invalid: unknown status (new plan only)", onPhase("phase_2_0", func(ph gdoc) { ph["status"] = "done" }), tgDenies("DES-TASKGRAPH-INVALID").with("done")},
		{"invalid: a repeated phase_id", func(t testing.TB, g gdoc) any {
			w1 := g["waves"].([]any)[1].(gdoc)
			w1["phases"] = append(w1["phases"].([]any), tgVerify("phase_1_0", "phase_0_1"))
			return g
		}, tgDenies("DES-TASKGRAPH-INVALID").with("phase_1_0")},
		// Optional fields: null counts as absent; unknown fields are fine;
		// types beyond implementation/verification are allowed.
		{"nulls and unknown fields", func(t testing.TB, g gdoc) any {
			g["tier"], g["max_retries"], g["owner"] = nil, nil, "team-calc"
			ph := tgPhaseOf(t, g, "phase_0_0")
			ph["depends_on"], ph["status"], ph["retries"], ph["is_atomic"], ph["depth"], ph["estimated_minutes"] = nil, nil, nil, nil, nil, nil
			ph["ticket"] = "CALC-12"
			g["waves"].([]any)[0].(gdoc)["parallel_execution"] = nil
			g["waves"].([]any)[0].(gdoc)["label"] = "build"
			return g
		}, tgAllow},
		{"another phase type", func(t testing.TB, g gdoc) any {
			doc := gdoc{"phase_id": "phase_2_1", "type": "documentation", "objective": "Document the calculator", "agent": "documentation-expert",
				"deliverable_manifest": gdoc{"files": []any{gdoc{"path": "docs/calculator.md", "must_exist": false}}}}
			w2 := g["waves"].([]any)[2].(gdoc)
			w2["phases"] = append(w2["phases"].([]any), doc)
			return g
		}, tgAllow},

		// DES-TASKGRAPH-WAVE-MIX.
		{"wave mix", tgWaves(
			tgWave(0, true, impl("p0a", "calculator.py")),
			tgWave(1, false, tgVerify("v1a", "p0a"), impl("p1b", "utils.py")),
			tgWave(2, false, tgVerify("v2b", "p1b")),
		), tgDenies("DES-TASKGRAPH-WAVE-MIX")},

		// DES-TASKGRAPH-WAVE-DEPENDENCY: depends_on or verifies_phase_id on a
		// phase of the same or a later wave.
		{"depends on the same wave", func(t testing.TB, g gdoc) any {
			tgPhaseOf(t, g, "phase_0_1")["depends_on"] = []any{"phase_0_0"}
			return g
		}, tgDenies("DES-TASKGRAPH-WAVE-DEPENDENCY").with("phase_0_1", "phase_0_0")},
		{"depends on the same sequential wave", tgWaves(
			tgWave(0, false, impl("p0a", "calculator.py"), gdoc{"phase_id": "p0b", "type": "implementation", "objective": "Create utils.py", "depends_on": []any{"p0a"}}),
			tgWave(1, true, tgVerify("v1a", "p0a"), tgVerify("v1b", "p0b")),
		), tgDenies("DES-TASKGRAPH-WAVE-DEPENDENCY").with("p0b")},
		{"depends on a later wave", func(t testing.TB, g gdoc) any {
			tgPhaseOf(t, g, "phase_0_0")["depends_on"] = []any{"phase_2_0"}
			return g
		}, tgDenies("DES-TASKGRAPH-WAVE-DEPENDENCY").with("phase_0_0", "phase_2_0")},
		{"verifies a later wave", tgWaves(
			tgWave(0, false, tgVerify("v0", "p1")),
			tgWave(1, false, impl("p1", "calculator.py")),
			tgWave(2, false, tgVerify("v2", "p1")),
		), tgDenies("DES-TASKGRAPH-WAVE-DEPENDENCY").with("v0", "p1")},

		// DES-TASKGRAPH-FILE-CONFLICT: two file-writing phases (any type but
		// verification) of one parallel wave listing the same file.
		{"file conflict", tgWaves(
			tgWave(0, true, impl("p0a", "calculator.py"), impl("p0b", "utils.py", "calculator.py")),
			tgWave(1, true, tgVerify("v1a", "p0a"), tgVerify("v1b", "p0b")),
		), tgDenies("DES-TASKGRAPH-FILE-CONFLICT").with("calculator.py", "p0a", "p0b")},
		{"file conflict with another type", tgWaves(
			tgWave(0, true, impl("p0a", "README.md"), gdoc{"phase_id": "d0", "type": "documentation", "objective": "Document it",
				"deliverable_manifest": gdoc{"files": []any{gdoc{"path": "README.md", "must_exist": true}}}}),
			tgWave(1, false, tgVerify("v1a", "p0a")),
		), tgDenies("DES-TASKGRAPH-FILE-CONFLICT").with("README.md")},
		{"same file in a sequential wave", tgWaves(
			tgWave(0, false, impl("p0a", "calculator.py"), impl("p0b", "calculator.py")),
			tgWave(1, true, tgVerify("v1a", "p0a"), tgVerify("v1b", "p0b")),
		), tgAllow},
		{"same file in parallel verifications", func(t testing.TB, g gdoc) any {
			for _, id := range []string{"phase_1_0", "phase_1_1"} {
				tgPhaseOf(t, g, id)["deliverable_manifest"] = gdoc{"files": []any{gdoc{"path": "calculator.py", "must_exist": true}}}
			}
			return g
		}, tgAllow},

		// DES-TASKGRAPH-UNVERIFIED.
		{"unverified", func(t testing.TB, g gdoc) any {
			tgPhaseOf(t, g, "phase_1_1")["verifies_phase_id"] = "phase_0_0"
			return g
		}, tgDenies("DES-TASKGRAPH-UNVERIFIED").with("phase_0_1")},
		{"verified only by an earlier wave", tgWaves(
			tgWave(0, false, tgVerify("v0", "p1")),
			tgWave(1, false, impl("p1", "calculator.py")),
		), tgDenies("DES-TASKGRAPH-WAVE-DEPENDENCY", "DES-TASKGRAPH-UNVERIFIED")},

		// DES-TASKGRAPH-DEPTH: tier from tier, else complexity_score (< 5 →
		// 1, ≤ 15 → 2, else 3); minimum depth = tier.
		{"depth: tier 3, depth 2", depthPlan(3, nil, 2), tgDenies("DES-TASKGRAPH-DEPTH").with("phase_0_0", "phase_0_1")},
		{"depth: tier 3, depth 3", depthPlan(3, nil, 3), tgAllow},
		{"depth: tier 2, depth 1", depthPlan(2, nil, 1), tgDenies("DES-TASKGRAPH-DEPTH")},
		{"depth: tier 1 over a high score", depthPlan(1, 20, 1), tgAllow},
		{"depth: score 16, depth 2", depthPlan(nil, 16, 2), tgDenies("DES-TASKGRAPH-DEPTH")},
		{"depth: score 15, depth 2", depthPlan(nil, 15, 2), tgAllow},
		{"depth: score 15, depth 1", depthPlan(nil, 15, 1), tgDenies("DES-TASKGRAPH-DEPTH")},
		{"depth: score 4.5, depth 1", depthPlan(nil, 4.5, 1), tgAllow},
		{"depth: score 5, depth 1", depthPlan(nil, 5, 1), tgDenies("DES-TASKGRAPH-DEPTH")},
		{"depth: not atomic", func(t testing.TB, g gdoc) any {
			g["tier"] = 3
			tgPhaseOf(t, g, "phase_0_0")["depth"] = 0
			return g
		}, tgAllow},

		// DES-TASKGRAPH-ATOMICITY (warn): objective over 10 words, more than
		// 3 files, estimated_minutes over 30; the write goes through.
		{"atomic: 10 words, 3 files, 30 minutes", onPhase("phase_0_0", func(ph gdoc) {
			atomic(ph, 2)
			ph["objective"], ph["estimated_minutes"] = "Create calculator.py with add subtract multiply and divide functions now", 30
			ph["deliverable_manifest"].(gdoc)["files"] = []any{gdoc{"path": "calculator.py"}, gdoc{"path": "calc_types.py"}, gdoc{"path": "calc_errors.py"}}
		}), tgAllow},
		{"atomic: 11 words", onPhase("phase_0_0", func(ph gdoc) {
			atomic(ph, 2)
			ph["objective"] = "Create calculator.py with add subtract multiply and divide functions right now"
		}), tgWarns("DES-TASKGRAPH-ATOMICITY").with("phase_0_0")},
		{"atomic: 4 files", onPhase("phase_0_0", func(ph gdoc) {
			atomic(ph, 2)
			ph["deliverable_manifest"].(gdoc)["files"] = []any{gdoc{"path": "a.py"}, gdoc{"path": "b.py"}, gdoc{"path": "c.py"}, gdoc{"path": "d.py"}}
		}), tgWarns("DES-TASKGRAPH-ATOMICITY").with("phase_0_0")},
		{"atomic: 31 minutes", onPhase("phase_0_0", func(ph gdoc) { atomic(ph, 2); ph["estimated_minutes"] = 31 }), tgWarns("DES-TASKGRAPH-ATOMICITY").with("phase_0_0")},
		{"not atomic: long and big", onPhase("phase_0_0", func(ph gdoc) {
			ph["objective"], ph["estimated_minutes"] = strings.Repeat("word ", 40), 240
		}), tgAllow},
		{"atomic warning beside a deny", func(t testing.TB, g gdoc) any {
			g["tier"] = 3
			ph := atomic(tgPhaseOf(t, g, "phase_0_0"), 2)
			ph["estimated_minutes"] = 45
			return g
		}, tgWant{deny: []string{"DES-TASKGRAPH-DEPTH"}, warn: []string{"DES-TASKGRAPH-ATOMICITY"}}},
	}
	for _, disk := range []bool{false, true} {
		for _, c := range cases {
			name := c.name
			if disk && strings.Contains(name, "new plan only") {
				continue
			}
			if disk {
				name += " (over the plan)"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				var onDisk any
				if disk {
					onDisk = tgPlan()
				}
				p := newGraphProject(t, gdoc{}, onDisk)
				var before string
				if disk {
					before = p.graphText()
				}
				content := c.mut(t, tgPlan())
				var agent *tgAgent
				if disk { // the planner subagent rewrites the plan
					agent = p.agent("Agent", "task-decomposer", "Plan the calculator")
				}
				p.check(p.writeGraphEv(agent, tgGraphPath, content), c.w)
				if disk && p.graphText() != before {
					t.Errorf("the hook changed the graph on a PreToolUse Write")
				}
			})
		}
	}
}

// Edit and MultiEdit of the graph are judged on the document they would
// leave.
func TestGraphDocumentEdits(t *testing.T) {
	t.Parallel()
	g := tgPlan()
	g["max_retries"] = 3
	edit := func(p *tgProject, tool, old, new string) gdoc {
		path := filepath.Join(p.root, filepath.FromSlash(tgGraphPath))
		if tool == "MultiEdit" {
			return p.tool(nil, tool, gdoc{"file_path": path, "edits": []any{gdoc{"old_string": old, "new_string": new}}})
		}
		return p.tool(nil, tool, gdoc{"file_path": path, "old_string": old, "new_string": new})
	}
	for _, tool := range []string{"Edit", "MultiEdit"} {
		t.Run(tool, func(t *testing.T) {
			t.Parallel()
			p := newGraphProject(t, gdoc{}, g)
			if !strings.Contains(p.graphText(), `"current_wave": 0,`) || !strings.Contains(p.graphText(), `"verifies_phase_id": "phase_0_1"`) || !strings.Contains(p.graphText(), `"description": "Create calculator.py AND utils.py, verified"`) {
				t.Fatalf("fixture layout:\n%s", p.graphText())
			}
			p.check(edit(p, tool, `"current_wave": 0,`, `"current_wave": 1,`), tgDenies("DES-TASKGRAPH-TRANSITION", "DES-GRAPH-WAVE-MOVED").with("current_wave"))
			p.check(edit(p, tool, `"verifies_phase_id": "phase_0_1"`, `"verifies_phase_id": "phase_0_0"`), tgDenies("DES-TASKGRAPH-UNVERIFIED").with("phase_0_1"))
			p.check(edit(p, tool, `"current_wave": 0,`, `"current_wave": 0`), tgDenies("DES-TASKGRAPH-INVALID"))
			p.check(edit(p, tool, `"description": "Create calculator.py AND utils.py, verified"`, `"description": "Create calculator.py AND utils.py, each verified"`), tgAllow)
		})
	}
}

// Status transitions: pending→in_progress→completed|failed and
// failed→in_progress, nothing else; current_wave only to the next wave and
// only once every phase of the current one is completed. A status absent
// on disk is pending. And from evidence (issue 28): a write never finishes
// a phase des's wave sync did not record (DES-GRAPH-STATUS-UNSEEN) nor
// moves current_wave (DES-GRAPH-WAVE-MOVED); here des has recorded no run,
// so every move to completed or failed is unseen.
func TestGraphTransitions(t *testing.T) {
	t.Parallel()
	type st = []string
	cases := []struct {
		name       string
		disk, next st // id, status pairs over the plan
		diskWave   int
		nextWave   int
		w          tgWant
	}{
		{"pending to in_progress", nil, st{"phase_0_0", "in_progress"}, 0, 0, tgAllow},
		{"pending to completed (skips in_progress)", nil, st{"phase_0_0", "completed"}, 0, 0, tgDenies("DES-TASKGRAPH-TRANSITION", "DES-GRAPH-STATUS-UNSEEN").with("phase_0_0", "pending", "completed", "des saw no subagent run")},
		{"pending to failed", nil, st{"phase_0_0", "failed"}, 0, 0, tgDenies("DES-TASKGRAPH-TRANSITION", "DES-GRAPH-STATUS-UNSEEN")},
		{"absent to completed", st{"phase_0_0", ""}, st{"phase_0_0", "completed"}, 0, 0, tgDenies("DES-TASKGRAPH-TRANSITION", "DES-GRAPH-STATUS-UNSEEN")},
		{"absent to in_progress", st{"phase_0_0", ""}, st{"phase_0_0", "in_progress"}, 0, 0, tgAllow},
		{"in_progress to completed", st{"phase_0_0", "in_progress"}, st{"phase_0_0", "completed"}, 0, 0, tgDenies("DES-GRAPH-STATUS-UNSEEN").with("phase_0_0", "Phase ID: phase_0_0", "des marks it completed")},
		{"in_progress to failed", st{"phase_0_0", "in_progress"}, st{"phase_0_0", "failed"}, 0, 0, tgDenies("DES-GRAPH-STATUS-UNSEEN")},
		{"in_progress to pending", st{"phase_0_0", "in_progress"}, st{"phase_0_0", "pending"}, 0, 0, tgDenies("DES-TASKGRAPH-TRANSITION")},
		{"failed to in_progress", st{"phase_0_0", "failed"}, st{"phase_0_0", "in_progress"}, 0, 0, tgAllow},
		{"failed to completed", st{"phase_0_0", "failed"}, st{"phase_0_0", "completed"}, 0, 0, tgDenies("DES-TASKGRAPH-TRANSITION", "DES-GRAPH-STATUS-UNSEEN")},
		{"completed to pending", st{"phase_0_0", "completed"}, st{"phase_0_0", "pending"}, 0, 0, tgDenies("DES-TASKGRAPH-TRANSITION").with("phase_0_0", "completed", "pending")},
		{"completed to in_progress", st{"phase_0_0", "completed"}, st{"phase_0_0", "in_progress"}, 0, 0, tgDenies("DES-TASKGRAPH-TRANSITION")},
		{"unchanged", st{"phase_0_0", "completed", "phase_0_1", "in_progress"}, st{"phase_0_0", "completed", "phase_0_1", "in_progress"}, 0, 0, tgAllow},

		{"wave moved early", st{"phase_0_0", "completed", "phase_0_1", "in_progress"}, st{"phase_0_0", "completed", "phase_0_1", "in_progress"}, 0, 1,
			tgDenies("DES-TASKGRAPH-TRANSITION", "DES-GRAPH-WAVE-MOVED").with("current_wave")},
		// In order, but only des's wave sync moves current_wave.
		{"wave moved when done", st{"phase_0_0", "completed", "phase_0_1", "completed"}, st{"phase_0_0", "completed", "phase_0_1", "completed"}, 0, 1,
			tgDenies("DES-GRAPH-WAVE-MOVED").with("current_wave moves from 0 to 1 in a write", "leave current_wave at 0")},
		{"wave skipped", st{"phase_0_0", "completed", "phase_0_1", "completed"}, st{"phase_0_0", "completed", "phase_0_1", "completed"}, 0, 2,
			tgDenies("DES-TASKGRAPH-TRANSITION", "DES-GRAPH-WAVE-MOVED").with("current_wave")},
		{"wave moved back", st{"phase_0_0", "completed", "phase_0_1", "completed"}, st{"phase_0_0", "completed", "phase_0_1", "completed"}, 1, 0,
			tgDenies("DES-TASKGRAPH-TRANSITION", "DES-GRAPH-WAVE-MOVED").with("current_wave")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			build := func(pairs st, wave int) gdoc {
				g := tgPlan()
				g["current_wave"] = wave
				for i := 0; i+1 < len(pairs); i += 2 {
					if pairs[i+1] == "" {
						delete(tgPhaseOf(t, g, pairs[i]), "status")
					} else {
						tgPhaseOf(t, g, pairs[i])["status"] = pairs[i+1]
					}
				}
				return g
			}
			p := newGraphProject(t, gdoc{}, build(c.disk, c.diskWave))
			before := p.graphText()
			p.check(p.writeGraphEv(nil, tgGraphPath, build(c.next, c.nextWave)), c.w)
			if p.graphText() != before {
				t.Errorf("the graph changed on disk at PreToolUse")
			}
		})
	}
}

// The graph is a guarded document: Bash may read it, never write it; the
// task_graph_file setting moves the guard.
func TestGraphGuardedDocument(t *testing.T) {
	t.Parallel()
	p := newGraphProject(t, gdoc{}, tgPlan())
	sub := p.agent("Agent", "code-cleanup-optimizer", phasePrompt("phase_0_0", "Create calculator.py"))
	writeFile(t, p.root, "plan.json", tgJSON(t, tgPlan()))
	for _, cmd := range []string{
		`echo '{"waves": []}' > ` + tgGraphPath,
		`cat plan.json | tee ` + tgGraphPath,
		`sed -i 's/"pending"/"completed"/' ` + tgGraphPath,
		`cp plan.json ` + tgGraphPath,
		`mv plan.json ./.claude/state/active_task_graph.json`,
		`jq '.current_wave = 1' plan.json > .claude/state/active_task_graph.json`,
		`rm -f ` + tgGraphPath,
	} {
		p.check(p.bash(nil, cmd), tgDenies("DES-STATE-BASH-WRITE").with(tgGraphPath))
		p.check(p.bash(sub, cmd), tgDenies("DES-STATE-BASH-WRITE"))
	}
	for _, cmd := range []string{`cat ` + tgGraphPath, `jq '.current_wave' ` + tgGraphPath, `cp ` + tgGraphPath + ` /tmp/plan-copy.json`} {
		p.check(p.bash(nil, cmd), tgAllow)
	}

	// task_graph_file: the plan lives elsewhere; the guard follows it, and
	// (assumed from "a setting") the default path is then no plan.
	q := newGraphProject(t, gdoc{"task_graph_file": "docs/plan/graph.json"}, nil)
	q.check(q.writeGraphEv(nil, "docs/plan/graph.json", tgWaves(
		tgWave(0, true, tgImpl("p0a", "calculator.py")),
		tgWave(1, false, tgVerify("v1a", "p0a"), tgImpl("p1b", "utils.py")),
		tgWave(2, false, tgVerify("v2b", "p1b")),
	)(t, tgPlan())), tgDenies("DES-TASKGRAPH-WAVE-MIX"))
	q.check(q.bash(nil, `echo '{}' > docs/plan/graph.json`), tgDenies("DES-STATE-BASH-WRITE"))
	q.check(q.writeGraphEv(nil, tgGraphPath, "not a plan"), tgAllow)
	q.env = append(q.env, "DES_TASK_GRAPH_FILE=plans/other.json")
	q.check(q.writeGraphEv(nil, "plans/other.json", "[]"), tgDenies("DES-TASKGRAPH-INVALID"))
}

// .des/sessions, DES's registry, is protected: no tool writes it, from the
// main thread or a subagent.
func TestGraphSessionsProtected(t *testing.T) {
	t.Parallel()
	p := newGraphProject(t, gdoc{}, nil)
	a := p.agent("Agent", "codebase-context-analyzer", "Analyse")
	p.quiet(p.startEv(a)) // the registry exists now
	for _, who := range []*tgAgent{nil, a} {
		p.check(p.tool(who, "Write", gdoc{"file_path": filepath.Join(p.root, ".des/sessions/"+a.id+".json"), "content": "{}"}), tgDenies("DES-PROTECTED-PATH").with(".des/sessions"))
		p.check(p.tool(who, "Edit", gdoc{"file_path": filepath.Join(p.root, ".des/sessions/x.json"), "old_string": "a", "new_string": "b"}), tgDenies("DES-PROTECTED-PATH"))
		p.check(p.bash(who, `echo '{}' > .des/sessions/`+a.id+`.json`), tgDenies("DES-PROTECTED-PATH"))
		p.check(p.bash(who, `rm -rf .des/sessions`), tgDenies("DES-PROTECTED-PATH"))
	}
	p.check(p.bash(nil, `ls .des/sessions`), tgAllow)
}

// The effect check (§10) covers the graph: a Bash command that rewrites it
// is undone at PostToolUse with DES-INTEGRITY. DES's own wave sync is an
// allowed write: a subagent stopping between another call's PreToolUse
// and PostToolUse is not undone.
func TestGraphEffects(t *testing.T) {
	t.Parallel()
	p := newGraphProject(t, gdoc{}, tgPlan())
	bashCall := func(id, cmd string, during func()) afterTool {
		t.Helper()
		p.run(bashEv("PreToolUse", p.root, cmd, evSession(p.session), evToolUseID(id)))
		if during != nil {
			during()
		}
		sh(t, p.root, cmd)
		return readAfter(t, runHookProcess(t, p.root, p.env, effBashEvent(p.root, "PostToolUse", id, cmd)))
	}
	if post := bashCall("toolu_01GraphEffBegin", "true", nil); post.Decision != "" {
		t.Fatalf("a command that changes nothing was reported: %+v", post)
	}
	plan := p.graphText()
	post := bashCall("toolu_01GraphEffWrite", `echo '{"waves": []}' > `+tgGraphPath, nil)
	if post.Decision != "block" || !strings.Contains(post.Reason, "[DES-INTEGRITY]") || !strings.Contains(post.Reason, tgGraphPath) {
		t.Errorf("PostToolUse after a Bash write of the graph = %+v; want a block with DES-INTEGRITY naming it", post)
	}
	if p.graphText() != plan {
		t.Errorf("the graph was not restored:\n%s", p.graphText())
	}
	if len(auditLines(t, p.root, "INTEGRITY_VIOLATION")) == 0 {
		t.Errorf("no INTEGRITY_VIOLATION in the audit trail")
	}

	// DES's own sync, while a subagent's `go test` runs.
	a := p.agent("Agent", "code-cleanup-optimizer", phasePrompt("phase_0_0", "Create calculator.py"))
	p.check(p.delegateEv(a), tgAllow)
	p.quiet(p.startEv(a))
	post = bashCall("toolu_01GraphEffSync", "true", func() { p.quiet(p.stopEv(a, "Created calculator.py.")) })
	if post.Decision != "" {
		t.Errorf("PostToolUse after DES's own sync = %+v; want nothing", post)
	}
	p.wantDisk("phase_0_0", "completed")
	if slices.Contains([]string{"", "{}"}, strings.TrimSpace(p.graphText())) {
		t.Errorf("graph emptied")
	}
	if _, err := os.Stat(filepath.Join(p.root, tgGraphPath)); err != nil {
		t.Error(err)
	}
}
