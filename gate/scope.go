package gate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/deterministic-exec/des/internal/glob"
)

// DefaultGitTimeout bounds each git command a gate runs.
const DefaultGitTimeout = 10 * time.Second

// changedFiles lists the files changed in the working tree of the
// repository holding root, relative to root: modified, added, deleted and
// renamed (both names) against HEAD, staged or not, and untracked files that
// are not ignored. Files outside root are left out. One `git status` call,
// run without a shell; an error says why git could not tell (not installed,
// not a repository, timed out).
func changedFiles(ctx context.Context, root string, timeout time.Duration) ([]string, error) {
	if timeout <= 0 {
		timeout = DefaultGitTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// git reports paths under the resolved top level: compare them with
	// the resolved root, or a root reached through a link loses every file.
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	top, err := gitTop(root)
	if err != nil {
		return nil, err
	}
	// core.fsmonitor off: a repository's config must not run a command
	// inside the hook.
	cmd := exec.CommandContext(ctx, "git", "-c", "core.fsmonitor=false", "-C", root, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--ignore-submodules=dirty")
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0") // a read must not take the index lock from a running commit
	cmd.WaitDelay = time.Second                            // a child holding stdout must not outlive the timeout
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("git status in %s: gave up after %v", root, timeout)
		}
		return nil, fmt.Errorf("git status in %s: %w: %s", root, err, strings.TrimSpace(stderr.String()))
	}
	var files []string
	add := func(p string) {
		if rel, ok := within(root, filepath.Join(top, filepath.FromSlash(p))); ok {
			files = append(files, rel)
		}
	}
	// "XY path\0" records; without rename detection a rename is its old
	// name deleted and its new name added, so both are listed.
	for _, r := range bytes.Split(out, []byte{0}) {
		if len(r) > 3 {
			add(string(r[3:]))
		}
	}
	slices.Sort(files)
	return slices.Compact(files), nil
}

// gitTop finds the top of the work tree holding dir by looking for .git
// (a directory, or a file in worktrees and submodules), without running git.
func gitTop(dir string) (string, error) {
	d, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", errors.New("not inside a git repository")
		}
		d = parent
	}
}

// outOfScope returns the files that match none of patterns. Files under
// the always-allowed prefixes (DES's own directories) and the step file are
// in scope whatever the patterns say.
func outOfScope(files, patterns []string, always []string, stepFile string) []string {
	var out []string
	for _, f := range files {
		if f == stepFile || slices.ContainsFunc(always, func(dir string) bool { return f == dir || strings.HasPrefix(f, dir+"/") }) {
			continue
		}
		if !slices.ContainsFunc(patterns, func(p string) bool { return glob.Match(p, f) }) {
			out = append(out, f)
		}
	}
	return out
}
