package gate_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/internal/testenv"

	"github.com/google/go-cmp/cmp"

	"github.com/deterministic-exec/des/gate"
)

func TestParseRefUpdates(t *testing.T) {
	t.Parallel()
	z := strings.Repeat("0", 40)
	a := strings.Repeat("a", 40)
	got, err := gate.ParseRefUpdates([]byte(z + " " + a + " refs/heads/main\n" + a + " " + z + " refs/tags/v1\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []gate.RefUpdate{{Old: z, New: a, Ref: "refs/heads/main"}, {Old: a, New: z, Ref: "refs/tags/v1"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatal(d)
	}
	for _, bad := range []string{"x y refs/heads/main\n", z + " " + a + "\n", z + " " + a + " \n"} {
		if _, err := gate.ParseRefUpdates([]byte(bad)); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
}

// A ref move is judged on the commits it brings onto the branches and
// tags: those no branch or tag held before, each against its first parent.
func TestRefMoves(t *testing.T) {
	t.Parallel()
	dir := newRepo(t)
	testenv.WriteFile(t, dir, "README", "x")
	runGit(t, dir, "add", "README")
	runGit(t, dir, "commit", "-qm", "base")
	base := strings.TrimSpace(runGit(t, dir, "rev-parse", "HEAD"))
	// Two commits on a side branch, the step changed in both.
	runGit(t, dir, "checkout", "-qb", "side")
	testenv.WriteFile(t, dir, "steps/01-01.json", `{"tdd_cycle": "v1"}`)
	runGit(t, dir, "add", "-A")
	runGit(t, dir, "commit", "-qm", "one")
	testenv.WriteFile(t, dir, "steps/01-01.json", `{"tdd_cycle": "v2"}`)
	testenv.WriteFile(t, dir, "other.txt", "o")
	runGit(t, dir, "add", "-A")
	runGit(t, dir, "commit", "-qm", "two")
	side := strings.TrimSpace(runGit(t, dir, "rev-parse", "HEAD"))
	runGit(t, dir, "checkout", "-q", "master")
	// A commit on no branch, as commit-tree makes one.
	tree := strings.TrimSpace(runGit(t, dir, "rev-parse", side+"^{tree}"))
	loose := strings.TrimSpace(runGit(t, dir, "commit-tree", "-p", base, "-m", "loose", tree))

	z := strings.Repeat("0", 40)
	steps := gate.StepFiles{}
	ctx := t.Context()

	// Onto master: side's commits are on a branch already.
	res, err := steps.RefMoves(ctx, dir, []gate.RefUpdate{{Old: base, New: side, Ref: "refs/heads/master"}}, nil)
	if err != nil || len(res.Commits) != 0 || len(res.Files) != 0 {
		t.Fatalf("fast-forward to a branch's commit: %+v, %v", res, err)
	}
	// The loose commit: one commit, the step as it holds it.
	res, err = steps.RefMoves(ctx, dir, []gate.RefUpdate{{Old: z, New: loose, Ref: "refs/tags/t"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{`steps/01-01.json={"tdd_cycle": "v2"}`}, listed(t, dir, res.Files)); d != "" || len(res.Commits) != 1 {
		t.Fatalf("loose commit: %d commits, files %s", len(res.Commits), d)
	}
	// Against a snapshot taken before side existed: both versions.
	before := gate.RefSnapshot{"refs/heads/master": base}
	res, err = steps.RefMoves(ctx, dir, []gate.RefUpdate{{Old: "", New: side, Ref: "refs/heads/side"}}, before)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{`steps/01-01.json={"tdd_cycle": "v2"}`, `steps/01-01.json={"tdd_cycle": "v1"}`}, listed(t, dir, res.Files)); d != "" {
		t.Fatalf("snapshot: %s", d)
	}
	// Not landed: remotes, the stash, deletions. Refused: replacements.
	res, err = steps.RefMoves(ctx, dir, []gate.RefUpdate{
		{Old: z, New: loose, Ref: "refs/remotes/o/x"}, {Old: z, New: loose, Ref: "refs/stash"},
		{Old: side, New: z, Ref: "refs/heads/side"}, {Old: z, New: loose, Ref: "refs/replace/" + side},
	}, nil)
	if err != nil || len(res.Commits) != 0 || len(res.Files) != 0 || len(res.Replaced) != 1 {
		t.Fatalf("not landed: %+v, %v", res, err)
	}
	// Snapshots and their moves.
	now, err := gate.Refs(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if now["refs/heads/side"] != side || now["refs/heads/master"] != base {
		t.Fatalf("Refs = %v", now)
	}
	moves := gate.RefSnapshot{"refs/heads/master": side, "refs/tags/gone": base}.Moves(now)
	want := []gate.RefUpdate{{Old: side, New: base, Ref: "refs/heads/master"}, {Old: "", New: side, Ref: "refs/heads/side"}, {Old: base, New: "", Ref: "refs/tags/gone"}}
	if d := cmp.Diff(want, moves); d != "" {
		t.Fatal(d)
	}
	if _, err := steps.RefMoves(ctx, t.TempDir(), []gate.RefUpdate{{Old: z, New: loose, Ref: "refs/heads/x"}}, nil); err == nil || errors.Is(err, gate.ErrTooManyCommits) {
		t.Fatalf("not a repository: %v", err)
	}
}
