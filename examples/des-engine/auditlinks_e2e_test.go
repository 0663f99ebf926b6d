//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Claude Code's sandbox lets Bash write the audit directory (a git commit
// appends to it). An agent that puts a link there, to a file of the user's
// outside the project, must not get DES, which runs outside the sandbox, to
// write that file: not the head record's rewrite, not a day file's append
// (whose lines carry text the agent chose), not the lock.
func TestE2EAuditWritesThroughNoLink(t *testing.T) {
	t.Parallel()
	for _, at := range []string{".head", ".lock", "today's day file", ".des/audit", ".des"} {
		t.Run(at, func(t *testing.T) {
			root := t.TempDir()
			deny := writeEvent(root, "Write", ".des/policies/relax.rego")
			if reason := denyReason(t, runHookProcess(t, root, nil, deny)); !strings.Contains(reason, "[DES-PROTECTED-PATH]") {
				t.Fatalf("reason = %q, want DES-PROTECTED-PATH", reason)
			}
			days, _ := filepath.Glob(filepath.Join(root, ".des/audit/audit-*.log"))
			if len(days) != 1 {
				t.Fatalf("day files after an audited deny: %v", days)
			}
			outside := t.TempDir()
			victim := filepath.Join(outside, "bashrc")
			const content = "export PATH=$HOME/bin:$PATH\n"
			writeFile(t, outside, "bashrc", content)
			link, target := filepath.Join(root, ".des/audit", at), victim
			switch at {
			case "today's day file":
				link = days[0]
			case ".des/audit", ".des":
				link, target = filepath.Join(root, at), outside
			}
			if err := os.RemoveAll(link); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			// Whatever the trail's state, the write stays denied.
			if reason := denyReason(t, runHookProcess(t, root, nil, deny)); reason == "" {
				t.Error("the protected write was allowed once the trail was linked away")
			}
			if got, err := os.ReadFile(victim); err != nil || string(got) != content {
				t.Errorf("the file the link points to: %q %v, want it untouched", got, err)
			}
			entries, _ := os.ReadDir(outside)
			for _, e := range entries {
				if e.Name() != "bashrc" {
					t.Errorf("DES created %s through the link", filepath.Join(outside, e.Name()))
				}
			}
		})
	}
}

// The agent moves the trail aside and links .des/audit (or .des) to an
// empty directory: DES then records nothing (each append refuses the
// link), and `audit verify`, the check a person runs, must not report the
// trail intact by checking the directory the link points to.
func TestE2EAuditVerifyRefusesLinkedTrail(t *testing.T) {
	t.Parallel()
	for _, at := range []string{".des/audit", ".des"} {
		t.Run(at, func(t *testing.T) {
			root := t.TempDir()
			deny := writeEvent(root, "Write", ".des/policies/relax.rego")
			if reason := denyReason(t, runHookProcess(t, root, nil, deny)); reason == "" {
				t.Fatal("protected write allowed")
			}
			empty := t.TempDir()
			if at == ".des" {
				if err := os.MkdirAll(filepath.Join(empty, "audit"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			link := filepath.Join(root, at)
			if err := os.Rename(link, link+".moved"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(empty, link); err != nil {
				t.Fatal(err)
			}
			denyReason(t, runHookProcess(t, root, nil, deny)) // not recorded
			res := runBinCLI(t, root, "audit", "verify")
			if res.code == 0 || !strings.Contains(res.stdout+res.stderr, "remove it") {
				t.Errorf("audit verify with %s linked to an empty directory: %+v, want a failure that says to remove the link", at, res)
			}
			// The way out: the link removed, the trail put back.
			if err := os.Remove(link); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(link+".moved", link); err != nil {
				t.Fatal(err)
			}
			if res := runBinCLI(t, root, "audit", "verify"); res.code != 0 {
				t.Errorf("audit verify once the trail is back: %+v", res)
			}
			denyReason(t, runHookProcess(t, root, nil, deny))
			if res := runBinCLI(t, root, "audit", "verify"); res.code != 0 || !strings.Contains(res.stdout, "intact: 2 lines") {
				t.Errorf("audit verify after the next recorded deny: %+v", res)
			}
		})
	}
}
