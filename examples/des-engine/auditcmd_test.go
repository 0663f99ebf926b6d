package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/internal/statedir"
)

// The hook writes the trail; `hook audit verify`, run as a process, finds
// it intact, then names the line edited by hand.
func TestE2EAuditVerify(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, file := range []string{".des/policies/a.rego", ".des/config.json", ".des/policies/b.rego"} {
		if reason := denyReason(t, runHookProcess(t, root, nil, writeEvent(root, "Write", file))); reason == "" {
			t.Fatalf("write to %s allowed", file)
		}
	}
	days, err := filepath.Glob(filepath.Join(root, ".des", "audit", "audit-*.log"))
	if err != nil || len(days) != 1 {
		t.Fatalf("day files %v, %v", days, err)
	}
	ok := runBinCLI(t, root, "audit", "verify")
	if ok.code != 0 || ok.stdout != "audit trail intact: 3 lines in 1 file\nanchored: the trail holds the 2 heads recorded in the decision log and git notes (up to seq 2)\n" || ok.stderr != "" { // witnessed, at its end; anchored by the decision log
		t.Fatalf("intact trail: %+v", ok)
	}

	data, err := os.ReadFile(days[0])
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	lines[1] = strings.Replace(lines[1], "config.json", "config.yaml", 1)
	if err := os.WriteFile(days[0], []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	rel := filepath.Join(".des", "audit", filepath.Base(days[0]))
	bad := runBinCLI(t, root, "audit", "verify")
	want := regexp.MustCompile(`^audit trail broken: ` + regexp.QuoteMeta(rel) + `:2: edited: this line hashes to [0-9a-f]{64}, but the next line \(seq 3\) records prev [0-9a-f]{64}: this line was changed\n$`)
	if bad.code != 1 || !want.MatchString(bad.stdout) {
		t.Errorf("edited line: %+v\nwant stdout matching %s", bad, want)
	}
	// --dir names the trail, and the report names files under it.
	other := runBinCLI(t, t.TempDir(), "audit", "verify", "--dir", filepath.Dir(days[0]))
	if other.code != 1 || !strings.HasPrefix(other.stdout, "audit trail broken: "+days[0]+":2: edited: ") {
		t.Errorf("--dir: %+v", other)
	}
}

func TestAuditVerifyCommand(t *testing.T) {
	root := t.TempDir()
	trail := filepath.Join(root, ".des", "audit")
	if err := os.MkdirAll(trail, 0o755); err != nil {
		t.Fatal(err)
	}
	legacy := `{"timestamp":"2026-03-14T10:00:00Z","event":"HOOK_ERROR","error":"old"}` + "\n"
	if err := os.WriteFile(filepath.Join(trail, "audit-2026-03-14.log"), []byte(legacy+legacy), 0o644); err != nil {
		t.Fatal(err)
	}
	env := envMap{"CLAUDE_PROJECT_DIR": root, "DES_STATE_DIR": t.TempDir()}
	for _, tc := range []struct {
		name   string
		env    envMap
		args   []string
		code   int
		stdout string
		stderr string // a part of stderr
	}{
		{"unchained lines", env, []string{"audit", "verify"}, 0,
			"audit trail intact: 2 lines in 1 file (the first 2 lines predate the hash chain; only the last of them is covered)\nnot witnessed: the trail has no chained line yet; its head will be witnessed in " + statedir.AuditWitness(env.lookup), ""},
		{"empty directory", env, []string{"audit", "verify", "--dir", t.TempDir()}, 0, "audit trail intact: 0 lines in 0 files\nnot witnessed: ", ""},
		{"adopt, no chained line", env, []string{"audit", "verify", "--adopt"}, 0,
			"audit trail intact: 2 lines in 1 file (the first 2 lines predate the hash chain; only the last of them is covered)\nnot witnessed: the trail has no chained line yet; its head will be witnessed in " + audit.WitnessPath(statedir.AuditWitness(env.lookup), trail) + " from the first append\n", ""},
		{"configured directory", envMap{"CLAUDE_PROJECT_DIR": root, "DES_AUDIT_DIR": "elsewhere", "DES_STATE_DIR": t.TempDir()}, []string{"audit", "verify"}, 2, "",
			"des-hook audit verify: no audit trail at elsewhere: no such directory"},
		{"missing --dir", env, []string{"audit", "verify", "--dir", filepath.Join(root, "nope")}, 2, "", "no audit trail at " + filepath.Join(root, "nope")},
		{"bad setting", envMap{"CLAUDE_PROJECT_DIR": root, "DES_AUDIT_LOG_RETENTION_DAYS": "0"}, []string{"audit", "verify"}, 2, "", "des-hook audit verify: "},
		{"bad flag", env, []string{"audit", "verify", "--bogus"}, 2, "", "usage: des-hook audit verify [--dir DIR]"},
		{"extra argument", env, []string{"audit", "verify", "x"}, 2, "", "unexpected arguments: x"},
		{"no subcommand", env, []string{"audit"}, 2, "", "usage: des-hook audit verify [--dir DIR]"},
		{"unknown subcommand", env, []string{"audit", "repair"}, 2, "", `unknown subcommand "repair"`},
		{"help", env, []string{"audit", "help"}, 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runCLI(t, tc.env, tc.args...)
			if res.code != tc.code || !strings.HasPrefix(res.stdout, tc.stdout) || !strings.Contains(res.stderr, tc.stderr) {
				t.Errorf("hook %s = %+v\nwant code %d, stdout %q, stderr with %q", strings.Join(tc.args, " "), res, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}

// The trail attacks of the issue, run against the trail the built hook
// wrote: each leaves a valid chain, and `hook audit verify` exits 1 naming
// the witness it disagrees with.
func TestE2EAuditWitness(t *testing.T) {
	newTrail := func(t *testing.T, n int) (root, dir string) {
		root = t.TempDir()
		for i := range n {
			if denyReason(t, runHookProcess(t, root, nil, writeEvent(root, "Write", fmt.Sprintf(".des/policies/p%d.rego", i)))) == "" {
				t.Fatal("protected write allowed")
			}
		}
		if ok := runBinCLI(t, root, "audit", "verify"); ok.code != 0 {
			t.Fatalf("fresh trail: %+v", ok)
		}
		return root, filepath.Join(root, ".des", "audit")
	}
	broken := func(t *testing.T, root, want string) {
		t.Helper()
		r := runBinCLI(t, root, "audit", "verify")
		if r.code != 1 || !strings.Contains(r.stdout, ": witness: ") || !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, "--adopt") {
			t.Errorf("verify = %+v, want exit 1 with a witness break saying %q", r, want)
		}
	}
	t.Run("adopt a trail with no chained line", func(t *testing.T) {
		root := t.TempDir()
		writeFile(t, root, ".des/audit/audit-2026-03-14.log", `{"timestamp":"2026-03-14T10:00:00Z","event":"HOOK_ERROR","error":"old"}`+"\n")
		r := runBinCLI(t, root, "audit", "verify", "--adopt")
		_, where, _ := strings.Cut(r.stdout, "its head will be witnessed in ")
		where, _, _ = strings.Cut(where, " from the first append")
		if r.code != 0 || !filepath.IsAbs(where) || !strings.HasPrefix(where, testStateDir) {
			t.Errorf("verify --adopt = %+v, want the witness's path in %s", r, testStateDir)
		}
	})
	t.Run("find -type f -delete", func(t *testing.T) {
		root, dir := newTrail(t, 3)
		if out, err := exec.Command("find", dir, "-type", "f", "-delete").CombinedOutput(); err != nil {
			t.Skipf("find: %v %s", err, out)
		}
		broken(t, root, "the trail was deleted")
		// A hook event afterwards starts a new chain; the witness does not follow it.
		runHookProcess(t, root, nil, writeEvent(root, "Write", ".des/policies/x.rego"))
		broken(t, root, "the trail ends at seq 1, but the witness")
	})
	t.Run("end cut and head rewritten", func(t *testing.T) {
		root, dir := newTrail(t, 4)
		days, _ := filepath.Glob(filepath.Join(dir, "audit-*.log"))
		data, _ := os.ReadFile(days[0])
		lines := strings.SplitAfter(string(data), "\n")
		kept := strings.Join(lines[:2], "")
		os.WriteFile(days[0], []byte(kept), 0o644)
		sum := sha256.Sum256([]byte(lines[1]))
		head := fmt.Sprintf(`{"seq":2,"sha256":"%x","file":"%s","size":%d}`+"\n", sum, filepath.Base(days[0]), len(kept))
		os.WriteFile(filepath.Join(dir, ".head"), []byte(head), 0o644)
		if r := runBinCLI(t, root, "audit", "verify", "--dir", dir); r.code != 1 {
			t.Errorf("verify --dir: %+v", r)
		}
		broken(t, root, "the trail ends at seq 2, but the witness")
	})
	t.Run("rewritten from line 1", func(t *testing.T) {
		root, dir := newTrail(t, 2)
		other, _ := newTrail(t, 2) // same events, another project: a valid chain of two lines
		os.RemoveAll(dir)
		if err := os.Rename(filepath.Join(other, ".des", "audit"), dir); err != nil {
			t.Fatal(err)
		}
		broken(t, root, "seq 2 hashes to")
		// The person who did it adopts the new trail on purpose.
		if r := runBinCLI(t, root, "audit", "verify", "--adopt"); r.code != 0 || !strings.Contains(r.stdout, "witnessed: seq 2") {
			t.Errorf("--adopt: %+v", r)
		}
		if r := runBinCLI(t, root, "audit", "verify"); r.code != 0 {
			t.Errorf("after --adopt: %+v", r)
		}
	})
}
