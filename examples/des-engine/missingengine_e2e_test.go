package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/internal/testenv"
)

// The thin client alone, without des-engine beside it, prints the fix; the
// fix, run from the checkout, builds des-hook and des-engine (not "hook")
// into the client's directory, and the client then runs.
func TestE2EMissingEngineFix(t *testing.T) {
	t.Parallel()
	testenv.Long(t) // seconds of sleeps and processes: CI runs it (DES_TEST_LONG=1)
	if runtime.GOOS == "windows" {
		t.Skip("the fix is a POSIX shell command line")
	}
	if testing.Short() {
		t.Skip("builds both binaries")
	}
	dir := filepath.Join(t.TempDir(), "my bin")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(hookBin)
	if err != nil {
		t.Fatal(err)
	}
	client := filepath.Join(dir, "des-hook")
	testenv.WriteExecutable(t, client, raw)
	cmd := exec.Command(client, "version")
	cmd.Env = cleanEnviron()
	out, _ := cmd.CombinedOutput()
	msg := string(out)
	const lead = "build both into that directory, from a checkout of des: "
	_, fix, ok := strings.Cut(msg, lead)
	if !ok || !strings.Contains(msg, filepath.Join(dir, "des-engine")+" is missing") {
		t.Fatalf("des-hook without des-engine: %s", msg)
	}
	fix = strings.TrimSpace(fix)
	if !strings.Contains(fix, "'"+client+"' ./examples/hook") {
		t.Errorf("the fix does not build %s: %s", client, fix)
	}
	build := exec.Command("sh", "-c", fix)
	build.Dir = filepath.Join("..", "..") // the checkout
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("the fix %s: %v\n%s", fix, err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "hook")); err == nil {
		t.Errorf("the fix built a binary named hook")
	}
	cmd = exec.Command(client, "version")
	cmd.Env = cleanEnviron()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("des-hook version after the fix: %v\n%s", err, out)
	}
}
