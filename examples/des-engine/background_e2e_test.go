package main

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/proctree"
	"github.com/deterministic-exec/des/internal/testenv"
)

// A background job a Bash call left keeps the call in flight for as long
// as it runs, not for a fixed time: its write, landing after the call's
// PostToolUse (and, in real use, after any window), is undone by the next
// check and reported there, with the content kept. A command that only
// looked as if it left something running ("Tom & Jerry") ends at once:
// a person's edit right after it is theirs, and `des-hook integrity
// accept` works for a person while an agent's job runs on.
func TestE2EBackgroundWriterAfterItsCall(t *testing.T) {
	t.Parallel()
	testenv.Long(t) // seconds of sleeps and processes: CI runs it (DES_TEST_LONG=1)
	if !(proctree.Tree{}).Supported() {
		t.Skip("no Linux /proc: calls that leave jobs count for 11 minutes (covered by TestE2EAttackEffects)")
	}
	root := effProject(t)
	agentBash(t, root, root, "true") // a baseline

	// The job writes des's settings two seconds after its call ended.
	a := agentBash(t, root, root, `(sleep 2; python3 -c 'open(".des/"+"config.json","w").write("{}")') >/dev/null 2>&1 &`)
	if a.deny != "" || a.reason != "" {
		t.Fatalf("the call itself: deny %q, post %q", a.deny, a.reason)
	}
	waitForWrite(t, root, ".des/config.json", effCfg) // the job writes and ends, between calls
	next := agentBash(t, root, root, "ls >/dev/null")
	if !strings.Contains(next.reason, "DES-INTEGRITY") || !strings.Contains(next.reason, ".des/config.json") {
		t.Fatalf("the job's write after its call was not reported by the next check:\n%s", next.reason)
	}
	if got := readFileString(t, root, ".des/config.json"); got != effCfg {
		t.Errorf("the job's write persists: %s", got)
	}
	if r := runBinCLI(t, root, "integrity", "kept"); !strings.Contains(r.stdout, ".des/config.json") {
		t.Errorf("the undone content is not kept:\n%s%s", r.stdout, r.stderr)
	}

	// A script that forks its writer says nothing a reader of the command
	// could see: the process tree still does.
	fork := `python3 -c 'import os,time
if os.fork() == 0:
    os.setsid(); time.sleep(2); open(".des/"+"config.json","w").write("{}")' >/dev/null 2>&1`
	if a := agentBash(t, root, root, fork); a.deny != "" || a.reason != "" {
		t.Fatalf("the forking script: deny %q, post %q", a.deny, a.reason)
	}
	waitForWrite(t, root, ".des/config.json", effCfg)
	if next := agentBash(t, root, root, "ls >/dev/null"); !strings.Contains(next.reason, "DES-INTEGRITY") {
		t.Fatalf("the forked writer's write was not reported:\n%s", next.reason)
	}
	if got := readFileString(t, root, ".des/config.json"); got != effCfg {
		t.Errorf("the forked writer's write persists: %s", got)
	}

	// "Tom & Jerry" leaves nothing running: a hand edit after it stays.
	if a := agentBash(t, root, root, `echo "Tom & Jerry"`); a.deny != "" || a.reason != "" {
		t.Fatalf("echo: deny %q, post %q", a.deny, a.reason)
	}
	edited := strings.Replace(effCfg, "{", "{\n  \"stale_threshold_minutes\": 45,", 1)
	writeFile(t, root, ".des/config.json", edited)
	if a := agentBash(t, root, root, "ls >/dev/null"); strings.Contains(a.reason, "DES-INTEGRITY") {
		t.Fatalf("a person's edit after `echo \"Tom & Jerry\"` was undone:\n%s", a.reason)
	}
	if got := readFileString(t, root, ".des/config.json"); got != edited {
		t.Errorf("the person's edit is lost: %s", got)
	}

	// A long job of the agent's runs on: a person's accept still works,
	// and the job's own run of it is refused.
	job := agentBash(t, root, root, `sleep 30 >/dev/null 2>&1 & echo $! > job.pid`)
	if job.deny != "" || job.reason != "" {
		t.Fatalf("the job: deny %q, post %q", job.deny, job.reason)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(readFileString(t, root, "job.pid")))
	t.Cleanup(func() { _ = exec.Command("kill", strconv.Itoa(pid)).Run() })
	if r := runBinCLI(t, root, "integrity", "accept"); r.code != 0 {
		t.Errorf("a person's accept while the agent's job runs: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// A job's own run, even double-forked with its parent gone, is refused.
	for _, spelling := range []string{
		`(sleep 1; ` + hookBin + ` integrity accept > accept.out 2>&1; echo "exit $?" >> accept.out) >/dev/null 2>&1 &`,
		`(sleep 1; (` + hookBin + ` integrity accept > accept.out 2>&1; echo "exit $?" >> accept.out) &) >/dev/null 2>&1 &`,
	} {
		writeFile(t, root, "accept.out", "")
		if a := agentBash(t, root, root, spelling); a.deny != "" {
			t.Fatalf("%s: denied before it ran: %s", spelling, a.deny)
		}
		var got string
		for range 100 {
			if got = readFileString(t, root, "accept.out"); strings.Contains(got, "exit ") {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if !strings.Contains(got, "refused inside an agent's tool call") || !strings.Contains(got, "exit 2") {
			t.Errorf("%s: the agent's job ran accept:\n%s", spelling, got)
		}
	}
}

// waitForWrite waits until rel no longer holds was (a job's write landed),
// then a moment for the job to end: a loaded machine may run it late.
func waitForWrite(t *testing.T, root, rel, was string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); readFileString(t, root, rel) == was; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s was never written", rel)
		}
	}
	time.Sleep(200 * time.Millisecond)
}
