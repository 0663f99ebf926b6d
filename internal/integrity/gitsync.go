package integrity

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/deterministic-exec/des/internal/fileio"
)

// Git rewrites guarded documents honestly: `git checkout feat` brings
// feat's step files, `git pull` a teammate's, `git stash` takes a step in
// progress away and `git stash pop` brings it back. Undoing those would
// revert the branch's steps at the next commit. So after a call whose
// command moved HEAD (the baseline records HEAD and its symbolic ref) or
// ran one of GitRewriting's subcommands, a changed guarded document (a
// workflow state, the task graph, a step file) is taken, not undone, when
// git could have put it there honestly:
//
//   - its content is the one the commit HEAD now points to holds for it;
//   - it is absent and that commit has no such file;
//   - its content is one git took away from it earlier, honestly, while
//     DES held it as good (a KeptByGit entry: what `git stash` took).
//
// Anything else is undone as before. What git replaced is kept (KeptByGit)
// unless the old or the new HEAD holds it: nothing git discards (reset
// --hard of a step in progress) is lost.

// GitRewriting are the git subcommands that rewrite the work tree from
// commits, the index or the stash.
var GitRewriting = []string{"checkout", "switch", "pull", "merge", "rebase", "reset", "stash", "cherry-pick", "revert", "restore"}

// Head is where HEAD points: the commit, and the branch (its full ref
// name) unless HEAD is detached.
type Head struct {
	Commit string `json:"commit,omitempty"`
	Ref    string `json:"ref,omitempty"`
}

// Synced is a guarded document git changed honestly, taken by End.
type Synced struct {
	Path string `json:"path"`
	What string `json:"what"` // modified, created, deleted
	Was  string `json:"was"`  // SHA-256 of the content before, or "absent"
	Now  string `json:"now"`  // SHA-256 of the content now, or "absent"
	From string `json:"from"` // "head": HEAD's commit holds it (or lacks the file); "set_aside": git took it away earlier
	Kept string `json:"kept,omitempty"`
}

// Call is what End knows of the call it checks.
type Call struct {
	ID           string
	StillRunning bool // a command that may have left something running in the background
	// Command is the command's text when Claude Code runs it in the
	// background (run_in_background): the shell it keeps running for it is
	// known by its command line. "" for a command that ran to its end.
	Command string
	// GitCommands are the git subcommands the command ran (shell.Analysis's
	// GitRuns); one of GitRewriting lets a guarded document git rewrote be
	// taken even when HEAD did not move.
	GitCommands []string
	// TrustHead, when set, says whether the commit HEAD points to after the
	// call is one des judged (it landed through git's hooks, or the check
	// of the call's ref moves passes it): only then is a document equal to
	// its content in that commit taken. A commit made with git's hooks off
	// is not, and its content is undone like any write around the guard.
	TrustHead func(ctx context.Context, commit string) bool
	// AcceptSync, when set, is asked about each guarded document git
	// changed honestly (was → now, nil when absent; key relative to the
	// root) before it is taken: false undoes it like a write around the
	// guard (and keeps it). A workflow state or task graph git brings must
	// pass the write guard's judgment as a Write of it would.
	AcceptSync func(ctx context.Context, key string, was, now []byte) bool
}

func (call Call) rewrites() bool {
	for _, s := range call.GitCommands {
		if slices.Contains(GitRewriting, s) {
			return true
		}
	}
	return false
}

var hexID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`) })

// readHead reads HEAD from the repository's files, without running git
// (it runs at every PreToolUse). ok is false outside a repository. A ref
// that cannot be resolved from files (unborn, or a reftable repository)
// leaves Commit empty, and git is asked in the reftable case.
func (c *Checker) readHead(ctx context.Context) (Head, bool) {
	top, gitDir, common := c.gitLayout()
	if gitDir == "" {
		return Head{}, false
	}
	data, err := fileio4k(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return Head{}, true
	}
	s := strings.TrimSpace(string(data))
	ref, sym := strings.CutPrefix(s, "ref:")
	if !sym {
		if hexID().MatchString(s) {
			return Head{Commit: s}, true
		}
		return Head{}, true
	}
	h := Head{Ref: strings.TrimSpace(ref)}
	h.Commit = resolveRef(gitDir, common, h.Ref)
	if h.Commit == "" {
		if _, err := os.Stat(filepath.Join(common, "reftable")); err == nil {
			if out, err := c.git.Run(ctx, top, nil, "rev-parse", "--verify", "-q", "HEAD"); err == nil {
				h.Commit = strings.TrimSpace(string(out))
			}
			if out, err := c.git.Run(ctx, top, nil, "symbolic-ref", "-q", "HEAD"); err == nil {
				h.Ref = strings.TrimSpace(string(out))
			}
		}
	}
	return h, true
}

func fileio4k(p string) ([]byte, error) { return fileio.ReadBounded(p, 4096) }

// resolveRef resolves ref from loose ref files (the worktree's own, then
// the common directory's) and packed-refs; "" when it finds none.
func resolveRef(gitDir, common, ref string) string {
	for hops := 0; hops < 5 && strings.HasPrefix(ref, "refs/"); hops++ {
		if strings.Contains(ref, "..") {
			return ""
		}
		next := ""
		for _, d := range []string{gitDir, common} {
			if data, err := fileio4k(filepath.Join(d, filepath.FromSlash(ref))); err == nil {
				next = strings.TrimSpace(string(data))
				break
			}
		}
		if next == "" {
			data, err := fileio.ReadBounded(filepath.Join(common, "packed-refs"), 64<<20)
			if err != nil {
				return ""
			}
			for line := range strings.SplitSeq(string(data), "\n") {
				if id, name, ok := strings.Cut(strings.TrimSpace(line), " "); ok && name == ref && hexID().MatchString(id) {
					return id
				}
			}
			return ""
		}
		if r, ok := strings.CutPrefix(next, "ref:"); ok {
			ref = strings.TrimSpace(r)
			continue
		}
		if hexID().MatchString(next) {
			return next
		}
		return ""
	}
	return ""
}

// gitBlob is a file of a commit's tree.
type gitBlob struct{ mode, id string }

// gitTree lists the files at keys (relative to the root) in commit.
func (c *Checker) gitTree(ctx context.Context, commit string, keys []string) (map[string]gitBlob, error) {
	if !hexID().MatchString(commit) {
		return nil, fmt.Errorf("integrity: no commit to read (%q)", commit)
	}
	args := append([]string{"ls-tree", "-z", commit, "--"}, keys...)
	out, err := c.git.Run(ctx, c.root, nil, args...)
	if err != nil {
		return nil, fmt.Errorf("integrity: %w", err)
	}
	files := map[string]gitBlob{}
	for rec := range bytes.SplitSeq(out, []byte{0}) {
		meta, name, ok := strings.Cut(string(rec), "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 3 || f[1] != "blob" {
			continue
		}
		files[filepath.ToSlash(name)] = gitBlob{mode: f[0], id: f[2]}
	}
	return files, nil
}

// blobID is git's id of data as a blob, in the object format of an id of
// that length.
func blobID(data []byte, idLen int) string {
	var h hash.Hash = sha1.New()
	if idLen == 64 {
		h = sha256.New()
	}
	h.Write([]byte("blob " + strconv.Itoa(len(data)) + "\x00"))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// holds reports whether a tree listing holds data at key as a regular file.
func holds(files map[string]gitBlob, key string, data []byte) bool {
	b, ok := files[key]
	return ok && (b.mode == "100644" || b.mode == "100755") && b.id == blobID(data, len(b.id))
}

// deferred is a changed guarded document End judges against git before
// undoing it.
type deferred struct {
	key       string
	was, now  *entry
	data      []byte
	syncedHow string // set when judged honest
}

// gitCandidate reports whether a change of key from was to now is one git
// may have made: a guarded document's whole content appearing, changing or
// going, not its mode, type or links.
func (c *Checker) gitCandidate(m *manifest, key string, was, now *entry) bool {
	if was.Kind != KindFile || was.Tree != "" || filepath.IsAbs(filepath.FromSlash(key)) || !c.isGuardedDoc(m, key) {
		return false
	}
	okType := func(t string) bool { return t == typeFile || t == typeAbsent }
	return okType(was.Type) && okType(now.Type) && !(was.Type == typeAbsent && now.Type == typeAbsent)
}

// judgeGit marks the deferred changes git made honestly (syncedHow) and
// returns HEAD now. A failure to read git leaves every change to be undone.
func (c *Checker) judgeGit(ctx context.Context, m *manifest, call Call, ds []*deferred) (Head, error) {
	head, ok := c.readHead(ctx)
	if !ok {
		return head, nil
	}
	moved := m.Git != nil && *m.Git != head
	if !moved && !call.rewrites() {
		return head, nil
	}
	keys := make([]string, len(ds))
	for i, d := range ds {
		keys[i] = d.key
	}
	files, err := c.gitTree(ctx, head.Commit, keys)
	if err != nil {
		return head, err
	}
	trusted := func() bool { return true }
	if call.TrustHead != nil {
		var once *bool
		trusted = func() bool {
			if once == nil {
				ok := call.TrustHead(ctx, head.Commit)
				once = &ok
			}
			return *once
		}
	}
	for _, d := range ds {
		switch {
		case d.now.Type == typeAbsent:
			if _, ok := files[d.key]; !ok && trusted() {
				d.syncedHow = "head"
			}
		case holds(files, d.key, d.data):
			if trusted() {
				d.syncedHow = "head"
			}
		case c.setAside(d.key, d.now.SHA256):
			d.syncedHow = "set_aside"
		}
	}
	return head, nil
}

// committed reports, for each deferred change taken, whether what it
// replaced is in the commit HEAD pointed to before or points to now (so
// need not be kept); keys absent from the answer were not found there.
func (c *Checker) committed(ctx context.Context, before *Head, after Head, ds []*deferred) map[string]bool {
	out := map[string]bool{}
	var keys []string
	for _, d := range ds {
		if d.syncedHow != "" && d.was.Type == typeFile {
			keys = append(keys, d.key)
		}
	}
	if len(keys) == 0 {
		return out
	}
	commits := []string{after.Commit}
	if before != nil && before.Commit != after.Commit {
		commits = append(commits, before.Commit)
	}
	for _, commit := range commits {
		files, err := c.gitTree(ctx, commit, keys)
		if err != nil {
			continue
		}
		for _, d := range ds {
			if d.syncedHow == "" || d.was.Type != typeFile {
				continue
			}
			if b, ok := files[d.key]; ok && b.id != "" {
				if old, err := c.copyOf(d.was.SHA256); err == nil && b.id == blobID(old, len(b.id)) {
					out[d.key] = true
				}
			}
		}
	}
	return out
}
