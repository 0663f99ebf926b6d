package gate

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/deterministic-exec/des/internal/gitexec"
)

// SourceRefUpdate is a Gate 3 run from git's reference-transaction hook:
// a branch or tag about to move, whatever git command moves it (commit,
// commit-tree and update-ref, reset, branch -f, checkout -B, merge,
// cherry-pick, rebase, fetch into a branch, tag, fast-import, push to a
// local ref).
const SourceRefUpdate = "ref-update"

// A RefUpdate is one line git gives its reference-transaction hook: the
// ref's old and new object names and its name.
type RefUpdate struct{ Old, New, Ref string }

// ParseRefUpdates reads the hook's standard input: one "<old> <new>
// <ref>" line per update.
func ParseRefUpdates(data []byte) ([]RefUpdate, error) {
	var out []RefUpdate
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		f := strings.SplitN(line, " ", 3)
		if len(f) != 3 || !isOID(f[0]) || !isOID(f[1]) || f[2] == "" {
			return nil, fmt.Errorf("reference-transaction line %d: %q is not \"<old> <new> <ref>\"", n, line)
		}
		out = append(out, RefUpdate{Old: f[0], New: f[1], Ref: f[2]})
	}
	return out, sc.Err()
}

func isOID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func zeroOID(s string) bool { return strings.Trim(s, "0") == "" }

// JudgedRef reports whether a move of ref lands commits Gate 3 judges:
// branches and tags, where work is shared and released. Other refs hold
// work that has not landed (refs/stash, a fetch's refs/remotes, notes);
// a commit only they reach is judged when a branch or tag takes it.
func JudgedRef(ref string) bool {
	return strings.HasPrefix(ref, "refs/heads/") || strings.HasPrefix(ref, "refs/tags/")
}

// MaxIntroduced bounds the commits one ref transaction may land unjudged
// by name: past it, the move is refused (ErrTooManyCommits) rather than
// judged in part.
const MaxIntroduced = 2000

// ErrTooManyCommits is returned when a ref transaction lands more commits
// than MaxIntroduced.
var ErrTooManyCommits = errors.New("the ref update lands more commits than des judges at once")

// RefMove returns the step files (s) that a reference transaction lands:
// for every update of a branch or tag to a new value, the commits it
// introduces (those no branch or tag reached before the transaction), and
// of each the step files it adds or changes against its first parent,
// with the content it holds. What was already on a branch or tag was
// judged when it got there; a commit only refs/stash, refs/remotes or
// nothing reached (commit-tree, stash create, a fetch from a clone) is
// judged now. dir is a directory of the repository (the hook runs at the
// top of the work tree). Paths are absolute. A tag that points at no
// commit introduces nothing to judge.
func (s StepFiles) RefMove(ctx context.Context, dir string, updates []RefUpdate) ([]CommitFile, error) {
	var news []string
	for _, u := range updates {
		if JudgedRef(u.Ref) && !zeroOID(u.New) {
			news = append(news, u.New)
		}
	}
	if len(news) == 0 {
		return nil, nil
	}
	git := new(gitexec.Runner)
	top, err := gitTopLevel(ctx, git, dir)
	if err != nil {
		return nil, err
	}
	// The branches and tags as they are before the transaction: the refs
	// it updates are locked, not yet moved.
	landed, err := runGit(ctx, git, top, nil, "for-each-ref", "--format=%(objectname)", "refs/heads", "refs/tags")
	if err != nil {
		return nil, err
	}
	var stdin bytes.Buffer
	for _, n := range news {
		stdin.WriteString(n + "\n")
	}
	for _, l := range strings.Fields(string(landed)) {
		stdin.WriteString("^" + l + "\n")
	}
	// --stdin: a repository with many branches does not overflow argv.
	// Objects that are not commits (a tag of a tree) walk to nothing.
	out, err := runGit(ctx, git, top, stdin.Bytes(), "rev-list", "--stdin", "--ignore-missing")
	if err != nil {
		return nil, err
	}
	commits := strings.Fields(string(out))
	if len(commits) > MaxIntroduced {
		return nil, fmt.Errorf("%w: %d commits, at most %d", ErrTooManyCommits, len(commits), MaxIntroduced)
	}
	pick := s.picker(top)
	into := blobSet{keep: func(p string) bool { return pick(p) != pickNo }}
	for _, c := range commits {
		// The commit against its first parent; a root commit against
		// nothing. A merge commit's own changes are what its tree has
		// that its first parent lacks: the merged work is judged too.
		if err := stepBlobs(ctx, git, top, &into, "--root", "-m", "--first-parent", c); err != nil {
			return nil, err
		}
	}
	if len(into.refs) == 0 {
		return nil, nil
	}
	return s.collect(ctx, git, top, nil, false, into.refs)
}
