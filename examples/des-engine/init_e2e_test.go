package main

import (
	"bytes"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// TestE2EInitWork checks that des's packages do next to nothing at
// initialisation, which every hook process pays whatever the event: tables
// and regular expressions are built on first use (sync.OnceValue). The
// bound is the number of allocations GODEBUG=inittrace=1 reports per
// package; a package-level regexp.MustCompile of a real pattern exceeds it.
func TestE2EInitWork(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	cmd := exec.Command(engineBin) // the in-process path: des-engine is what pays for init
	cmd.Env = append(cleanEnviron(), "CLAUDE_PROJECT_DIR="+root, "GODEBUG=inittrace=1")
	cmd.Dir, cmd.Stdin = root, bytes.NewReader([]byte(`{"hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{}}`))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("run hook: %v\n%s", err, stderr.String())
	}
	const maxAllocs = 100
	line := regexp.MustCompile(`(?m)^init (github\.com/deterministic-exec/des\S*|main) @.* ([0-9]+) bytes, ([0-9]+) allocs$`)
	found := 0
	for _, m := range line.FindAllStringSubmatch(stderr.String(), -1) {
		found++
		if n, _ := strconv.Atoi(m[3]); n > maxAllocs {
			t.Errorf("package %s allocates %s times (%s bytes) at init, over %d: build its tables on first use", m[1], m[3], m[2], maxAllocs)
		}
	}
	if found == 0 {
		t.Fatalf("no init trace of des's packages in stderr:\n%s", stderr.String())
	}
}
