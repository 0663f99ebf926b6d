package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/internal/testenv"

	"github.com/deterministic-exec/des/internal/program"
	"github.com/deterministic-exec/des/internal/statedir"
)

// settingsWriteSetup is a project with settings of the user's own and a
// home directory with des-hook on PATH (a link to the built client, as
// ~/bin/des-hook often is).
type settingsWriteSetup struct {
	root, home, bin string
	env             []string
}

const userClaudeSettings = `{
  "model": "opus",
  "permissions": {
    "deny": ["Bash(rm -rf:*)"]
  },
  "hooks": {
    "PostToolUse": [
      {"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "prettier --write \"$CLAUDE_FILE\""}]}
    ]
  },
  "statusLine": {"type": "command", "command": "my-status"}
}
`

func newSettingsWriteSetup(t *testing.T) *settingsWriteSetup {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("links and exec bits")
	}
	s := &settingsWriteSetup{root: t.TempDir(), home: t.TempDir()}
	s.bin = filepath.Join(s.home, "bin")
	if err := os.MkdirAll(filepath.Join(s.root, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(s.bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("git", "init", "-q", s.root).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(s.root, ".claude", "settings.json"), []byte(userClaudeSettings), 0o644); err != nil {
		t.Fatal(err)
	}
	s.env = append(cleanEnviron(), "CLAUDE_PROJECT_DIR="+s.root, "HOME="+s.home,
		"DES_STATE_DIR="+filepath.Join(s.home, ".local", "state", "des"), "XDG_STATE_HOME=")
	return s
}

// withPath is s.env with dir first on PATH.
func (s *settingsWriteSetup) withPath(dir string) []string {
	return append(slices.Clone(s.env), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func (s *settingsWriteSetup) run(t *testing.T, env []string, bin string, args ...string) hookRun {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), bin, append([]string{"settings"}, args...)...)
	cmd.Env, cmd.Dir = env, s.root
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatal(err)
		}
	}
	return hookRun{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
}

func (s *settingsWriteSetup) read(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(s.root, ".claude", name))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return data
}

func (s *settingsWriteSetup) backups(t *testing.T) []string {
	t.Helper()
	dir := filepath.Join(statedir.For(s.root, func(k string) (string, bool) {
		if k == statedir.EnvVar {
			return filepath.Join(s.home, ".local", "state", "des"), true
		}
		return "", false
	}), settingsBackupDir)
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, filepath.Join(dir, e.Name()))
	}
	return names
}

// desHookCount counts, per event, the hook entries across both files whose
// command runs a des-hook.
func desHookCount(t *testing.T, files ...[]byte) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, f := range files {
		if len(f) == 0 {
			continue
		}
		for ev, cmds := range hookCommands(t, f) {
			for _, c := range cmds {
				if w, ok := program.ShellWords(c); ok && len(w) == 1 && desProgramName(w[0]) == "des-hook" {
					n[ev]++
				}
			}
		}
	}
	return n
}

func TestE2ESettingsWriteMergesTwiceTheSame(t *testing.T) {
	t.Parallel()
	s := newSettingsWriteSetup(t)
	if err := os.Symlink(hookBin, filepath.Join(s.bin, "des-hook")); err != nil {
		t.Fatal(err)
	}
	env := s.withPath(s.bin)

	first := s.run(t, env, filepath.Join(s.bin, "des-hook"), "--write")
	if first.code != 0 || !strings.Contains(first.stdout, "added") {
		t.Fatalf("first --write: exit %d\nstdout:\n%s\nstderr:\n%s", first.code, first.stdout, first.stderr)
	}
	shared, local := s.read(t, "settings.json"), s.read(t, "settings.local.json")
	for _, want := range []string{`"Bash(rm -rf:*)"`, `prettier --write \"$CLAUDE_FILE\"`, `"my-status"`, `"model": "opus"`, `"Edit(/.des/config.json)"`, `"des-hook"`} {
		if !bytes.Contains(shared, []byte(want)) {
			t.Errorf("settings.json lacks %s:\n%s", want, shared)
		}
	}
	if !strings.Contains(first.stdout, "kept your statusLine") || bytes.Contains(shared, []byte("des-hook statusline")) {
		t.Errorf("the user's statusLine was not kept and said:\n%s\n%s", first.stdout, shared)
	}
	if bytes.Contains(shared, []byte(s.home)) {
		t.Errorf("settings.json holds paths of this home directory (%s):\n%s", s.home, shared)
	}
	if !bytes.Contains(local, []byte("//"+strings.TrimPrefix(s.home, "/"))) || !bytes.Contains(local, []byte("projects/"+statedir.ProjectKey(s.root))) {
		t.Errorf("settings.local.json lacks the home's and the state directory's paths:\n%s", local)
	}
	if bytes.Contains(local, []byte(`"hooks"`)) {
		t.Errorf("settings.local.json holds hooks too: des would run twice\n%s", local)
	}
	for ev, n := range desHookCount(t, shared, local) {
		if n != 1 {
			t.Errorf("%s: des's hook %d times across both files", ev, n)
		}
	}
	if n := len(desHookCount(t, shared, local)); n != 8 {
		t.Errorf("des's hooks in %d events, want 8", n)
	}
	if got := topKeys(t, shared); !slices.Equal(got[:4], []string{"model", "permissions", "hooks", "statusLine"}) {
		t.Errorf("top-level keys reordered: %v", got)
	}
	backups := s.backups(t)
	if len(backups) != 1 || !strings.Contains(first.stdout, backups[0]) {
		t.Fatalf("backups %v, want one, named in the output:\n%s", backups, first.stdout)
	}
	if b, _ := os.ReadFile(backups[0]); string(b) != userClaudeSettings {
		t.Errorf("the backup is not the file as it was:\n%s", b)
	}

	second := s.run(t, env, filepath.Join(s.bin, "des-hook"), "--write")
	if second.code != 0 || !strings.Contains(second.stdout, "nothing changed") {
		t.Errorf("second --write: exit %d\n%s\n%s", second.code, second.stdout, second.stderr)
	}
	if !bytes.Equal(shared, s.read(t, "settings.json")) || !bytes.Equal(local, s.read(t, "settings.local.json")) {
		t.Error("the second --write changed a file")
	}
	if got := s.backups(t); len(got) != 1 {
		t.Errorf("the second --write made a backup: %v", got)
	}

	// Without --write the output is still the one object to merge.
	printed := s.run(t, env, filepath.Join(s.bin, "des-hook"))
	var block map[string]any
	if printed.code != 0 || json.Unmarshal([]byte(printed.stdout), &block) != nil || block["hooks"] == nil {
		t.Errorf("settings without --write: exit %d\n%s", printed.code, printed.stdout)
	}
}

// An upgrade to a binary at another path replaces des's entries; moving to
// des-hook on PATH takes them out of the local file into the shared one.
func TestE2ESettingsWriteUpgradeReplaces(t *testing.T) {
	t.Parallel()
	s := newSettingsWriteSetup(t)
	install := func(dir string) string {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(hookBin)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "des-hook")
		testenv.WriteExecutable(t, p, raw)
		if err := os.Symlink(engineBin, filepath.Join(dir, "des-engine")); err != nil {
			t.Fatal(err)
		}
		return p
	}
	oldBin := install(filepath.Join(s.home, "old"))
	newBin := install(filepath.Join(s.home, "new"))

	if r := s.run(t, s.env, oldBin, "--write"); r.code != 0 {
		t.Fatalf("--write from %s: exit %d\n%s\n%s", oldBin, r.code, r.stdout, r.stderr)
	}
	if local := s.read(t, "settings.local.json"); !bytes.Contains(local, []byte(`"command": "`+oldBin+`"`)) {
		t.Fatalf("a binary not on PATH: its hooks are not in settings.local.json:\n%s", local)
	}
	if shared := s.read(t, "settings.json"); bytes.Contains(shared, []byte(oldBin)) || bytes.Contains(shared, []byte(`"SubagentStop"`)) {
		t.Fatalf("settings.json holds this machine's hook:\n%s", shared)
	}
	if err := os.Remove(oldBin); err != nil { // gone, as after an upgrade
		t.Fatal(err)
	}
	r := s.run(t, s.env, newBin, "--write")
	if r.code != 0 || !strings.Contains(r.stdout, "replaced") || !strings.Contains(r.stdout, "removed") {
		t.Fatalf("--write from %s: exit %d\n%s\n%s", newBin, r.code, r.stdout, r.stderr)
	}
	local := s.read(t, "settings.local.json")
	if bytes.Contains(local, []byte(oldBin)) || !bytes.Contains(local, []byte(newBin)) {
		t.Errorf("the old binary's entries stay, or the new one's are missing:\n%s", local)
	}
	for ev, n := range desHookCount(t, s.read(t, "settings.json"), local) {
		if n != 1 {
			t.Errorf("%s: des's hook %d times", ev, n)
		}
	}

	// Now des-hook is on PATH: the hooks move to the shared file.
	if err := os.Symlink(newBin, filepath.Join(s.bin, "des-hook")); err != nil {
		t.Fatal(err)
	}
	if r := s.run(t, s.withPath(s.bin), newBin, "--write"); r.code != 0 {
		t.Fatalf("--write with des-hook on PATH: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	shared, local := s.read(t, "settings.json"), s.read(t, "settings.local.json")
	if bytes.Contains(local, []byte(`"hooks"`)) || !bytes.Contains(shared, []byte(`"command": "des-hook"`)) {
		t.Errorf("the hooks did not move to settings.json:\nshared:\n%s\nlocal:\n%s", shared, local)
	}
	for ev, n := range desHookCount(t, shared, local) {
		if n != 1 {
			t.Errorf("%s: des's hook %d times", ev, n)
		}
	}
	if !bytes.Contains(shared, []byte(`"Bash(rm -rf:*)"`)) || !bytes.Contains(shared, []byte("prettier")) {
		t.Errorf("the user's entries were lost:\n%s", shared)
	}

	// A machine whose PATH has no des-hook leaves the team's shared hooks
	// alone, adds none of its own, and says why.
	r = s.run(t, s.env, newBin, "--write")
	if r.code != 0 || !strings.Contains(r.stdout, `warning: .claude/settings.json runs des as "des-hook"`) {
		t.Errorf("--write without des-hook on PATH: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if got := s.read(t, "settings.json"); !bytes.Equal(got, shared) {
		t.Errorf("settings.json changed:\n%s", got)
	}
	if local := s.read(t, "settings.local.json"); bytes.Contains(local, []byte(`"hooks"`)) {
		t.Errorf("settings.local.json got hooks of its own: des would run twice\n%s", local)
	}
}

func TestE2ESettingsWriteRefusesLinks(t *testing.T) {
	t.Parallel()
	s := newSettingsWriteSetup(t)
	elsewhere := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(elsewhere, []byte(userClaudeSettings), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(s.root, ".claude", "settings.json")
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, link); err != nil {
		t.Fatal(err)
	}
	r := s.run(t, s.env, hookBin, "--write")
	if r.code != 2 || !strings.Contains(r.stderr, ".claude/settings.json is a symbolic link") || !strings.Contains(r.stderr, "Nothing was written") {
		t.Errorf("--write through a link: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if got, _ := os.ReadFile(elsewhere); string(got) != userClaudeSettings {
		t.Errorf("the file the link names changed:\n%s", got)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(s.root, ".claude", "settings.local.json")); !os.IsNotExist(err) {
		t.Errorf("settings.local.json written beside a refused link: %v", err)
	}

	// A link at .claude itself.
	s2 := newSettingsWriteSetup(t)
	realDir := t.TempDir()
	if err := os.RemoveAll(filepath.Join(s2.root, ".claude")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(realDir, filepath.Join(s2.root, ".claude")); err != nil {
		t.Fatal(err)
	}
	if r := s2.run(t, s2.env, hookBin, "--write"); r.code != 2 || !strings.Contains(r.stderr, ".claude is a symbolic link") {
		t.Errorf("--write through a linked .claude: exit %d\n%s", r.code, r.stderr)
	}
	if entries, _ := os.ReadDir(realDir); len(entries) != 0 {
		t.Errorf("wrote into the linked directory: %v", entries)
	}
}
