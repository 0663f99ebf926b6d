package integrity

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/proctree"
)

// orphan starts what a Bash command's "&" leaves once its shell exits: a
// process adopted by pid 1. It is killed at the end of the test.
func orphan(t *testing.T, dir string, seconds int) int {
	t.Helper()
	// In a session of its own, as Claude Code runs each Bash command.
	cmd := exec.Command("sh", "-c", "sleep "+strconv.Itoa(seconds)+" >/dev/null 2>&1 & echo $!")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Dir = dir // in the project, as an agent's command runs
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	t.Cleanup(func() { _ = exec.Command("kill", strconv.Itoa(pid)).Run() })
	return pid
}

func trackingProject(t *testing.T) (string, *Checker, *time.Time) {
	t.Helper()
	if !(proctree.Tree{}).Supported() {
		t.Skip("no Linux /proc here: calls count for their fixed lifetime")
	}
	root, c := project(t)
	c.client = os.Getpid() // the test stands for the hook: its parents for Claude Code
	now := time.Now()
	c.now = func() time.Time { return now }
	return root, c, &now
}

// A background job a call left stays the call's for as long as it runs,
// past any fixed lifetime: its late write is undone by the next check,
// not taken in as a person's edit between calls.
func TestBackgroundJobKeepsCallInFlight(t *testing.T) {
	t.Parallel()
	root, c, now := trackingProject(t)
	ctx := context.Background()
	if _, err := c.Begin(ctx, "toolu_bg", nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	job := orphan(t, root, 60)
	if _, err := c.EndCall(ctx, Call{ID: "toolu_bg", StillRunning: true, Command: "sleep 60 &"}); err != nil {
		t.Fatal(err)
	}
	*now = now.Add(3 * InFlightLifetime) // long past the fixed lifetime
	if got := c.inFlight(""); len(got) != 1 {
		t.Fatalf("the call with a running job: in flight %v", got)
	}
	// The person's own process is not the call's; the job is.
	if got := c.CallerInCall(os.Getpid()); len(got) != 0 {
		t.Errorf("a person's process counts as the call's: %v", got)
	}
	if got := c.CallerInCall(job); len(got) != 1 {
		t.Errorf("the job is not the call's: %v", got)
	}
	write(t, root, ".des/config.json", `{"late": true}`) // the job's late write
	if refreshed, err := c.Begin(ctx, "toolu_next", nil, time.Minute); err != nil || refreshed {
		t.Fatalf("Begin while the job runs: refreshed %v, %v", refreshed, err)
	}
	ref := proctree.Ref{PID: job, Start: mustStart(t, job)}
	_ = exec.Command("kill", strconv.Itoa(job)).Run()
	for deadline := time.Now().Add(20 * time.Second); (proctree.Tree{}).Alive(ref) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	rep, err := c.End(ctx, "toolu_next", false)
	if err != nil || len(rep.Changes) != 1 || !rep.Restored() || rep.Changes[0].Kept == "" {
		t.Fatalf("End after the job: %+v %v", rep, err)
	}
	if got := readFile(t, root, ".des/config.json"); got != `{"stale_threshold_minutes": 30}` {
		t.Errorf("the late write persists: %s", got)
	}
	// The job has ended and its call with it: a hand edit now is the person's.
	write(t, root, ".des/config.json", `{"a": 1}`)
	if refreshed, err := c.Begin(ctx, "toolu_3", nil, time.Minute); err != nil || !refreshed {
		t.Fatalf("Begin once the job ended: refreshed %v, %v", refreshed, err)
	}
	if rep, err := c.End(ctx, "toolu_3", false); err != nil || len(rep.Changes) != 0 {
		t.Fatalf("a hand edit after the job: %+v %v", rep, err)
	}
}

func mustStart(t *testing.T, pid int) uint64 {
	p, err := proctree.Tree{}.Read(pid)
	if err != nil {
		return 0
	}
	return p.Start
}

// A helper a command starts detached and that ends milliseconds after it
// (the go command's telemetry child, on a configuration directory new to
// it) does not keep the call in flight: End waits for it (leftGrace), so
// a hand edit made after the call is the person's. Its own write, made
// before it ended, is judged by that End.
func TestShortLivedHelperEndsWithTheCall(t *testing.T) {
	t.Parallel()
	root, c, _ := trackingProject(t)
	ctx := context.Background()
	if _, err := c.Begin(ctx, "toolu_go", nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	// The helper outlives its shell by 50 ms, then writes a protected file.
	cmd := exec.Command("sh", "-c", `(sleep 0.05; echo '{"helper": 1}' > .des/config.json) >/dev/null 2>&1 &`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Dir = root
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	rep, err := c.EndCall(ctx, Call{ID: "toolu_go", StillRunning: true, Command: "go version"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.inFlight(""); len(got) != 0 {
		t.Fatalf("the helper has ended, yet the call is in flight: %v", got)
	}
	if len(rep.Changes) != 1 || !rep.Restored() {
		t.Fatalf("the helper's write was not judged by the call's End: %+v", rep)
	}
	write(t, root, ".des/config.json", `{"person": 1}`)
	if refreshed, err := c.Begin(ctx, "toolu_next", nil, time.Minute); err != nil || !refreshed {
		t.Fatalf("Begin after the call: refreshed %v, %v", refreshed, err)
	}
	if rep, err := c.End(ctx, "toolu_next", false); err != nil || len(rep.Changes) != 0 {
		t.Fatalf("the hand edit was undone: %+v %v", rep, err)
	}
	if got := readFile(t, root, ".des/config.json"); got != `{"person": 1}` {
		t.Errorf("the hand edit is lost: %s", got)
	}
}

// A command that only looked as if it left something running ("Tom &
// Jerry") ends at its End: a hand edit right after it is the person's,
// and `integrity accept` is not refused.
func TestNothingLeftRunningEndsTheCall(t *testing.T) {
	t.Parallel()
	root, c, _ := trackingProject(t)
	ctx := context.Background()
	if _, err := c.Begin(ctx, "toolu_echo", nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := c.EndCall(ctx, Call{ID: "toolu_echo", StillRunning: true, Command: `echo "Tom & Jerry"`}); err != nil {
		t.Fatal(err)
	}
	if got := c.inFlight(""); len(got) != 0 {
		t.Fatalf("nothing runs on, yet in flight: %v", got)
	}
	write(t, root, ".des/config.json", `{"b": 2}`)
	if err := c.Accept(ctx, nil); err != nil {
		t.Fatalf("accept: %v", err)
	}
	if refreshed, err := c.Begin(ctx, "toolu_next", nil, time.Minute); err != nil || !refreshed {
		t.Fatalf("Begin: refreshed %v, %v", refreshed, err)
	}
	if rep, err := c.End(ctx, "toolu_next", false); err != nil || len(rep.Changes) != 0 {
		t.Fatalf("the hand edit was undone: %+v %v", rep, err)
	}
	if got := readFile(t, root, ".des/config.json"); got != `{"b": 2}` {
		t.Errorf("the hand edit is lost: %s", got)
	}
}

// While only a background job runs on, a person can accept: the refusal is
// for the processes of the call, not for the person at another terminal.
func TestAcceptWhileAJobRuns(t *testing.T) {
	t.Parallel()
	root, c, _ := trackingProject(t)
	ctx := context.Background()
	if _, err := c.Begin(ctx, "toolu_srv", nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	orphan(t, root, 60)
	if _, err := c.EndCall(ctx, Call{ID: "toolu_srv", StillRunning: true, Command: "npm run dev &"}); err != nil {
		t.Fatal(err)
	}
	write(t, root, ".des/config.json", `{"c": 3}`)
	if err := c.Accept(ctx, nil); err != nil {
		t.Fatalf("accept by a person while the job runs: %v", err)
	}
	// A synchronous call in progress still refuses it.
	if _, err := c.Begin(ctx, "toolu_sync", nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := c.Accept(ctx, nil); err == nil {
		t.Error("accept while a call runs was not refused")
	}
}

// A call Claude Code reports done without its End (the user declined it:
// PostToolBatch lists it, no PostToolUse comes) is ended by EndOpen: a
// hand edit after it is the person's, not undone for the call's lifetime.
func TestEndOpenEndsADeclinedCall(t *testing.T) {
	t.Parallel()
	root, c, _ := trackingProject(t)
	ctx := context.Background()
	if _, err := c.Begin(ctx, "toolu_declined", nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	rep, ok, err := c.EndOpen(ctx, Call{ID: "toolu_declined", StillRunning: true, Command: "rm -rf node_modules"})
	if err != nil || !ok || len(rep.Changes) != 0 {
		t.Fatalf("EndOpen of the declined call: %+v %v %v", rep, ok, err)
	}
	if got := c.inFlight(""); len(got) != 0 {
		t.Fatalf("the declined call is still in flight: %v", got)
	}
	if _, ok, err := c.EndOpen(ctx, Call{ID: "toolu_declined"}); ok || err != nil {
		t.Errorf("a second EndOpen: %v %v; want nothing done", ok, err)
	}
	write(t, root, ".des/config.json", `{"person": 1}`)
	if refreshed, err := c.Begin(ctx, "toolu_next", nil, time.Minute); err != nil || !refreshed {
		t.Fatalf("Begin after the declined call: refreshed %v, %v", refreshed, err)
	}
	if rep, err := c.End(ctx, "toolu_next", false); err != nil || len(rep.Changes) != 0 {
		t.Fatalf("the hand edit was undone: %+v %v", rep, err)
	}
	if got := readFile(t, root, ".des/config.json"); got != `{"person": 1}` {
		t.Errorf("the hand edit is lost: %s", got)
	}
}

// EndOpen judges what changed while the call was open (its PostToolUse
// hook killed before its check), and leaves alone a call whose End came
// and that stays in flight for what it left running, with or without a
// process tree.
func TestEndOpenJudgesAndLeavesEndedCalls(t *testing.T) {
	t.Parallel()
	root, c, _ := trackingProject(t)
	ctx := context.Background()
	if _, err := c.Begin(ctx, "toolu_open", nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	write(t, root, ".des/config.json", `{"forged": true}`)
	rep, ok, err := c.EndOpen(ctx, Call{ID: "toolu_open"})
	if err != nil || !ok || len(rep.Changes) != 1 || !rep.Restored() {
		t.Fatalf("EndOpen of a call that wrote: %+v %v %v", rep, ok, err)
	}
	if _, err := c.Begin(ctx, "toolu_bg", nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	orphan(t, root, 60)
	if _, err := c.EndCall(ctx, Call{ID: "toolu_bg", StillRunning: true, Command: "sleep 60 &"}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c.EndOpen(ctx, Call{ID: "toolu_bg"}); ok || err != nil {
		t.Errorf("EndOpen of a call whose End came and whose job runs: %v %v; want nothing done", ok, err)
	}
	if got := c.inFlight(""); len(got) != 1 {
		t.Errorf("the call with a running job: in flight %v", got)
	}
	if _, ok, err := c.EndOpen(ctx, Call{ID: "toolu_unknown"}); ok || err != nil {
		t.Errorf("EndOpen of a call never begun: %v %v", ok, err)
	}

	// Without a process tree, a command that reads as leaving something
	// running stays for its fixed lifetime after its End.
	_, c2 := project(t)
	if _, err := c2.Begin(ctx, "toolu_nohup", nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.EndCall(ctx, Call{ID: "toolu_nohup", StillRunning: true}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := c2.EndOpen(ctx, Call{ID: "toolu_nohup"}); ok || err != nil {
		t.Errorf("EndOpen after End, no process tree: %v %v; want nothing done", ok, err)
	}
	if got := c2.inFlight(""); len(got) != 1 {
		t.Errorf("the call that reads as leaving a job: in flight %v", got)
	}
}

// A check that runs out of time judged nothing for sure: the call stays in
// flight, so the next Begin keeps the baseline and the next check finds
// the call's change (found by an attacker's review: the call was cleared,
// and the next Begin took its change as the baseline).
func TestCheckOutOfTimeKeepsTheCallInFlight(t *testing.T) {
	t.Parallel()
	root, c := project(t)
	ctx := context.Background()
	if _, err := c.Begin(ctx, "toolu_a", nil, time.Minute); err != nil {
		t.Fatal(err)
	}
	write(t, root, ".des/config.json", `{"forged": true}`)
	dead, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel()
	if _, err := c.EndCall(dead, Call{ID: "toolu_a"}); err == nil {
		t.Skip("the check did not run out of time")
	}
	if refreshed, err := c.Begin(ctx, "toolu_b", nil, time.Minute); err != nil || refreshed {
		t.Fatalf("Begin after a check out of time: refreshed %v, %v", refreshed, err)
	}
	rep, err := c.End(ctx, "toolu_b", false)
	if err != nil || len(rep.Changes) != 1 || !rep.Restored() {
		t.Fatalf("the next check: %+v %v; want the change restored", rep, err)
	}
}
