//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// .des/decisions is writable by sandboxed Bash (a sandboxed git commit's
// pre-commit hook appends to it): a named pipe made where today's log goes
// must not hold the hook, which opened it for writing and waited for a
// reader that never comes, on every event, until Claude Code's timeout.
func TestAttack2DecisionLogPipeNeverHoldsTheHook(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, root, ".des/config.json", `{"decision_log": "on"}`)
	dir := filepath.Join(root, ".des", "decisions")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Time{time.Now().UTC(), time.Now().UTC().Add(time.Minute)} {
		p := filepath.Join(dir, d.Format("2006-01-02")+".jsonl")
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skip("no named pipes here:", err)
		}
	}
	start := time.Now()
	r := runHookProcess(t, root, nil, writeEvent(root, "Edit", ".des/config.json"))
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("the hook took %s with a named pipe for a log file", took)
	}
	if reason := denyReason(t, r); !strings.HasPrefix(reason, "[DES-PROTECTED-PATH] ") {
		t.Errorf("an edit of .des/config.json with a named pipe for a log file: %q (stderr %s)", reason, r.stderr)
	}
}
