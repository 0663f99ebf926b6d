package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A subagent that edits or deletes its own transcript does not escape
// Gate 2: the hook judges the step Gate 1 recorded and fails the stop with
// DES-TRANSCRIPT-TAMPERED, even when the work itself is honest.
func TestE2EGate2TamperedTranscriptFailsTheStop(t *testing.T) {
	t.Parallel()
	sed, err := exec.LookPath("sed")
	if err != nil {
		t.Skip("sed is not installed")
	}
	// meta writes the agent-<id>.meta.json Claude Code 2.1.2xx keeps beside
	// a transcript, naming the Agent call that started the subagent.
	meta := func(t *testing.T, transcript string) {
		writeFile(t, filepath.Dir(transcript), strings.TrimSuffix(filepath.Base(transcript), ".jsonl")+".meta.json",
			`{"agentType":"software-crafter","description":"step 01-01","toolUseId":"toolu_e2e"}`)
	}
	for _, c := range []struct {
		name   string
		tamper func(t *testing.T, transcript string)
		want   string
	}{
		{"sed -i '1s/DES-/DES_/'", func(t *testing.T, transcript string) {
			meta(t, transcript)
			if out, err := exec.Command(sed, "-i", "1s/DES-/DES_/", transcript).CombinedOutput(); err != nil {
				t.Fatalf("sed: %v: %s", err, out)
			}
		}, "the one Gate 1 allowed"},
		{"sed -i '1s/DES-/DES_/g'", func(t *testing.T, transcript string) {
			meta(t, transcript)
			if out, err := exec.Command(sed, "-i", "1s/DES-/DES_/g", transcript).CombinedOutput(); err != nil {
				t.Fatalf("sed: %v: %s", err, out)
			}
		}, "without the DES markers Gate 1 saw"},
		{"rm, meta kept", func(t *testing.T, transcript string) {
			meta(t, transcript)
			if err := os.Remove(transcript); err != nil {
				t.Fatal(err)
			}
		}, "is missing"},
		{"rm transcript and meta", func(t *testing.T, transcript string) {
			if err := os.Remove(transcript); err != nil {
				t.Fatal(err)
			}
		}, "is missing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root, transcript, env := gate2Project(t)
			prepareThroughTheGuard(t, root, env)
			c.tamper(t, transcript)
			out := decodeStop(t, runHookProcess(t, root, env, stopEvent(root, transcript, false)))
			for _, want := range []string{"[DES-TRANSCRIPT-TAMPERED] " + e2eStep + ": the subagent's transcript " + transcript, c.want, "DES marked " + e2eStep + " FAILED."} {
				if !strings.Contains(out.SystemMessage, want) {
					t.Errorf("systemMessage lacks %q:\n%s", want, out.SystemMessage)
				}
			}
			if strings.Count(out.SystemMessage, "[DES-") != 1 {
				t.Errorf("want DES-TRANSCRIPT-TAMPERED alone (the work was honest):\n%s", out.SystemMessage)
			}
			if s := readStepState(t, root); s["status"] != "FAILED" {
				t.Errorf("step state after a tampered stop: %v", s)
			}
			// Gate 3 then refuses the step until it is resolved.
			if r := runBinCLI(t, root, "precommit", e2eStep); r.code != 1 || !strings.Contains(r.stdout, "DES-TRANSCRIPT-TAMPERED") {
				t.Errorf("precommit after the tampered stop: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
		})
	}
}

// On a Claude Code version that writes no meta file, the subagent's first
// tool call binds it to its run (PreToolUse runs before the call), so a
// `sed -i 's/DES-/DES_/g'` on its transcript, the command itself, does not
// hide the run from Gate 2.
func TestE2EGate2BindingAtTheFirstToolCall(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	root, transcript, env := gate2Project(t)
	prepareThroughTheGuard(t, root, env)
	command := "sed -i 's/DES-/DES_/g' " + transcript
	ev := stopEvent(root, transcript, false) // the session's fields
	pre := bashEv("PreToolUse", root, command, evSession(ev["session_id"].(string)), evTranscript(ev["transcript_path"].(string)), evMode("auto"),
		evAgent(ev["agent_id"].(string), ev["agent_type"].(string)), evInput(map[string]any{"description": "tidy"}), evToolUseID("toolu_sed"))
	if r := runHookProcess(t, root, env, pre); r.code != 0 || r.stdout != "" {
		t.Fatalf("PreToolUse of the sed: %+v", r)
	}
	mustRunBash(t, root, command)
	out := decodeStop(t, runHookProcess(t, root, env, ev))
	if !strings.Contains(out.SystemMessage, "[DES-TRANSCRIPT-TAMPERED] "+e2eStep) || !strings.Contains(out.SystemMessage, "without the DES markers") {
		t.Errorf("systemMessage:\n%s", out.SystemMessage)
	}
	if s := readStepState(t, root); s["status"] != "FAILED" {
		t.Errorf("step state: %v", s)
	}
}
