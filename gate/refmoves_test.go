package gate_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/gate"
)

func TestParseRefUpdates(t *testing.T) {
	z := strings.Repeat("0", 40)
	a := strings.Repeat("a", 40)
	got, err := gate.ParseRefUpdates([]byte(z + " " + a + " refs/heads/main\n\n" + a + " " + z + " refs/tags/v1\n"))
	if err != nil || len(got) != 2 || got[0].Ref != "refs/heads/main" || got[1].New != z {
		t.Fatalf("ParseRefUpdates = %+v, %v", got, err)
	}
	if _, err := gate.ParseRefUpdates([]byte("x y\n")); err == nil {
		t.Error("a malformed line was taken")
	}
}

// RefMove lists the step files of the commits a move lands: a commit only
// commit-tree made (no branch reached it), with the content it holds; a
// move to a commit a branch already has lands nothing; refs/stash is not
// judged.
func TestRefMoveJudgesIntroducedCommits(t *testing.T) {
	dir := newRepo(t)
	const step = "docs/feature/shop/steps/01-01.json"
	writeRepoFile(t, dir, step, `{"task_id": "01-01", "state": {"status": "TODO"}, "tdd_cycle": {"phase_execution_log": []}}`)
	writeRepoFile(t, dir, "README", "x")
	runGit(t, dir, "add", "-A")
	runGit(t, dir, "commit", "-qm", "plan")
	base := strings.TrimSpace(runGit(t, dir, "rev-parse", "HEAD"))
	writeRepoFile(t, dir, step, `{"task_id": "01-01", "state": {"status": "IN_PROGRESS"}, "tdd_cycle": {"phase_execution_log": []}}`)
	runGit(t, dir, "add", "-A")
	tree := strings.TrimSpace(runGit(t, dir, "write-tree"))
	forged := strings.TrimSpace(runGit(t, dir, "commit-tree", tree, "-p", base, "-m", "forged"))
	z := strings.Repeat("0", 40)
	s := gate.StepFiles{Root: dir}
	ctx := context.Background()

	files, err := s.RefMove(ctx, dir, []gate.RefUpdate{{Old: base, New: forged, Ref: "refs/heads/main"}})
	if err != nil || len(files) != 1 || files[0].Path != filepath.Join(dir, step) || !strings.Contains(string(files[0].Content), "IN_PROGRESS") {
		t.Fatalf("a commit-tree commit onto main: %+v, %v", files, err)
	}
	for name, u := range map[string]gate.RefUpdate{
		"a branch to a commit main has": {Old: z, New: base, Ref: "refs/heads/feat"},
		"refs/stash":                    {Old: z, New: forged, Ref: "refs/stash"},
		"a deletion":                    {Old: base, New: z, Ref: "refs/heads/old"},
	} {
		if files, err := s.RefMove(ctx, dir, []gate.RefUpdate{u}); err != nil || len(files) != 0 {
			t.Errorf("%s: %+v, %v; want nothing to judge", name, files, err)
		}
	}
	// A tag of the forged commit lands it too.
	if files, err := s.RefMove(ctx, dir, []gate.RefUpdate{{Old: z, New: forged, Ref: "refs/tags/v1"}}); err != nil || len(files) != 1 {
		t.Errorf("a tag of an unlanded commit: %+v, %v", files, err)
	}
}
