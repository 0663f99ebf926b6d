package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/audit"
)

// bashEvent is a real PreToolUse Bash payload (the corpus's curated
// PreToolUse_Bash_main.json shape), with its command and cwd replaced.
func bashEvent(t testing.TB, cwd, command string) map[string]any {
	t.Helper()
	ev := bashEv("PreToolUse", cwd, command, evSession(atkSession), evTranscript("/home/dev/.claude/projects/shop/"+atkSession+".jsonl"),
		evMode("auto"), evFields(map[string]any{"effort": map[string]any{"level": "high"}}),
		evInput(map[string]any{"description": "Commit the step"}), evToolUseID("toolu_01SMPjintukLK9BA6JH8oQ7d"))
	if raw, err := os.ReadFile(filepath.Join(corpusDir, "curated", "PreToolUse_Bash_in_subagent.json")); err == nil {
		// When the corpus is here, start from the real payload instead.
		var real map[string]any
		if err := json.Unmarshal(raw, &real); err != nil {
			t.Fatal(err)
		}
		real["cwd"] = cwd
		real["tool_input"].(map[string]any)["command"] = command
		ev = real
	}
	return ev
}

// heredocCommit is how Claude Code writes a commit message.
const heredocCommit = `git commit -m "$(cat <<'EOF'
feat(cart): total rounds half-even

Co-Authored-By: Claude <noreply@anthropic.com>
EOF
)"`

func TestE2EGitCommitRunsGate3(t *testing.T) {
	t.Parallel()
	root := gitProject(t)
	unfinished := finishedStep(t, "IN_PROGRESS")
	cases := []struct {
		name    string
		setup   func(t *testing.T)
		command string
		cwd     string
		want    []string // deny reason must contain each; nil: no opinion
	}{
		{"staged unfinished step", func(t *testing.T) {
			writeFile(t, root, stepPath, unfinished)
			git(t, root, "add", stepPath)
		}, heredocCommit, "", []string{"[DES-COMMIT-PHASE-OPEN] " + stepPath + ": phase COMMIT is IN_PROGRESS", "\nRecovery:\n- "}},
		{"added in the same command", func(t *testing.T) {
			writeFile(t, root, stepPath, unfinished)
		}, "git add " + stepPath + " src/cart.go && " + heredocCommit, "", []string{"[DES-COMMIT-PHASE-OPEN] " + stepPath}},
		{"commit -am", func(t *testing.T) {
			writeFile(t, root, stepPath, finishedStep(t, "EXECUTED"))
			git(t, root, "add", stepPath)
			git(t, root, "commit", "-qm", "finished")
			writeFile(t, root, stepPath, unfinished)
		}, `git commit -am "wip"`, "", []string{"[DES-COMMIT-PHASE-OPEN]"}},
		{"amend, after cd, multi-line", func(t *testing.T) {
			writeFile(t, root, stepPath, unfinished)
			git(t, root, "add", stepPath)
		}, "cd " + root + "/docs\ngit status --short\ngit commit --amend --no-edit", "/", []string{"[DES-COMMIT-PHASE-OPEN]"}},
		{"git -C from another cwd", func(t *testing.T) {
			writeFile(t, root, stepPath, unfinished)
			git(t, root, "add", stepPath)
		}, "git -C " + root + " commit -m x; echo done", "/tmp", []string{"[DES-COMMIT-PHASE-OPEN]"}},
		{"finished step: no opinion", func(t *testing.T) {
			writeFile(t, root, stepPath, finishedStep(t, "EXECUTED"))
			git(t, root, "add", stepPath)
		}, heredocCommit, "", nil},
		{"no step file in the commit: no opinion", func(t *testing.T) {
			writeFile(t, root, stepPath, unfinished) // changed, but not committed
			writeFile(t, root, "src/cart.go", "package cart // v2\n")
		}, "git add src/cart.go && git commit -m x", "", nil},
		{"commit-tree is not a commit", func(t *testing.T) {
			writeFile(t, root, stepPath, unfinished)
			git(t, root, "add", stepPath)
		}, "git commit-tree HEAD^{tree} -m x", "", nil},
		{"dry run", func(t *testing.T) {
			writeFile(t, root, stepPath, unfinished)
			git(t, root, "add", stepPath)
		}, "git commit --dry-run", "", nil},
		{"with a Bash write to DES's files: both listed", func(t *testing.T) {
			writeFile(t, root, stepPath, unfinished)
			git(t, root, "add", stepPath)
		}, "echo '{}' > .des/config.json && git commit -m x", "", []string{"[DES-PROTECTED-PATH] ", "[DES-COMMIT-PHASE-OPEN] "}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resetRepo(t, root)
			c.setup(t)
			cwd := root
			if c.cwd != "" {
				cwd = c.cwd
			}
			before := len(commitEntries(t, root))
			r := runHookProcess(t, root, nil, bashEvent(t, cwd, c.command))
			reason := denyReason(t, r)
			if c.want == nil {
				if r.stdout != "" {
					t.Errorf("want no opinion, got %s\nstderr %s", r.stdout, r.stderr)
				}
				return
			}
			for _, w := range c.want {
				if !strings.Contains(reason, w) {
					t.Errorf("reason lacks %q:\n%s\nstderr %s", w, reason, r.stderr)
				}
			}
			if !strings.Contains(c.name, "Bash write") {
				entries := commitEntries(t, root)[before:]
				if len(entries) != 1 || entries[0].Event != audit.CommitValidationFailed || entries[0].Fields["source"] != "claude-code" ||
					entries[0].Fields["tool_use_id"] == "" || entries[0].Fields["session_id"] == "" {
					t.Errorf("audit %+v", entries)
				}
			}
		})
	}
}

// resetRepo puts the repository back to its last commit, untracked files
// removed, DES's directory kept.
func resetRepo(t *testing.T, root string) {
	t.Helper()
	git(t, root, "reset", "-q", "--hard")
	git(t, root, "clean", "-qfd")
}

// DES is in charge when the commit holds step files: an internal error
// there denies with DES-INTERNAL; elsewhere it gives no opinion.
func TestE2EGitCommitFailsClosedWhereInCharge(t *testing.T) {
	t.Parallel()
	root := gitProject(t)
	writeFile(t, root, "src/cart.go", "package cart\n")
	git(t, root, "add", "src")
	bad := []string{"DES_STALE_THRESHOLD_MINUTES=soon"}
	if r := runHookProcess(t, root, bad, bashEvent(t, root, "git commit -m x")); r.stdout != "" || r.code != 0 {
		t.Errorf("no step file, bad setting: want no opinion, got %q", r.stdout)
	}
	writeFile(t, root, stepPath, finishedStep(t, "EXECUTED"))
	git(t, root, "add", stepPath)
	reason := denyReason(t, runHookProcess(t, root, bad, bashEvent(t, root, "git commit -m x")))
	if !strings.HasPrefix(reason, "[DES-INTERNAL] ") || !strings.Contains(reason, "stale_threshold_minutes") {
		t.Errorf("bad setting with a step file: reason %q", reason)
	}
	writeFile(t, root, ".des/audit/audit-2026-11-20.log", "torn line without newline")
	reason = denyReason(t, runHookProcess(t, root, nil, bashEvent(t, root, "git commit -m x")))
	if !strings.HasPrefix(reason, "[DES-INTERNAL] ") || !strings.Contains(reason, "audit-2026-11-20.log") {
		t.Errorf("malformed audit trail: reason %q", reason)
	}
	// A staged step file too large to read is still a step file of the commit.
	if err := os.Remove(filepath.Join(root, ".des", "audit", "audit-2026-11-20.log")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, stepPath, `{"task_id": "01-02", "padding": "`+strings.Repeat("x", 17<<20)+`"}`)
	git(t, root, "add", stepPath)
	reason = denyReason(t, runHookProcess(t, root, nil, bashEvent(t, root, "git commit -m x")))
	if !strings.HasPrefix(reason, "[DES-INTERNAL] ") || !strings.Contains(reason, "cannot be read") {
		t.Errorf("oversized staged step file: reason %q", reason)
	}
}
