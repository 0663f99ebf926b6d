package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/internal/testenv"
)

// holdLock holds an flock(2) on path from another process, as an agent's
// `flock .des/audit/.lock sleep 120 &` does, until the test ends.
func holdLock(t *testing.T, path string) {
	t.Helper()
	flock, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("flock(1) is not installed")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(flock, path, "sh", "-c", "echo held; exec sleep 120")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	buf := make([]byte, 5)
	if _, err := out.Read(buf); err != nil || string(buf) != "held\n" {
		t.Fatalf("flock did not take the lock: %q, %v", buf, err)
	}
}

// timedRun runs the hook on event with the deadline set, and checks that it
// exited 0 before the deadline and a margin.
func timedRun(t *testing.T, root string, deadline time.Duration, event any) hookRun {
	t.Helper()
	start := time.Now()
	r := runHookProcess(t, root, []string{"DES_HOOK_DEADLINE_MS=" + itoa(int(deadline/time.Millisecond))}, event)
	if took := time.Since(start); took > deadline+5*time.Second {
		t.Errorf("the hook took %v with a deadline of %v", took, deadline)
	}
	if r.code != 0 {
		t.Errorf("exit status %d", r.code)
	}
	return r
}

// An agent holding the audit lock must not make the hook wait past its
// deadline: where DES is in charge (a commit of a step file, which Gate 3
// must record before it allows it) the hook denies with DES-INTERNAL naming
// the lock; elsewhere it gives no opinion at once.
func TestE2EHeldAuditLockEndsAtTheDeadline(t *testing.T) {
	testenv.Long(t) // seconds of sleeps and processes: CI runs it (DES_TEST_LONG=1)
	root := gitProject(t)
	writeFile(t, root, stepPath, finishedStep(t, "EXECUTED"))
	git(t, root, "add", stepPath)
	lock := filepath.Join(root, ".des", "audit", ".lock")
	holdLock(t, lock)

	r := timedRun(t, root, 1500*time.Millisecond, bashEvent(t, root, "git commit -m step"))
	reason := denyReason(t, r)
	for _, want := range []string{"[DES-INTERNAL] ", lock, "held by another process", "Recovery:"} {
		if !strings.Contains(reason, want) {
			t.Errorf("reason lacks %q:\n%s\nstderr %s", want, reason, r.stderr)
		}
	}
	// A command that is none of DES's business does not wait on the lock.
	if r := timedRun(t, root, 1500*time.Millisecond, bashEvent(t, root, "ls -la")); r.stdout != "" {
		t.Errorf("ls: want no opinion, got %s", r.stdout)
	}
}

// With the default deadline (20 s) a held audit lock costs a few seconds,
// not the whole deadline: appends take milliseconds, so des stops waiting
// after audit.LockWait.
func TestE2EHeldAuditLockWaitIsBounded(t *testing.T) {
	testenv.Long(t) // it waits out the lock's bound
	root := gitProject(t)
	writeFile(t, root, stepPath, finishedStep(t, "EXECUTED"))
	git(t, root, "add", stepPath)
	lock := filepath.Join(root, ".des", "audit", ".lock")
	holdLock(t, lock)
	start := time.Now()
	r := runHookProcess(t, root, nil, bashEvent(t, root, "git commit -m step"))
	if took := time.Since(start); took > audit.LockWait+5*time.Second {
		t.Errorf("the hook took %v with the audit lock held; want about %v", took, audit.LockWait)
	}
	if reason := denyReason(t, r); !strings.Contains(reason, "[DES-INTERNAL]") || !strings.Contains(reason, "held by another process") {
		t.Errorf("reason: %s", reason)
	}
}

// A writer that never closes stdin: the hook gives no opinion (it cannot
// know the event, so DES is not in charge) and exits 0 by the deadline.
func TestE2EStdinNeverClosed(t *testing.T) {
	testenv.Long(t) // seconds of sleeps and processes: CI runs it (DES_TEST_LONG=1)
	root := t.TempDir()
	deadline := 1500 * time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, hookBin)
	cmd.Env = append(slices.Clip(cleanEnviron()), "CLAUDE_PROJECT_DIR="+root, "DES_HOOK_DEADLINE_MS="+itoa(int(deadline/time.Millisecond)))
	cmd.Dir = root
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ev, _ := json.Marshal(bashEvent(t, root, "echo {} > .des/config.json"))
	if _, err := in.Write(ev); err != nil { // the whole event, but no EOF
		t.Fatal(err)
	}
	err = cmd.Wait()
	took := time.Since(start)
	if err != nil || took > deadline+5*time.Second {
		t.Fatalf("hook: %v after %v (deadline %v); stderr %s", err, took, deadline, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout %q, want no opinion", stdout.String())
	}
	if !strings.Contains(stderr.String(), "stdin not closed") {
		t.Errorf("stderr does not say why: %s", stderr.String())
	}
}

// Gate 2 with the audit lock held: the stop is still judged and answered by
// the deadline, and the message names the lock it could not take.
func TestE2EHeldAuditLockAtSubagentStop(t *testing.T) {
	testenv.Long(t) // seconds of sleeps and processes: CI runs it (DES_TEST_LONG=1)
	root, transcript, env := gate2Project(t)
	completeAroundTheGuard(t, root)
	holdLock(t, filepath.Join(root, ".des", "audit", ".lock"))
	start := time.Now()
	out := decodeStop(t, runHookProcess(t, root, append(env, "DES_HOOK_DEADLINE_MS=1500"), stopEvent(root, transcript, false)))
	if took := time.Since(start); took > 1500*time.Millisecond+5*time.Second {
		t.Errorf("the hook took %v", took)
	}
	for _, want := range []string{"[DES-PHASE-JUMP]", "held by another process", ".des/audit/.lock"} {
		if !strings.Contains(out.SystemMessage, want) {
			t.Errorf("systemMessage lacks %q:\n%s", want, out.SystemMessage)
		}
	}
}
