package gate_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
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
