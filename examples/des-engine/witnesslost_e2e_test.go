package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The audit witness deleted (the state directory's audit-witness/ removed)
// and the trail rewritten from its first line: the hook's next event does
// not witness the rewrite, and `des-hook audit verify` exits 1 saying the
// witness is gone since the last line des wrote before. Adopting the trail
// (a person, no call running) ends the finding.
func TestE2EAuditWitnessDeletedIsFound(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	state := filepath.Join(t.TempDir(), "state")
	env := []string{"DES_STATE_DIR=" + state, "CLAUDE_PROJECT_DIR=" + root}
	for _, f := range []string{".des/policies/relax.rego", ".des/config.json", ".des/audit/notes.log"} {
		if reason := denyReason(t, runHookProcess(t, root, env, writeEvent(root, "Write", f))); !strings.Contains(reason, "[DES-PROTECTED-PATH]") {
			t.Fatalf("write %s: %q", f, reason)
		}
	}
	if r := runSub(t, root, "", env, "audit", "verify"); r.code != 0 {
		t.Fatalf("before: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if err := os.RemoveAll(filepath.Join(state, "audit-witness")); err != nil {
		t.Fatal(err)
	}
	// Rewritten: the trail removed, and a new one begun by the next event.
	if err := os.RemoveAll(filepath.Join(root, ".des", "audit")); err != nil {
		t.Fatal(err)
	}
	runHookProcess(t, root, env, writeEvent(root, "Write", ".des/config.json"))
	r := runSub(t, root, "", env, "audit", "verify")
	if r.code != exitBroken || !strings.Contains(r.stdout, "witness: the witness is gone since line 3") {
		t.Fatalf("after the witness was deleted: exit %d, want 1 saying the witness is gone since line 3\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runSub(t, root, "", env, "audit", "verify", "--adopt"); r.code != 0 {
		t.Fatalf("adopt: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := runSub(t, root, "", env, "audit", "verify"); r.code != 0 {
		t.Fatalf("after adopting: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
