package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The hook writes the trail; `hook audit verify`, run as a process, finds
// it intact, then names the line edited by hand.
func TestE2EAuditVerify(t *testing.T) {
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
	if ok.code != 0 || ok.stdout != "audit trail intact: 3 lines in 1 file\n" || ok.stderr != "" {
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
	env := envMap{"CLAUDE_PROJECT_DIR": root}
	for _, tc := range []struct {
		name   string
		env    envMap
		args   []string
		code   int
		stdout string
		stderr string // a part of stderr
	}{
		{"unchained lines", env, []string{"audit", "verify"}, 0,
			"audit trail intact: 2 lines in 1 file (the first 2 lines predate the hash chain; only the last of them is covered)\n", ""},
		{"empty directory", env, []string{"audit", "verify", "--dir", t.TempDir()}, 0, "audit trail intact: 0 lines in 0 files\n", ""},
		{"configured directory", envMap{"CLAUDE_PROJECT_DIR": root, "DES_AUDIT_DIR": "elsewhere"}, []string{"audit", "verify"}, 2, "",
			"hook audit verify: no audit trail at elsewhere: no such directory"},
		{"missing --dir", env, []string{"audit", "verify", "--dir", filepath.Join(root, "nope")}, 2, "", "no audit trail at " + filepath.Join(root, "nope")},
		{"bad setting", envMap{"CLAUDE_PROJECT_DIR": root, "DES_AUDIT_LOG_RETENTION_DAYS": "0"}, []string{"audit", "verify"}, 2, "", "hook audit verify: "},
		{"bad flag", env, []string{"audit", "verify", "--bogus"}, 2, "", "usage: hook audit verify [--dir DIR]"},
		{"extra argument", env, []string{"audit", "verify", "x"}, 2, "", "unexpected arguments: x"},
		{"no subcommand", env, []string{"audit"}, 2, "", "usage: hook audit verify [--dir DIR]"},
		{"unknown subcommand", env, []string{"audit", "repair"}, 2, "", `unknown subcommand "repair"`},
		{"help", env, []string{"audit", "help"}, 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runCLI(t, tc.env, tc.args...)
			if res.code != tc.code || (tc.stdout != "" && res.stdout != tc.stdout) || !strings.Contains(res.stderr, tc.stderr) {
				t.Errorf("hook %s = %+v\nwant code %d, stdout %q, stderr with %q", strings.Join(tc.args, " "), res, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}
