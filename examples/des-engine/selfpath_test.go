package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/internal/testenv"
)

func TestTransientExe(t *testing.T) {
	t.Parallel()
	env := envMap{"GOCACHE": "/srv/cache"}
	for _, c := range []struct {
		exe  string
		want bool
	}{
		{"/tmp/go-build3281563564/b001/exe/hook", true},
		{"/root/.cache/go-build/25/25a091c10f48f217b3bc5f1a5f7c531d2baa716b44270338d1be6de8a36003c9-d/hook", true},
		{"/srv/cache/25/anything/hook", true},                                                   // under $GOCACHE
		{"/x/25/25a091c10f48f217b3bc5f1a5f7c531d2baa716b44270338d1be6de8a36003c9-d/hook", true}, // a cache entry elsewhere
		{"/home/me/bin/des-hook", false},
		{"/home/me/go-builder/des-hook", false},
		{"/srv/cache-old/hook", false},
		{"/home/me/go/bin/hook", false},
		{"", false},
	} {
		if got := transientExe(filepath.FromSlash(c.exe), env.lookup); got != c.want {
			t.Errorf("transientExe(%s) = %v, want %v", c.exe, got, c.want)
		}
	}
}

// The built binary, placed where `go run` leaves its executable, warns on
// stderr when `settings` or `precommit --install` would write its path,
// and leaves stdout as it is; at a lasting path it does not warn.
func TestE2ESettingsWarnsAboutGoRunPath(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("the copied binary needs a Unix exec bit")
	}
	// The client and des-engine beside it, both where `go run` leaves its
	// executable: the client's path is the one that would be written.
	transient := filepath.Join(t.TempDir(), "go-build1234", "b001", "exe", "hook")
	if err := os.MkdirAll(filepath.Dir(transient), 0o755); err != nil {
		t.Fatal(err)
	}
	for src, dst := range map[string]string{hookBin: transient, engineBin: filepath.Join(filepath.Dir(transient), filepath.Base(engineBin))} {
		raw, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		testenv.WriteExecutable(t, dst, raw)
	}
	root := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", root).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	run := func(bin string, args ...string) hookRun {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), bin, args...)
		cmd.Env = append(cleanEnviron(), "CLAUDE_PROJECT_DIR="+root)
		cmd.Dir = root
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			if _, ok := err.(*exec.ExitError); !ok {
				t.Fatal(err)
			}
		}
		return hookRun{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
	}
	const warning = "warning: this binary runs from Go's build cache"

	got := run(transient, "settings")
	if got.code != 0 || !strings.Contains(got.stderr, "des-hook settings: "+warning) ||
		!strings.Contains(got.stderr, "go build -o ~/bin/des-hook ./examples/hook") || !strings.Contains(got.stderr, "--command ~/bin/des-hook") {
		t.Errorf("settings from a go run path: exit %d, stderr:\n%s", got.code, got.stderr)
	}
	var block map[string]any
	if err := json.Unmarshal([]byte(got.stdout), &block); err != nil {
		t.Errorf("settings stdout is no longer one JSON object: %v\n%s", err, got.stdout)
	}
	if got := run(transient, "settings", "--command", "/opt/des/des-hook"); strings.Contains(got.stderr, warning) {
		t.Errorf("settings --command warned about the running binary:\n%s", got.stderr)
	}
	if got := run(hookBin, "settings"); strings.Contains(got.stderr, warning) {
		t.Errorf("settings from a lasting path warned:\n%s", got.stderr)
	}

	got = run(transient, "precommit", "--install")
	if got.code != 0 || !strings.Contains(got.stderr, "des-hook precommit --install: "+warning) {
		t.Errorf("precommit --install from a go run path: exit %d, stderr:\n%s", got.code, got.stderr)
	}
}
