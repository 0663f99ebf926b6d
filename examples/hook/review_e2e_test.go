package main

// A security review's attacks, end to end through the built hook: what an
// agent does from Bash to DES's own state (its last good copies, the audit
// witness) rather than to the files DES guards. Each test states the
// effect on disk it must not leave.

import (
	"path/filepath"
	"strings"
	"testing"
)

// reviewHook is the command that runs DES, as the agent reads it from the
// project's .claude/settings.json.
const reviewHook = `H=$(sed -n 's/.*"command": *"\([^" ]*\).*/\1/p' .claude/settings.json | head -1); `

// reviewWrite rewrites .des/config.json from Python with its name spelled
// apart, so that no reading of the command ahead of time can name it: only
// the check after the call sees it.
const reviewWrite = `open(".d"+"es/conf"+"ig.json","w").write("{}")`

// TestReviewAdoptFromBash: `hook audit verify --adopt` witnesses the
// trail's current end. Run by the agent from Bash after it rewrote the
// trail (the audit directory is DES's to append to, so the check after the
// call does not restore it), it would make the rewritten trail verify.
func TestReviewAdoptFromBash(t *testing.T) {
	p := newAtkProject(t, true)
	for _, f := range []string{".des/policies/a.rego", ".des/config.json", ".des/policies/b.rego"} {
		if reason := p.pre(t, writeToolEvent(p.root, "Write", f, map[string]any{"content": "{}"})); reason == "" {
			t.Fatalf("write to %s allowed", f)
		}
	}
	days, _ := filepath.Glob(p.path(".des/audit/audit-*.log"))
	if len(days) != 1 {
		t.Fatalf("day files %v", days)
	}
	// The agent's earlier rewrite: the last two lines cut, .head fixed.
	lines := atkLines(t, days[0])
	atkWriteTrail(t, p, days[0], lines[:len(lines)-2])
	if v := p.verifyTrail(t); v.code != 1 {
		t.Fatalf("the cut trail verifies before any adopt: %+v", v)
	}
	for _, cmd := range []string{
		reviewHook + `$H audit verify --adopt`,
		reviewHook + `$H audit verify --adopt --dir "$PWD/.des/audit"`,
		reviewHook + `CLAUDE_PROJECT_DIR=/tmp $H audit verify --adopt --dir "$PWD/.des/audit"`,
		reviewHook + `cd /tmp && $H audit verify --adopt --dir "$OLDPWD/.des/audit"`,
	} {
		c := p.bash(t, "", cmd)
		if c.ran && c.exit == 0 {
			t.Errorf("the agent adopted its rewritten trail: %s\n%s", cmd, c.out)
		}
	}
	if v := p.verifyTrail(t); v.code != 1 {
		t.Errorf("after the agent's adopt the cut trail verifies: %+v", v)
	}
	// Between calls, the person who cut it can still adopt it.
	if r := p.cli(t, "audit", "verify", "--adopt"); r.code != 0 || !strings.Contains(r.stdout, "witnessed") {
		t.Errorf("a person's adopt between calls: %+v", r)
	}
}
