package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Gate 2 checks a test phase's PASS against the test runs des saw in the
// subagent's run: a RED phase whose failing test des saw run (a real `go
// test` in a real module) passes; one marked PASS with no test run at all
// is named (a warning by default, a deny with tdd_evidence deny).
func TestE2ETDDEvidenceAtGate2(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go is not installed: no real test runner to run")
	}
	for _, mode := range []string{"warn", "deny"} {
		t.Run(mode, func(t *testing.T) {
			root, transcript, env := gate2Project(t, "DES_TDD_EVIDENCE="+mode)
			writeFile(t, root, "go.mod", "module example.com/shop\n\ngo 1.22\n")
			writeFile(t, root, "cart_test.go", "package shop\n\nimport \"testing\"\n\nfunc TestTotal(t *testing.T) { t.Fatal(\"total not written yet\") }\n")
			// As Claude Code sends a subagent's calls: its id, and the
			// session's transcript, through which des binds it to Gate 1's run.
			agent := map[string]any{"agent_id": "a6fbb44895c6a27dd", "agent_type": "software-crafter",
				"transcript_path": filepath.Join(filepath.Dir(transcript), "..", "..", "s1.jsonl")}
			n := 0
			phase := func(i int, set map[string]any) {
				t.Helper()
				doc := readStep(t, root)
				p := stepPhases(doc)[i].(map[string]any)
				for k, v := range set {
					p[k] = v
				}
				next, _ := json.MarshalIndent(doc, "", "  ")
				ev := writeToolEvent(root, "Write", e2eStep, map[string]any{"content": string(next)})
				n++
				ev["tool_use_id"] = "toolu_tdd" + itoa(n)
				for k, v := range agent {
					ev[k] = v
				}
				if reason := denyReason(t, runHookProcess(t, root, env, ev)); reason != "" {
					t.Fatalf("write %d denied: %s", n, reason)
				}
				writeFile(t, root, e2eStep, string(next))
				ev = writtenEv(ev, filepath.Join(root, e2eStep))
				if r := runHookProcess(t, root, env, ev); r.code != 0 || r.stdout != "" {
					t.Fatalf("PostToolUse %d: %+v", n, r)
				}
			}
			start := map[string]any{"status": "IN_PROGRESS", "started_at": "2026-11-29T12:00:00Z"}
			pass := map[string]any{"status": "EXECUTED", "outcome": "PASS", "outcome_details": "ok", "ended_at": "2026-11-29T12:05:00Z"}
			phase(0, start)
			phase(0, pass)
			phase(1, start)
			if _, code := testRunBashIn(t, root, env, "go test ./...", agent); code == 0 {
				t.Fatal("the RED test passed")
			}
			phase(1, pass)
			phase(2, start)
			phase(2, pass) // RED_UNIT: PASS, with no test run at all

			r := runHookProcess(t, root, env, stopEvent(root, transcript, false))
			out := decodeStop(t, r)
			text := r.stdout
			if !strings.Contains(text, "DES-TDD-NO-RED") || !strings.Contains(text, "phase RED_UNIT claims PASS for a failing test, but des saw no test run in RED_UNIT") {
				t.Fatalf("stop: %+v", out)
			}
			if strings.Contains(text, "RED_ACCEPTANCE claims PASS") {
				t.Errorf("the RED phase whose failing run des saw was named: %s", text)
			}
			failed := readStepState(t, root)["status"] == "FAILED"
			if mode == "deny" && !failed || mode == "warn" && failed {
				t.Errorf("tdd_evidence %s: the step's status is %v", mode, readStepState(t, root)["status"])
			}
		})
	}
}
