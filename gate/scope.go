package gate

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/deterministic-exec/des/internal/gitexec"
	"github.com/deterministic-exec/des/internal/glob"
)

// changedFiles lists the files changed in the working tree of the
// repository holding root, relative to root: modified, added, deleted and
// renamed (both names) against HEAD, staged or not, and untracked files that
// are not ignored. Files outside root are left out. One `git status` call,
// run as runGit runs git; an error says why git could not tell (not
// installed, not a repository, timed out).
func changedFiles(ctx context.Context, root string) ([]string, error) {
	// git reports paths under the resolved top level: compare them with
	// the resolved root, or a root reached through a link loses every file.
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	top, err := gitTop(root)
	if err != nil {
		return nil, err
	}
	out, err := runGit(ctx, new(gitexec.Runner), root, nil, "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--ignore-submodules=dirty")
	if err != nil {
		return nil, err
	}
	var files []string
	// "XY path\0" records; without rename detection a rename is its old
	// name deleted and its new name added, so both are listed.
	for _, r := range bytes.Split(out, []byte{0}) {
		if len(r) <= 3 {
			continue
		}
		if rel, ok := within(root, filepath.Join(top, filepath.FromSlash(string(r[3:])))); ok {
			files = append(files, rel)
		}
	}
	slices.Sort(files)
	return slices.Compact(files), nil
}

// gitTop finds the top of the work tree holding dir by looking for .git
// (a directory, or a file in worktrees and submodules). Gate 2 asks this on
// every stop, where the process gitTopLevel starts costs about 4 ms of a
// 25 ms gate; Gate 3, which may run inside git's own hooks with GIT_DIR
// set, asks git.
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
