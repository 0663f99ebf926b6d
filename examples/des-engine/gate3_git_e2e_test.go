package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// configureEvilFilters makes the repository at root name programs that
// leave a file in marks when git runs them: a clean, smudge and process
// filter and a textconv driver for every JSON file, an external diff and an
// fsmonitor hook, as an agent could set in .git/config.
func configureEvilFilters(t *testing.T, root string) (marks string) {
	t.Helper()
	marks = t.TempDir()
	writeFile(t, root, ".gitattributes", "*.json filter=evil diff=evil\n")
	git(t, root, "add", ".gitattributes")
	git(t, root, "commit", "-qm", "attributes")
	mark := func(name string) string { return "touch " + filepath.Join(marks, name) + "; cat" }
	git(t, root, "config", "filter.evil.clean", mark("clean"))
	git(t, root, "config", "filter.evil.smudge", mark("smudge"))
	git(t, root, "config", "filter.evil.process", "touch "+filepath.Join(marks, "process"))
	git(t, root, "config", "filter.evil.required", "true")
	git(t, root, "config", "diff.evil.textconv", mark("textconv"))
	git(t, root, "config", "diff.external", "touch "+filepath.Join(marks, "extdiff")+" #")
	git(t, root, "config", "core.fsmonitor", "touch "+filepath.Join(marks, "fsmonitor")+" #")
	return marks
}

func assertNoMarks(t *testing.T, marks, when string) {
	t.Helper()
	ents, _ := os.ReadDir(marks)
	for _, e := range ents {
		t.Errorf("%s: the hook ran a program the repository configures (%s)", when, e.Name())
	}
}

// Gate 3 reads what a commit holds with git; the repository's filters,
// textconv, external diff and fsmonitor must never run inside the hook,
// and Gate 3 still judges the commit.
func TestE2EGate3RunsNoRepositoryProgram(t *testing.T) {
	t.Parallel()
	root := gitProject(t)
	// The step is committed finished before the drivers exist, then left
	// unfinished in the work tree with an old time stamp, so git has to
	// look at its content (the clean filter's moment).
	writeFile(t, root, stepPath, finishedStep(t, "EXECUTED"))
	git(t, root, "add", stepPath)
	git(t, root, "commit", "-qm", "finished")
	marks := configureEvilFilters(t, root)
	unfinished := finishedStep(t, "IN_PROGRESS")
	old := time.Now().Add(-time.Hour)
	write := func() {
		writeFile(t, root, stepPath, unfinished)
		if err := os.Chtimes(filepath.Join(root, stepPath), old, old); err != nil {
			t.Fatal(err)
		}
	}
	write()
	writeFile(t, root, "docs/feature/shop/steps/01-03.json", unfinished) // untracked
	for _, command := range []string{
		"git commit -am wip",
		"git add -A && git commit -m wip",
		"git commit -m wip -- " + stepPath,
		"git commit -m wip $(git diff --name-only)",
	} {
		r := runHookProcess(t, root, nil, bashEvent(t, root, command))
		if reason := denyReason(t, r); !strings.Contains(reason, "[DES-COMMIT-PHASE-OPEN]") {
			t.Errorf("%s: want Gate 3's deny, got %q\nstderr %s", command, reason, r.stderr)
		}
		assertNoMarks(t, marks, command)
	}
	// A staged copy: Gate 3 reads the blob, and no filter either.
	git(t, root, "-c", "filter.evil.clean=", "-c", "filter.evil.process=", "-c", "filter.evil.required=false", "-c", "core.fsmonitor=false", "add", stepPath)
	assertNoMarks(t, marks, "setup")
	r := runHookProcess(t, root, nil, bashEvent(t, root, heredocCommit))
	if reason := denyReason(t, r); !strings.Contains(reason, "[DES-COMMIT-PHASE-OPEN]") {
		t.Errorf("staged: want Gate 3's deny, got %q", reason)
	}
	assertNoMarks(t, marks, "staged")
}

// When git cannot list what a commit holds, DES is in charge of a project
// that has step files on disk: DES-INTERNAL with git's message, not the
// "no opinion" that would let the commit through unjudged. A project
// without step files gets no opinion.
func TestE2EGate3GitFailureFailsClosed(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		break_ func(t *testing.T, root string)
		want   string
	}{
		{"corrupt index", func(t *testing.T, root string) {
			writeFile(t, root, ".git/index", "garbage")
		}, "index file smaller than expected"},
		{"config git cannot read", func(t *testing.T, root string) {
			f, err := os.OpenFile(filepath.Join(root, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = f.WriteString("[core\nbad")
			f.Close()
		}, "bad config line"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := gitProject(t)
			c.break_(t, root)
			if r := runHookProcess(t, root, nil, bashEvent(t, root, "git commit -am wip")); r.stdout != "" || r.code != 0 {
				t.Errorf("no step file: want no opinion, got %q (status %d)", r.stdout, r.code)
			}
			writeFile(t, root, stepPath, finishedStep(t, "EXECUTED"))
			r := runHookProcess(t, root, nil, bashEvent(t, root, "git commit -am wip"))
			reason := denyReason(t, r)
			for _, want := range []string{"[DES-INTERNAL] ", "cannot tell which step files the git commit would hold", c.want, "Recovery:"} {
				if !strings.Contains(reason, want) {
					t.Errorf("reason lacks %q:\n%s\nstderr %s", want, reason, r.stderr)
				}
			}
		})
	}
}
