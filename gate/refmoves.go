package gate

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/internal/gitexec"
	"github.com/deterministic-exec/des/policy"
)

// Sources of a Gate 3 run on a ref move, recorded in the audit trail as
// "source".
const (
	// SourceRefUpdate is git's reference-transaction hook: a branch or tag
	// about to move, however git was asked to move it.
	SourceRefUpdate = "ref-update"
	// SourceRefCheck is the check after an agent's Bash call of the
	// branches and tags it moved (the backstop when git's hooks did not run).
	SourceRefCheck = "ref-check"
)

// MaxIntroducedCommits bounds the commits one ref move may bring onto the
// branches and tags: each is read, and a move past the bound is refused
// rather than judged in part.
const MaxIntroducedCommits = 5000

// ErrTooManyCommits is wrapped when a ref move introduces more commits than
// MaxIntroducedCommits.
var ErrTooManyCommits = errors.New("the ref move introduces too many commits to judge")

// RefUpdate is one ref a transaction moves: a line of git's
// reference-transaction hook ("<old> <new> <ref>"), or a difference between
// two RefSnapshots. A zero (or empty) New deletes the ref; a zero Old
// creates it or moves it whatever it held.
type RefUpdate struct {
	Old, New, Ref string
}

// Landed reports whether the ref is one whose commits count as landed: a
// branch or a tag. refs/remotes (fetched, not landed), refs/stash and
// other namespaces are not; refs/replace is refused apart (Replaces).
func (u RefUpdate) Landed() bool {
	return strings.HasPrefix(u.Ref, "refs/heads/") || strings.HasPrefix(u.Ref, "refs/tags/")
}

// Replaces reports whether the update makes a replacement object (git
// replace): it would make git show other content for an existing commit,
// which des does not judge, so it is refused.
func (u RefUpdate) Replaces() bool {
	return strings.HasPrefix(u.Ref, "refs/replace/") && !zeroOID(u.New)
}

// zeroOID reports an object name of zeros (git's "no value"), or none.
func zeroOID(oid string) bool {
	return strings.Trim(oid, "0") == ""
}

// ParseRefUpdates reads the standard input of git's reference-transaction
// hook: one "<old> SP <new> SP <ref>" line per update. A line that does not
// have that shape is an error: a transaction des cannot read is not passed.
func ParseRefUpdates(in []byte) ([]RefUpdate, error) {
	var out []RefUpdate
	sc := bufio.NewScanner(bytes.NewReader(in))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		f := strings.SplitN(line, " ", 3)
		if len(f) != 3 || !hexOID(f[0]) || !hexOID(f[1]) || f[2] == "" {
			return nil, fmt.Errorf("reference-transaction: cannot read the line %q", line)
		}
		out = append(out, RefUpdate{Old: f[0], New: f[1], Ref: f[2]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reference-transaction: %w", err)
	}
	return out, nil
}

// hexOID reports a SHA-1 or SHA-256 object name.
func hexOID(s string) bool {
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

// RefSnapshot is the value of every branch and tag of a repository
// (refs/heads/*, refs/tags/*), by full ref name.
type RefSnapshot map[string]string

// Refs reads the branches and tags of the repository that holds dir, with
// one `git for-each-ref`: what the check after a Bash call compares with.
func Refs(ctx context.Context, dir string) (RefSnapshot, error) {
	out, err := runGit(ctx, new(gitexec.Runner), dir, nil, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads/", "refs/tags/")
	if err != nil {
		return nil, err
	}
	snap := RefSnapshot{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if oid, ref, ok := strings.Cut(line, " "); ok {
			snap[ref] = oid
		}
	}
	return snap, nil
}

// Moves lists the refs whose value differs between s (before) and now
// (after), sorted by ref: a ref gone has New "", a new one Old "".
func (s RefSnapshot) Moves(now RefSnapshot) []RefUpdate {
	var out []RefUpdate
	for ref, oid := range now {
		if s[ref] != oid {
			out = append(out, RefUpdate{Old: s[ref], New: oid, Ref: ref})
		}
	}
	for ref, oid := range s {
		if _, ok := now[ref]; !ok {
			out = append(out, RefUpdate{Old: oid, Ref: ref})
		}
	}
	slices.SortFunc(out, func(a, b RefUpdate) int { return strings.Compare(a.Ref, b.Ref) })
	return out
}

// tips are the values of a snapshot, each once, sorted.
func (s RefSnapshot) tips() []string {
	out := make([]string, 0, len(s))
	for _, oid := range s {
		out = append(out, oid)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// RefMoves is what a set of ref moves brings onto the branches and tags.
type RefMoves struct {
	// Commits are the commits the moves introduce: reachable from a new
	// value and from no branch or tag before the moves.
	Commits []string
	// Files are the step files (as StepFiles says) each introduced commit
	// adds or changes against its first parent (all of a root commit's),
	// with the blob's content, once per path and content: what Gate 3
	// judges.
	Files []CommitFile
	// Replaced are the refs/replace updates of the moves, refused.
	Replaced []string
}

// RefMoves reads what the updates bring onto the branches and tags of the
// repository that holds dir: the commits `git rev-list NEW... --not
// BEFORE...` lists, where BEFORE is every branch and tag tip before the
// moves (before, or, when before is nil, the repository's branches and tags
// as they are now, which in git's reference-transaction hook at "prepared"
// is still before), and the step files those commits change. Only updates
// of branches and tags to a value count (Landed); a tag on an existing
// commit, a branch moved back, a fast-forward to a commit already on a
// branch introduce nothing. refs/remotes and refs/stash do not land a
// commit: their commits are judged when a branch or tag takes them in.
//
// Nothing to judge costs one `git rev-list`; commits to read, one `git
// diff-tree --stdin` and one `git cat-file --batch` more. More than
// MaxIntroducedCommits is an error wrapping ErrTooManyCommits. git runs
// through gitexec: nothing the repository configures, no replacement
// objects.
func (s StepFiles) RefMoves(ctx context.Context, dir string, updates []RefUpdate, before RefSnapshot) (RefMoves, error) {
	var res RefMoves
	var news []string
	for _, u := range updates {
		switch {
		case u.Replaces():
			res.Replaced = append(res.Replaced, u.Ref)
		case u.Landed() && !zeroOID(u.New) && !slices.Contains(news, u.New):
			news = append(news, u.New)
		}
	}
	if len(news) == 0 {
		return res, nil
	}
	git := new(gitexec.Runner)
	top, err := gitTopLevel(ctx, git, dir)
	if err != nil {
		return res, err
	}
	// rev-list reads the revisions from stdin (^ excludes one): a
	// repository may have more tags than a command line holds. git 2.39
	// takes no --not there; on the command line it does not turn stdin's.
	var in strings.Builder
	for _, n := range news {
		in.WriteString(n + "\n")
	}
	args := []string{"rev-list", "--parents", fmt.Sprintf("--max-count=%d", MaxIntroducedCommits+1), "--stdin"}
	if before == nil {
		args = append(args, "--not", "--branches", "--tags")
	} else {
		for _, t := range before.tips() {
			in.WriteString("^" + t + "\n")
		}
	}
	out, err := runGit(ctx, git, top, []byte(in.String()), args...)
	if err != nil {
		return res, fmt.Errorf("list the commits the ref move introduces: %w", err)
	}
	var pairs strings.Builder // "<commit> <first parent>" for diff-tree --stdin
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		res.Commits = append(res.Commits, f[0])
		pairs.WriteString(strings.Join(f[:min(len(f), 2)], " ") + "\n")
	}
	if len(res.Commits) > MaxIntroducedCommits {
		return res, fmt.Errorf("%w: more than %d commits", ErrTooManyCommits, MaxIntroducedCommits)
	}
	if len(res.Commits) == 0 {
		return res, nil
	}
	pick := s.picker(top)
	blobs := blobSet{keep: func(p string) bool { return pick(p) != pickNo }}
	raw, err := runGit(ctx, git, top, []byte(pairs.String()), "diff-tree", "--stdin", "--root", "-r", "-z", "--raw", "--no-abbrev", "--no-renames", "--no-commit-id", "--diff-filter=ACMRT")
	if err != nil {
		return res, fmt.Errorf("read the step files of the introduced commits: %w", err)
	}
	fields := strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
	for i := 0; i+1 < len(fields); i += 2 {
		meta, path := strings.Fields(fields[i]), fields[i+1]
		if len(meta) != 5 || !blobs.keep(path) || !strings.HasPrefix(meta[1], "100") {
			continue
		}
		b := blobRef{path, meta[3]}
		if !slices.Contains(blobs.refs, b) {
			blobs.refs = append(blobs.refs, b)
		}
	}
	oids := make([]string, len(blobs.refs))
	for i, b := range blobs.refs {
		oids[i] = b.oid
	}
	contents, err := catBlobs(ctx, git, top, oids)
	if err != nil {
		return res, err
	}
	for _, b := range blobs.refs {
		if content := contents[b.oid]; pick(b.path).keep(content) {
			res.Files = append(res.Files, CommitFile{Path: filepath.Join(top, filepath.FromSlash(b.path)), Content: content})
		}
	}
	return res, nil
}

// CommitsOnBranches lists, of the updates, the branches (short names) that
// a move gives commits of their own: a non-merge commit no branch or tag
// reached before (git rev-list --no-merges NEW --not BEFORE). A merge or a
// fast-forward to another branch's commits brings that branch in, which
// the branch guard allows as it allows `git merge`. before nil reads the
// refs now (in the reference-transaction hook they have not moved yet).
func CommitsOnBranches(ctx context.Context, dir string, updates []RefUpdate, before RefSnapshot) ([]string, error) {
	git := new(gitexec.Runner)
	if before == nil {
		var err error
		if before, err = Refs(ctx, dir); err != nil {
			return nil, err
		}
	}
	var not bytes.Buffer
	for _, tip := range before.tips() {
		not.WriteString("^" + tip + "\n")
	}
	var out []string
	for _, u := range updates {
		name, ok := strings.CutPrefix(u.Ref, "refs/heads/")
		if !ok || zeroOID(u.New) {
			continue
		}
		stdin := append([]byte(u.New+"\n"), not.Bytes()...)
		revs, err := runGit(ctx, git, dir, stdin, "rev-list", "--no-merges", "--max-count=1", "--stdin")
		if err != nil {
			return nil, err
		}
		if strings.TrimSpace(string(revs)) != "" {
			out = append(out, name)
		}
	}
	return out, nil
}

// CheckRefBranches is the branch guard (DES-BRANCH-PROTECTED,
// DES-BRANCH-INTERMEDIATE) on branch moves that commit (CommitsOnBranches),
// however git made them: a ref move onto a protected branch is a commit
// on it. dir is the repository's work tree; evaluated only when a workflow
// state is found. A deny is recorded like CheckCommitBranches's, with
// source ref-update.
func (t ToolUse) CheckRefBranches(ctx context.Context, ev Evaluator, wf Workflow, dir string, branches []string) (Result, error) {
	res := Result{Gate: policy.ToolUse}
	if len(branches) == 0 {
		return res, nil
	}
	facts, err := wf.find(ctx, t.Root)
	if err != nil {
		return res, fmt.Errorf("tool_use: workflow state: %w", err)
	}
	if facts == nil {
		return res, nil
	}
	wb := workflowBranch(facts)
	rel := filepath.ToSlash(dir)
	if r, ok := within(t.Root, dir); ok {
		rel = r
	}
	exists := false
	if wf.Branch != nil {
		if b := wf.Branch(dir, wb); b != nil {
			exists, _ = b["workflow_branch_exists"].(bool)
		}
	}
	commits := make([]any, 0, len(branches))
	for _, name := range branches {
		b := map[string]any{"readable": true, "current": name, "detached": false, "workflow_branch_exists": exists}
		commits = append(commits, map[string]any{"dir": rel, "branch": b, "subcommand": "commit", "alias": false, "dynamic": false})
	}
	in := map[string]any{"tool": "Bash", "writes": []any{}, "command": "git (a ref update)", "workflow": facts, "commits": commits}
	d, err := ev.Evaluate(ctx, policy.ToolUse, in)
	if err != nil {
		return res, fmt.Errorf("tool_use: %w", err)
	}
	res.Decision, res.Evaluated = d, true
	if !res.Denied() || t.Audit == nil {
		return res, nil
	}
	err = t.Audit.Append(ctx, audit.Entry{Event: audit.CommitValidationFailed, Fields: map[string]any{
		"step_file": "", "codes": d.Codes(), "source": SourceRefUpdate, "gate": string(policy.ToolUse),
	}})
	if err != nil {
		return res, fmt.Errorf("tool_use: %w: %w", ErrNotRecorded, err)
	}
	return res, nil
}

// RefMoveRecovery is what to do when the ref move cannot be judged.
func RefMoveRecovery(err error) []string {
	if errors.Is(err, ErrTooManyCommits) {
		return []string{fmt.Sprintf("Move the ref in steps of at most %d new commits (merge or fast-forward to a nearer commit first), or let a person run the command outside Claude Code.", MaxIntroducedCommits)}
	}
	return []string{"Retry the git command; if git itself fails, fix the repository first."}
}
