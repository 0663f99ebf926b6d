package isdlc

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// BranchFacts is the seam's commits[].branch object: the branch a commit
// run in a directory lands on.
type BranchFacts struct {
	Readable             bool   // false: no repository, or HEAD unreadable
	Current              string // the branch HEAD names ("" when detached)
	Detached             bool
	WorkflowBranchExists bool // refs/heads/<workflow branch>, loose or packed
}

// Bounds of the repository files read: HEAD, a .git file and commondir are
// one line; packed-refs holds every tag and branch of a large repository.
const (
	maxSmallFile   = 64 << 10
	maxPackedRefs  = 64 << 20
	hashLenSHA1    = 40
	hashLenSHA256  = 64
	reftableMarker = "refs/heads/.invalid"
)

// Branch reads, without starting git, which branch HEAD of the repository
// holding dir (absolute; a missing directory is fine) is on, and whether
// branch workflowBranch exists (a name git would refuse does not). It finds the
// repository as git does, from dir upward: a .git directory, or a .git file
// (`gitdir: …`, a worktree or submodule), whose commondir file names where
// the shared refs are. Only regular files are read, each bounded, so a FIFO
// or device planted as HEAD cannot hang the hook; a symbolic HEAD is read as
// a link, never followed. A reftable repository's refs cannot be read this
// way: HEAD is then unreadable (the guards give no opinion).
func Branch(dir, workflowBranch string) BranchFacts {
	gitDir, ok := findGitDir(dir)
	if !ok {
		return BranchFacts{}
	}
	var b BranchFacts
	ref, ok := readHead(gitDir)
	switch {
	case !ok || ref == reftableMarker:
		return BranchFacts{}
	case ref == "":
		b.Readable, b.Detached = true, true
	default:
		b.Readable = true
		b.Current = strings.TrimPrefix(ref, "refs/heads/")
	}
	// The name as the policy reads it (des.phases.branch): spaces around
	// it and a refs/heads/ prefix do not count.
	workflowBranch = strings.TrimPrefix(strings.TrimSpace(workflowBranch), "refs/heads/")
	if workflowBranch != "" && validBranch(workflowBranch) {
		b.WorkflowBranchExists = refExists(commonDir(gitDir), "refs/heads/"+workflowBranch)
	}
	return b
}

// Facts is the seam's branch object.
func (b BranchFacts) Facts() map[string]any {
	return map[string]any{
		"readable": b.Readable, "current": b.Current, "detached": b.Detached,
		"workflow_branch_exists": b.WorkflowBranchExists,
	}
}

// findGitDir walks from dir to the file system root for .git.
func findGitDir(dir string) (string, bool) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", false
	}
	for first := true; ; first = false {
		dotGit := filepath.Join(dir, ".git")
		if fi, err := os.Stat(dotGit); err == nil {
			switch {
			case fi.IsDir():
				return dotGit, true
			case fi.Mode().IsRegular():
				line, ok := readLine(dotGit)
				target, isGitdir := strings.CutPrefix(line, "gitdir:")
				if !ok || !isGitdir {
					return "", false
				}
				target = strings.TrimSpace(target)
				if !filepath.IsAbs(target) {
					target = filepath.Join(dir, target)
				}
				return filepath.Clean(target), true
			}
			return "", false // a .git that is neither: git would stop here too
		}
		if first && isGitDir(dir) {
			// dir is a git directory itself: a bare repository, or
			// what --git-dir names.
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// isGitDir reports whether dir looks like a git directory, as git tells
// one: a HEAD file (or link) beside refs and objects directories.
func isGitDir(dir string) bool {
	if _, err := os.Lstat(filepath.Join(dir, "HEAD")); err != nil {
		return false
	}
	for _, sub := range []string{"refs", "objects"} {
		if fi, err := os.Stat(filepath.Join(dir, sub)); err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// readHead returns the ref HEAD names, "" for a detached HEAD (a hash), or
// ok false when HEAD is missing or unreadable.
func readHead(gitDir string) (ref string, ok bool) {
	head := filepath.Join(gitDir, "HEAD")
	fi, err := os.Lstat(head)
	if err != nil {
		return "", false
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		// Old git kept HEAD as a link to refs/heads/<branch>.
		target, err := os.Readlink(head)
		target = filepath.ToSlash(target)
		if err != nil || !strings.HasPrefix(target, "refs/") {
			return "", false
		}
		return target, true
	}
	line, ok := readLine(head)
	if !ok {
		return "", false
	}
	if ref, isRef := strings.CutPrefix(line, "ref:"); isRef {
		ref = strings.TrimSpace(ref)
		return ref, strings.HasPrefix(ref, "refs/")
	}
	if isHash(line) {
		return "", true
	}
	return "", false
}

// commonDir is where a worktree's shared refs live: the directory its
// commondir file names, else the git directory itself.
func commonDir(gitDir string) string {
	line, ok := readLine(filepath.Join(gitDir, "commondir"))
	if !ok || line == "" {
		return gitDir
	}
	if filepath.IsAbs(line) {
		return filepath.Clean(line)
	}
	return filepath.Join(gitDir, line)
}

// refExists looks for ref as a loose file, then in packed-refs.
func refExists(common, ref string) bool {
	if fi, err := os.Stat(filepath.Join(common, filepath.FromSlash(ref))); err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
		return true
	}
	f, ok := openRegular(filepath.Join(common, "packed-refs"))
	if !ok {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, maxPackedRefs))
	sc.Buffer(make([]byte, 0, 4096), maxSmallFile)
	for sc.Scan() {
		// "<hash> <ref>"; "#" is the header, "^" a peeled tag.
		hash, name, ok := bytes.Cut(sc.Bytes(), []byte(" "))
		if ok && isHash(string(hash)) && string(bytes.TrimSuffix(name, []byte("\r"))) == ref {
			return true
		}
	}
	return false
}

// validBranch refuses names git would refuse that could also climb out of
// refs/heads (the name comes from the workflow state, which the agent writes).
func validBranch(name string) bool {
	if strings.ContainsAny(name, "\\\x00 ~^:?*[") || strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") {
		return false
	}
	for _, part := range strings.Split(name, "/") {
		if part == "" || strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock") {
			return false
		}
	}
	return !strings.Contains(name, "..") && !strings.Contains(name, "@{")
}

func isHash(s string) bool {
	if len(s) != hashLenSHA1 && len(s) != hashLenSHA256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// readLine returns the first line of a small regular file, trimmed.
func readLine(path string) (string, bool) {
	f, ok := openRegular(path)
	if !ok {
		return "", false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSmallFile))
	if err != nil {
		return "", false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	return strings.TrimSpace(line), true
}

// openRegular opens path only if, links followed, it is a regular file: it
// stats first, since opening a FIFO for reading would block.
func openRegular(path string) (*os.File, bool) {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	return f, true
}
