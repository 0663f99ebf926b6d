package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/internal/gitexec"
)

// auditNotesRef is the notes ref where the post-commit hook des installs
// records the audit trail's head on each new commit: git notes are objects
// of the repository, pushed with it (git push origin refs/notes/des-audit),
// and a note removed stays in the ref's history, which `des-hook audit
// verify` reads.
const auditNotesRef = "refs/notes/des-audit"

// postCommitHookName is the git hook that writes the note.
const postCommitHookName = "post-commit"

// auditNote is one line of a note: the head of one trail (a repository may
// hold several projects, each with its trail), as JSON.
type auditNote struct {
	Head audit.Anchor `json:"des_audit_head"`
}

// installPostCommit writes the post-commit hook beside pre-commit. A hook
// des did not write (a team's husky or lint hook) is left alone and the
// line to add is printed, but the install does not fail for it: the note
// is an extra anchor of the audit trail, not a gate, and a team's existing
// post-commit hook must not stop des from being installed.
func installPostCommit(ctx context.Context, e env, hooks, command string, pin hookPin, root string) int {
	script, line := hookScript("DES audit anchor: records the audit trail's head in a git note on the new commit ("+auditNotesRef+"); it never fails a commit.",
		command, pin, "precommit", "--post-commit")
	path := filepath.Join(hooks, postCommitHookName)
	if old, err := os.ReadFile(path); err == nil && !writtenByDES(old) {
		fmt.Fprintf(e.stderr, "des-hook precommit: %s already exists and was not written by DES; it is left as it is.\n"+
			"To anchor the audit trail in git notes (%s), add this line to it:\n\n%s\n", path, auditNotesRef, line)
		return exitOK
	}
	return writeGitHook(ctx, e, hooks, postCommitHookName, script, line, "anywhere (it never fails)", root, command)
}

// runPostCommit is git's post-commit hook: it appends the audit trail's
// head, as it stands after the commit's Gate 3 verdicts, to the note of
// the new commit (HEAD) in auditNotesRef. git ignores a post-commit hook's
// status, and so does des: a trail with no head, a git that cannot write
// the note, are a warning on stderr, and the commit stands. It starts no
// engine, reads two small pieces of the trail and runs one git command.
func runPostCommit(ctx context.Context, e env) int {
	root := commandRoot(ctx, e.lookupEnv)
	cfg, err := des.LoadConfig(root, e.lookupEnv)
	if err != nil {
		fmt.Fprintf(e.stderr, "des-hook precommit --post-commit: the audit head is not noted on the commit: %v\n", err)
		return exitOK
	}
	head, ok := audit.Head(auditDir(root, cfg), time.Now())
	if !ok {
		return exitOK // no chained line yet (or a trail `audit verify` reports)
	}
	line, err := json.Marshal(auditNote{Head: head})
	if err != nil {
		return exitOK
	}
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	// append, not add: a note already on the commit (another project's
	// trail in the same repository) is kept. The reference-transaction
	// hook des installs judges branches and tags only: this ref move is
	// passed without reading anything.
	if _, err := new(gitexec.Runner).Run(ctx, ".", nil, "notes", "--ref="+auditNotesRef, "append", "-m", string(line), "HEAD"); err != nil {
		fmt.Fprintf(e.stderr, "des-hook precommit --post-commit: the audit head (seq %d) is not noted on the commit: %v\n", head.Seq, err)
	}
	return exitOK
}

// gitAuditNotes reads every audit head ever noted in auditNotesRef of the
// repository of root: the notes' history, so that a note removed (git
// notes remove) or replaced is still read; only a rewrite of the ref
// itself loses them, which git's reflog records and which a pushed copy
// of the ref does not follow. No repository, or no such ref: none.
func gitAuditNotes(ctx context.Context, root string) ([]audit.Anchor, error) {
	ctx, cancel := context.WithTimeout(ctx, gitexec.Timeout)
	defer cancel()
	git := new(gitexec.Runner)
	if _, err := git.Run(ctx, root, nil, "rev-parse", "--verify", "--quiet", auditNotesRef+"^{commit}"); err != nil {
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) || errors.Is(err, gitexec.ErrNoGit) {
			return nil, nil // not a repository, or no notes yet
		}
		return nil, err
	}
	// Each commit of the notes ref with the lines it added: the note's
	// path is the annotated commit (with fan-out slashes).
	out, err := git.Run(ctx, root, nil, "log", "-p", "--no-color", "--no-renames", "--format=%x00%H", "--src-prefix=a/", "--dst-prefix=b/", auditNotesRef, "--")
	if err != nil {
		return nil, err
	}
	var anchors []audit.Anchor
	var notesCommit, annotated string
	for rest := out; len(rest) > 0; {
		var raw []byte
		raw, rest, _ = bytes.Cut(rest, []byte{'\n'})
		l := string(raw)
		switch {
		case strings.HasPrefix(l, "\x00"):
			notesCommit = l[1:]
		case strings.HasPrefix(l, "+++ b/"):
			annotated = strings.ReplaceAll(strings.TrimPrefix(l, "+++ b/"), "/", "")
		case strings.HasPrefix(l, `+{"des_audit_head":`):
			var n auditNote
			if json.Unmarshal(raw[1:], &n) != nil {
				continue
			}
			n.Head.Source = fmt.Sprintf("the git note on commit %s (%s, notes commit %s)", short(annotated), auditNotesRef, short(notesCommit))
			anchors = append(anchors, n.Head)
		}
	}
	return anchors, nil
}

func short(oid string) string {
	if len(oid) > 12 {
		return oid[:12]
	}
	return oid
}

// auditNotesDropped is what the reference-transaction hook says of updates
// that would drop audit heads from auditNotesRef: the ref deleted, or moved
// to a commit that does not hold its current one (a rewind, a forced
// fetch, another history). "" when there is none: adding or removing a
// note adds a commit to the ref, whose history keeps every note. Read in
// the state "prepared", before the ref moves: its current value is git's.
func auditNotesDropped(ctx context.Context, updates []gate.RefUpdate) string {
	for _, u := range updates {
		if u.Ref != auditNotesRef {
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, gitTimeout)
		defer cancel()
		git := new(gitexec.Runner)
		out, err := git.Run(ctx, ".", nil, "rev-parse", "--verify", "--quiet", auditNotesRef)
		cur := strings.TrimSpace(string(out))
		if err != nil || cur == "" {
			return "" // no notes yet: nothing to drop
		}
		if strings.Trim(u.New, "0") == "" {
			return fmt.Sprintf("the update deletes %s (at %s), which holds the audit trail's heads noted on the commits", auditNotesRef, short(cur))
		}
		if _, err := git.Run(ctx, ".", nil, "merge-base", "--is-ancestor", cur, u.New); err != nil {
			return fmt.Sprintf("the update moves %s from %s to %s, which does not hold it: the audit trail's heads noted since would no longer be read", auditNotesRef, short(cur), short(u.New))
		}
	}
	return ""
}
