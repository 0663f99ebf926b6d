// Package realclient installs the real Claude Code CLI and Agent SDK for
// the tests that drive them, from a package.json that pins both. The
// install goes to a cache directory keyed by the package files' content, so
// a second run (and a second test package) reuses it; npm runs under a lock,
// so parallel test binaries install once.
//
// The suite is opt-in: DES_TEST_REAL_CLIENT=1 turns it on (CI does). A run
// without npm, or whose npm cannot reach its registry, skips with the
// reason.
package realclient

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/filelock"
)

// Var is the environment variable that turns the real-client suite on.
const Var = "DES_TEST_REAL_CLIENT"

// CacheVar names the directory installs go to (default: the user's cache
// directory, des/realclient).
const CacheVar = "DES_REALCLIENT_CACHE"

// A Client is an installed Claude Code CLI and Agent SDK.
type Client struct {
	// CLI is the claude executable (the native binary the npm package
	// ships).
	CLI string
	// Version is what `claude --version` printed, e.g. "2.1.328".
	Version string
	// NodeModules is the node_modules directory holding the Agent SDK;
	// a node program finds it with NODE_PATH or by living beside it.
	NodeModules string
	// Node is the node executable.
	Node string
}

// Require skips t unless the real-client suite is on and the client can be
// installed from pkgDir (a directory with package.json and, optionally,
// package-lock.json). It installs at most once per package content.
func Require(t testing.TB, pkgDir string) *Client {
	t.Helper()
	if os.Getenv(Var) != "1" {
		t.Skipf("real Claude Code suite: set %s=1 (CI does); it installs the CLI and Agent SDK with npm", Var)
	}
	if testing.Short() {
		t.Skip("real Claude Code suite: skipped under -short")
	}
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skipf("real Claude Code suite: not run on %s", runtime.GOOS)
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("real Claude Code suite: npm is not on PATH; install Node.js and npm to run it")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("real Claude Code suite: node is not on PATH")
	}
	c, err := install(npm, pkgDir)
	if err != nil {
		if os.Getenv("CI") != "" {
			// In CI the registry is reachable: an install that fails is
			// a failure, not a reason to skip.
			t.Fatalf("real Claude Code suite: %v", err)
		}
		t.Skipf("real Claude Code suite: %v", err)
	}
	c.Node = node
	return c
}

func install(npm, pkgDir string) (*Client, error) {
	pkg, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
	if err != nil {
		return nil, err
	}
	lock, _ := os.ReadFile(filepath.Join(pkgDir, "package-lock.json"))
	sum := sha256.Sum256(append(append(pkg, 0), lock...))
	root := os.Getenv(CacheVar)
	if root == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return nil, fmt.Errorf("no cache directory for the install (%v); set %s", err, CacheVar)
		}
		root = filepath.Join(cache, "des", "realclient")
	}
	dir := filepath.Join(root, hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	lctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	installLock, err := filelock.Acquire(lctx, filepath.Join(dir, ".lock"))
	if err != nil {
		return nil, err
	}
	defer installLock.Unlock()
	done := filepath.Join(dir, ".installed")
	if _, err := os.Stat(done); err != nil {
		if err := os.WriteFile(filepath.Join(dir, "package.json"), pkg, 0o644); err != nil {
			return nil, err
		}
		args := []string{"install", "--no-audit", "--no-fund", "--ignore-scripts"}
		if lock != nil {
			if err := os.WriteFile(filepath.Join(dir, "package-lock.json"), lock, 0o644); err != nil {
				return nil, err
			}
			args = []string{"ci", "--no-audit", "--no-fund", "--ignore-scripts"}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, args...)
		cmd.Dir = dir
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("npm %s in %s: %v\n%s", strings.Join(args, " "), dir, err, lastLines(out.String(), 15))
		}
		if err := os.WriteFile(done, nil, 0o644); err != nil {
			return nil, err
		}
	}
	nm := filepath.Join(dir, "node_modules")
	cli, err := nativeCLI(nm)
	if err != nil {
		return nil, err
	}
	out, err := exec.Command(cli, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --version: %v", cli, err)
	}
	version, _, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
	return &Client{CLI: cli, Version: version, NodeModules: nm}, nil
}

// nativeCLI finds the platform's native claude binary. The package's
// postinstall (skipped: --ignore-scripts) would copy it to bin/claude.exe;
// the platform package holds the same file.
func nativeCLI(nm string) (string, error) {
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	candidates := []string{
		filepath.Join(nm, "@anthropic-ai", "claude-code-"+runtime.GOOS+"-"+arch, "claude"),
		filepath.Join(nm, "@anthropic-ai", "claude-code", "bin", "claude.exe"),
	}
	for _, c := range candidates {
		if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() && fi.Size() > 1<<20 {
			return c, nil
		}
	}
	return "", fmt.Errorf("no native claude binary in %s (looked at %s)", nm, strings.Join(candidates, ", "))
}

// Home makes a home directory for one run of the client: a .claude.json
// that trusts the given project directories (so the client applies their
// permission rules without asking) and marks onboarding done.
func Home(t testing.TB, projects ...string) string {
	t.Helper()
	home := t.TempDir()
	trusted := map[string]any{}
	for _, p := range projects {
		trusted[p] = map[string]any{"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}
	}
	b, _ := json.Marshal(map[string]any{"hasCompletedOnboarding": true, "projects": trusted})
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
