package proctree

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	p, err := parseStat([]byte("4242 (a (b) c) S 17 4242 4242 0 -1 4194304 102 0 1 0 0 0 0 0 20 0 1 0 1153665 3133440 416"))
	if err != nil {
		t.Fatal(err)
	}
	if p.PID != 4242 || p.PPID != 17 || p.Start != 1153665 || p.Comm != "a (b) c" || p.Zombie {
		t.Errorf("parsed %+v", p)
	}
	if _, err := parseStat([]byte("12 (x) S 1")); err == nil {
		t.Error("a short stat parsed")
	}
}

// A background job a command leaves once its shell exits is found; a
// child of the origin that runs no such command is not, until its command
// line names the command.
func TestLeftRunning(t *testing.T) {
	tree := Tree{}
	if !tree.Supported() {
		t.Skip("no Linux /proc here")
	}
	since, err := tree.Ticks(time.Now().Add(-time.Second))
	if err != nil {
		t.Fatal(err)
	}
	self, err := tree.Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	origin := []Ref{self.Ref}
	// The orphan: sh starts it in the background and exits.
	// In a session of its own, as Claude Code runs each Bash command.
	sh := exec.Command("sh", "-c", "sleep 37 >/dev/null 2>&1 & echo $!")
	sh.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := sh.Output()
	if err != nil {
		t.Fatal(err)
	}
	orphan, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	t.Cleanup(func() { _ = exec.Command("kill", strconv.Itoa(orphan)).Run() })
	// A direct child of the origin: a hook, say.
	child := exec.Command("sleep", "38")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })

	pids := func(c Call) []int {
		all, err := tree.All()
		if err != nil {
			t.Fatal(err)
		}
		var out []int
		for _, r := range tree.LeftRunning(all, c) {
			out = append(out, r.PID)
		}
		return out
	}
	got := pids(Call{UID: os.Getuid(), Since: since, Origin: origin})
	if !slices.Contains(got, orphan) {
		t.Errorf("the orphaned background job %d is not found: %v", orphan, got)
	}
	if slices.Contains(got, child.Process.Pid) {
		t.Errorf("a child of the origin running another command was taken: %v", got)
	}
	if got := pids(Call{UID: os.Getuid(), Since: since, Origin: origin, Command: "sleep 38"}); !slices.Contains(got, child.Process.Pid) {
		t.Errorf("the origin's shell running the command is not found: %v", got)
	}
	// Processes that started before the command are never its.
	later, _ := tree.Ticks(time.Now().Add(time.Hour))
	if got := pids(Call{UID: os.Getuid(), Since: later, Origin: origin}); len(got) != 0 {
		t.Errorf("processes older than the command: %v", got)
	}
	// Skipped: des's own.
	if got := pids(Call{UID: os.Getuid(), Since: since, Origin: origin, Skip: func(p Proc) bool { return p.PID == orphan }}); slices.Contains(got, orphan) {
		t.Errorf("a skipped process was taken: %v", got)
	}
	r, _ := tree.Read(orphan)
	if !tree.Alive(r.Ref) {
		t.Error("the orphan is not alive")
	}
	if tree.Alive(Ref{PID: orphan, Start: r.Start + 1}) {
		t.Error("a reused pid counts as the same process")
	}
}

// Another program's orphan, or another Claude Code's, started during the
// command is not its: an orphan counts when it names this Claude Code
// (CLAUDE_PID) or, naming none, works inside the project.
func TestLeftRunningTellsOtherSessions(t *testing.T) {
	tree := Tree{}
	if !tree.Supported() {
		t.Skip("no Linux /proc here")
	}
	since, _ := tree.Ticks(time.Now().Add(-time.Second))
	self, _ := tree.Read(os.Getpid())
	project, elsewhere := t.TempDir(), t.TempDir()
	start := func(dir string, env ...string) int {
		sh := exec.Command("sh", "-c", "sleep 41 >/dev/null 2>&1 & echo $!")
		sh.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		sh.Dir, sh.Env = dir, append(os.Environ(), env...)
		out, err := sh.Output()
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
		t.Cleanup(func() { _ = exec.Command("kill", strconv.Itoa(pid)).Run() })
		return pid
	}
	inProject := start(project)
	outside := start(elsewhere)
	ourClaude := start(elsewhere, "CLAUDE_PID="+strconv.Itoa(os.Getpid()))
	otherClaude := start(project, "CLAUDE_PID=1")
	all, err := tree.All()
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]bool{}
	for _, r := range tree.LeftRunning(all, Call{UID: os.Getuid(), Since: since, Origin: []Ref{self.Ref}, Root: project}) {
		got[r.PID] = true
	}
	if !got[inProject] || !got[ourClaude] {
		t.Errorf("this Claude Code's orphans: %v (in the project %d, naming it %d)", got, inProject, ourClaude)
	}
	if got[outside] || got[otherClaude] {
		t.Errorf("another program's or another Claude Code's orphans taken: %v (elsewhere %d, another Claude Code %d)", got, outside, otherClaude)
	}
}
