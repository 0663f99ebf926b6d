package gate_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/gate"
)

// swapOnExpect is the agent's racer made deterministic: just before DES
// writes a path whose name ends with suffix (the moment Writes.Expect is
// told of it, after every check), the path is replaced by a symbolic link
// to target. Sandboxed Bash can do this with a background loop in any
// directory it may write (a steps directory, .des/runs).
type swapOnExpect struct {
	suffix, target string
	swapped        int
}

func (s *swapOnExpect) Expect(path string, _ []byte) error {
	if strings.HasSuffix(path, s.suffix) {
		_ = os.Remove(path)
		if os.Symlink(s.target, path) == nil {
			s.swapped++
		}
	}
	return nil
}

func (s *swapOnExpect) Settle(context.Context, string) error { return nil }

// outsideFile is a file outside the project that the agent may not write
// (the user's ~/.bashrc).
func outsideFile(t *testing.T) (path, content string) {
	t.Helper()
	path, content = filepath.Join(t.TempDir(), ".bashrc"), "echo original\n"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, content
}

func assertUntouched(t *testing.T, path, content string) {
	t.Helper()
	if got, err := os.ReadFile(path); err != nil || string(got) != content {
		t.Errorf("the file outside the project was changed through a link: now %q (err %v), was %q", got, err, content)
	}
}

// Gate 1 moves the task to IN_PROGRESS by rewriting the step file, outside
// the sandbox. A link the agent swaps in for the step file after Gate 1
// read it must not lead that write to a file outside the project.
func TestGate1StartDoesNotWriteThroughALinkSwappedIn(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	bashrc, was := outsideFile(t)
	sw := &swapOnExpect{suffix: filepath.FromSlash(stepRel), target: bashrc}
	eng, err := des.New(t.Context(), des.WithRoot(root), des.WithClock(func() time.Time { return gate1Now }), des.WithWrites(sw),
		des.WithEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatal(err)
	}
	p := &project{t, root, eng}
	p.writeStep(stepRel, todoStep())
	_, _ = eng.PreInvocation(t.Context(), gate.Invocation{Prompt: render(t, "execute-step", todoStep()), ToolUseID: "toolu_01", SessionID: "sess", AgentType: "software-crafter"})
	if sw.swapped == 0 {
		t.Fatal("the step file was never written: the test shows nothing")
	}
	assertUntouched(t, bashrc, was)
}

// pendingProject is a project with a step file and an allowed write of it
// ready (the write guard's PreToolUse), with w told of DES's writes.
func pendingProject(t *testing.T, w gate.Writes) (p *project, incoming string) {
	t.Helper()
	root := t.TempDir()
	opts := []des.Option{des.WithRoot(root), des.WithClock(func() time.Time { return gate1Now }), des.WithEnv(func(string) (string, bool) { return "", false })}
	if w != nil {
		opts = append(opts, des.WithWrites(w))
	}
	eng, err := des.New(t.Context(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	p = &project{t, root, eng}
	p.writeStep(stepRel, stepDoc("IN_PROGRESS", [4]string{"PREPARE", "IN_PROGRESS", "", ""}))
	return p, stepDoc("IN_PROGRESS", [4]string{"PREPARE", "EXECUTED", "PASS", ""}, [4]string{"RED_ACCEPTANCE", "IN_PROGRESS", "", ""})
}

// pendingDir is where des kept pending document writes once, in the
// project: a program may still put them there.
const pendingDir = ".des/runs/pending"

// inProjectPending is the write guard of p with its pending records in
// pendingDir, where a program may still put them (DES itself keeps them in
// its per-user state directory, statedir.Evidence): sandboxed Bash may
// write there.
func inProjectPending(p *project) gate.DocumentWrite {
	d := p.eng.DocumentWriteGate()
	d.PendingDir = filepath.Join(p.root, pendingDir)
	return d
}

// A pending record in the project (a PendingDir a program chose there),
// which sandboxed Bash may write: a link there must not lead DES's write
// of the record to a file outside the project.
func TestPendingRecordDoesNotWriteThroughALink(t *testing.T) {
	t.Parallel()
	bashrc, was := outsideFile(t)
	sw := &swapOnExpect{suffix: "toolu_w1.json", target: bashrc}
	p, incoming := pendingProject(t, sw)
	if err := os.MkdirAll(filepath.Join(p.root, pendingDir), 0o755); err != nil { // as after the first write
		t.Fatal(err)
	}
	// Refused or not, the write must not go through the link.
	_, _ = inProjectPending(p).Check(t.Context(), p.eng, gate.WriteCall{Tool: "Write", Path: filepath.Join(p.root, stepRel), Content: &incoming, ToolUseID: "toolu_w1", SessionID: "s"})
	if sw.swapped == 0 {
		t.Fatal("no pending record was written: the test shows nothing")
	}
	assertUntouched(t, bashrc, was)
}

// Nor may a link put in place of the pending directory make DES create
// its record outside the project.
func TestPendingDirectoryLinkIsNotFollowed(t *testing.T) {
	t.Parallel()
	p, incoming := pendingProject(t, nil)
	outside := t.TempDir()
	if err := os.MkdirAll(filepath.Join(p.root, des.RunsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(p.root, pendingDir)); err != nil {
		t.Fatal(err)
	}
	_, _ = inProjectPending(p).Check(t.Context(), p.eng, gate.WriteCall{Tool: "Write", Path: filepath.Join(p.root, stepRel), Content: &incoming, ToolUseID: "toolu_w1", SessionID: "s"})
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("DES created %s outside the project, through the link at %s", ents[0].Name(), pendingDir)
	}
}

// A FIFO put in place of a pending record (sandboxed Bash may write
// .des/runs/pending) must not hold ConfirmWrite, and with it the
// PostToolUse hook, forever.
func TestConfirmWriteDoesNotWaitOnAFIFO(t *testing.T) {
	t.Parallel()
	p, incoming := pendingProject(t, nil)
	d := inProjectPending(p)
	if _, err := d.Check(t.Context(), p.eng, gate.WriteCall{Tool: "Write", Path: filepath.Join(p.root, stepRel), Content: &incoming, ToolUseID: "toolu_w1", SessionID: "s"}); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(p.root, pendingDir, "toolu_w1.json")
	if err := os.Remove(rec); err != nil {
		t.Fatal(err)
	}
	if err := mkfifo(rec); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	t.Cleanup(func() { // release a blocked open, if any
		if f, err := os.OpenFile(rec, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = d.Confirm(context.Background(), "toolu_w1")
	}()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("ConfirmWrite still waits after 3s on a FIFO at the pending record")
	}
}

// Gate 2 marks a failed step FAILED by rewriting it, outside the sandbox:
// a link swapped in for the step file after Gate 2 re-read it must not
// carry the rewrite to a file outside the project.
func TestGate2RewriteDoesNotWriteThroughALinkSwappedIn(t *testing.T) {
	t.Parallel()
	p := newStopProject(t)
	bashrc, was := outsideFile(t)
	g := p.gate()
	sw := &swapOnExpect{suffix: filepath.FromSlash(stepRel), target: bashrc}
	g.Writes = sw
	_, _ = g.Check(t.Context(), &fakeEvaluator{answer: denyAbandoned()}, p.stop())
	if sw.swapped == 0 {
		t.Fatal("the step file was never rewritten: the test shows nothing")
	}
	assertUntouched(t, bashrc, was)
}
