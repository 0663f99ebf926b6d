package main

// A security review's attacks, end to end through the built hook: what an
// agent does from Bash to DES's own state (its last good copies, the audit
// witness) rather than to the files DES guards. Each test states the
// effect on disk it must not leave.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	t.Parallel()
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

// reviewStateDirAttacks change .des/config.json from Python (its name
// spelled apart, so only the check after the call can see it) after
// tampering with DES's per-user state directory, where the effect check
// keeps its baseline, its last good copies, its announced writes and its
// calls in flight. Each must leave .des/config.json as it was.
var reviewStateDirAttacks = []struct{ name, cmd string }{
	{"state directory removed", `python3 -c 'import shutil,os; shutil.rmtree(os.environ["DES_STATE_DIR"]); WRITE'`},
	{"baseline made unreadable", `python3 -c 'import glob,os; [open(f,"w").write("x") for f in glob.glob(os.environ["DES_STATE_DIR"]+"/projects/*/integrity/manifest.json")]; WRITE'`},
	{"baseline rewritten", `python3 -c 'import glob,os,json; f=glob.glob(os.environ["DES_STATE_DIR"]+"/projects/*/integrity/manifest.json")[0]; m=json.load(open(f)); m["entries"].pop(".des/config.json",None); m["watch"]["config_file"]="x"; json.dump(m,open(f,"w")); WRITE'`},
	{"last good copies removed", `python3 -c 'import glob,os,shutil; [shutil.rmtree(d) for d in glob.glob(os.environ["DES_STATE_DIR"]+"/projects/*/integrity/objects")]; WRITE'`},
	{"allowed write forged", `python3 -c 'import glob,os,hashlib; d=glob.glob(os.environ["DES_STATE_DIR"]+"/projects/*/integrity")[0]; k=hashlib.sha256(b".des/config.json").hexdigest()[:24]; s=hashlib.sha256(b"{}").hexdigest(); os.makedirs(d+"/expect",exist_ok=True); open(d+"/expect/"+k+"-"+s,"w").write("x"); WRITE'`},
	{"state directory swapped for a link", `python3 -c 'import glob,os; d=glob.glob(os.environ["DES_STATE_DIR"]+"/projects/*")[0]; os.rename(d, d+".old"); os.symlink("/nonexistent", d); WRITE'`},
}

// TestReviewStateDirTampered is a bypass DES cannot close by itself: the
// state directory belongs to the user the agent's commands run as, so a
// command DES cannot read ahead of time (here Python) can remove or
// rewrite the baseline together with the file it changes. The write guard
// denies every write to the state directory it can name; only Claude
// Code's sandbox (the filesystem.denyWrite `hook settings` prints, which
// lists the state directory) keeps a Bash command out of it whatever it
// runs. Set DES_REVIEW_KNOWN_BYPASSES=1 to run it.
func TestReviewStateDirTampered(t *testing.T) {
	t.Parallel()
	if os.Getenv("DES_REVIEW_KNOWN_BYPASSES") == "" {
		t.Skip("known limit: the agent's user can write DES's per-user state directory; only Claude Code's sandbox (denyWrite) prevents it (DES_REVIEW_KNOWN_BYPASSES=1 runs it)")
	}
	tmpl := newAtkProject(t, false)
	for _, a := range reviewStateDirAttacks {
		t.Run(a.name, func(t *testing.T) {
			p := tmpl.fresh(t, false)
			p.bash(t, "", "true")
			s0 := p.snapshot(t)
			c := p.bash(t, "", strings.ReplaceAll(a.cmd, "WRITE", reviewWrite))
			if c.denied != "" {
				return
			}
			p.bash(t, "", "true") // the next call: its PreToolUse takes the disk as the baseline
			s0.mustEqual(t, p.snapshot(t), a.name)
		})
	}
}

// TestReviewWitnessProtected: the audit trail's witness is kept in the
// per-user state directory beside (not in) the project's own state. A
// command that removes it, then the trail, leaves a trail that verifies as
// "not witnessed" (exit 0). Removing it must be denied like any write to
// DES's state, and Claude Code must deny it to the file tools.
func TestReviewWitnessProtected(t *testing.T) {
	t.Parallel()
	p := newAtkProject(t, true)
	witness, _ := filepath.Glob(filepath.Join(p.stateDir, "audit-witness", "*"))
	if len(witness) == 0 {
		t.Fatalf("no witness under %s", p.stateDir)
	}
	for _, cmd := range []string{
		`rm -rf "$DES_STATE_DIR/audit-witness"`,
		`rm -f "$DES_STATE_DIR"/audit-witness/*`,
		`echo '{}' > ` + witness[0],
	} {
		c := p.bash(t, "", cmd)
		if !hasCode(c.denied, "DES-PROTECTED-PATH") {
			t.Errorf("not denied with DES-PROTECTED-PATH: %s (%.200q)", cmd, c.denied)
		}
	}
	if _, err := os.Stat(witness[0]); err != nil {
		t.Fatalf("the witness is gone: %v", err)
	}
	settings := p.cli(t, "settings")
	want := filepath.Join(p.stateDir, "audit-witness")
	// The file tools are denied it; sandboxed Bash is not, since the
	// pre-commit hook a sandboxed `git commit` runs moves the witness on.
	if !strings.Contains(settings.stdout, `"Edit(/`+want+`/**)"`) {
		t.Errorf("`hook settings` does not deny the file tools the witness directory %s:\n%s", want, settings.stdout)
	}
}

// TestReviewCallThatNeverEnded: the agent's command changes a protected
// file and kills what would send its PostToolUse (Claude Code itself, say
// `kill -9 $PPID`); the next session's first call comes once the call's
// recorded lifetime has passed. That call must not take the change as a
// hand edit made between calls: nothing ever checked the call that made it.
func TestReviewCallThatNeverEnded(t *testing.T) {
	t.Parallel()
	p := newAtkProject(t, false)
	p.bash(t, "", "true")
	s0 := p.snapshot(t)
	ev := bashEvent(t, p.root, `python3 -c '`+reviewWrite+`'; kill -9 $PPID`)
	ev["tool_use_id"] = p.toolUseID()
	if reason := p.pre(t, ev); reason != "" {
		t.Fatalf("denied: %s", reason)
	}
	p.run(t, p.root, `python3 -c '`+reviewWrite+`'`) // what ran; no PostToolUse follows
	// The call's lifetime passes (its record's time is when it expires).
	recs, _ := filepath.Glob(filepath.Join(p.stateDir, "projects", "*", "integrity", "inflight", "*"))
	if len(recs) != 1 {
		t.Fatalf("calls in flight: %v", recs)
	}
	past := time.Now().Add(-time.Second)
	if err := os.Chtimes(recs[0], past, past); err != nil {
		t.Fatal(err)
	}
	c := p.bash(t, "", "true")
	if !strings.Contains(c.post.stdout, "DES-INTEGRITY") {
		t.Errorf("the next call did not report the change: %.300q", c.post.stdout)
	}
	s0.mustEqual(t, p.snapshot(t), "after the next call")
}

// TestReviewForkedWriterBetweenCalls is a known limit: a command that
// leaves a process behind without any word DES reads as backgrounding
// ("&", nohup, setsid, disown, ...: here Python's os.fork) ends, its
// PostToolUse finds nothing changed, and the process writes before the
// next call starts. That call takes the disk as the new baseline, as it
// must for a person's hand edit, which DES cannot tell apart. Claude Code's
// sandbox (denyWrite) stops the write itself. Set
// DES_REVIEW_KNOWN_BYPASSES=1 to run it.
func TestReviewForkedWriterBetweenCalls(t *testing.T) {
	t.Parallel()
	if os.Getenv("DES_REVIEW_KNOWN_BYPASSES") == "" {
		t.Skip("known limit: a process left running that writes between two calls looks like a hand edit; only Claude Code's sandbox (denyWrite) prevents it (DES_REVIEW_KNOWN_BYPASSES=1 runs it)")
	}
	p := newAtkProject(t, false)
	p.bash(t, "", "true")
	s0 := p.snapshot(t)
	p.bash(t, "", `python3 -c 'import os,time; os.fork() and os._exit(0); time.sleep(1); `+reviewWrite+`'`)
	time.Sleep(2 * time.Second) // the model thinks
	p.bash(t, "", "true")
	s0.mustEqual(t, p.snapshot(t), "after the next call")
}
