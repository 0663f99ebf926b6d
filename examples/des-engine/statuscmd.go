package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/deterministic-exec/des"
)

// The orchestration status: `des-hook statusline` for Claude Code's status
// line, `des-hook status` for people.

// statusLineInput is the part of Claude Code's status-line JSON DES reads.
type statusLineInput struct {
	Cwd       string `json:"cwd"`
	Workspace struct {
		ProjectDir string `json:"project_dir"`
		CurrentDir string `json:"current_dir"`
	} `json:"workspace"`
}

// statusLineRead bounds the status line's read of stdin: Claude Code pipes
// a small JSON object and closes it; a terminal never closes it.
const (
	statusLineReadWait = 500 * time.Millisecond
	statusLineMaxInput = 1 << 20
)

// runStatusLine prints one line for Claude Code's status line, e.g.
// "[PAR] Active: 2 Wave 1 | Last: codebase-context-analyzer completed (87s)".
// It never fails loudly: a status line that errors shows nothing useful,
// so any problem is a short line and exit 0.
func runStatusLine(ctx context.Context, e env, args []string) int {
	return statusLine(ctx, e, args, os.Stdin)
}

func statusLine(ctx context.Context, e env, args []string, stdin io.Reader) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
		fmt.Fprintln(e.stderr, "usage: des-hook statusline\n\n"+statusLineDoc)
		return exitOK
	}
	in := readStatusLineInput(stdin)
	root := statusLineRoot(e.lookupEnv, in)
	cfg, err := des.LoadConfig(root, e.lookupEnv)
	if err != nil {
		fmt.Fprintln(e.stdout, "[DES] settings error: "+shorten(err.Error(), 80))
		return exitOK
	}
	st, err := des.StatusOf(ctx, root, cfg, time.Now())
	if err != nil {
		fmt.Fprintln(e.stdout, "[DES] status unavailable: "+shorten(err.Error(), 80))
		return exitOK
	}
	fmt.Fprintln(e.stdout, formatStatusLine(st))
	return exitOK
}

const statusLineDoc = `Prints one line for Claude Code's statusLine setting (hook settings installs it):
the mode of the task graph's current wave ([PAR] parallel, [SEQ] sequential, [DES]
without a graph), the subagents running, the current wave, and the subagent that
stopped last with how long it ran, and the iSDLC workflow's current phase with its
test iterations (run/maximum and the last result, as des recorded them). Reads Claude Code's status-line JSON on stdin
(optional). The project root is CLAUDE_PROJECT_DIR, else the JSON's
workspace.project_dir, else its cwd, else the current directory. Always exits 0.`

// readStatusLineInput reads Claude Code's JSON when there is any: stdin
// may be a terminal, empty, or not JSON, all of which mean "nothing".
func readStatusLineInput(r io.Reader) statusLineInput {
	var in statusLineInput
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeCharDevice != 0 {
			return in // a terminal: nobody will write or close it
		}
	}
	done := make(chan []byte, 1)
	go func() {
		data, _ := io.ReadAll(io.LimitReader(r, statusLineMaxInput))
		done <- data
	}()
	select {
	case data := <-done:
		_ = json.Unmarshal(data, &in)
	case <-time.After(statusLineReadWait):
	}
	return in
}

// statusLineRoot is the project root of the status line.
func statusLineRoot(lookupEnv func(string) (string, bool), in statusLineInput) string {
	root, _ := lookupEnv("CLAUDE_PROJECT_DIR")
	for _, r := range []string{in.Workspace.ProjectDir, in.Cwd} {
		if root == "" {
			root = r
		}
	}
	if root == "" {
		root, _ = os.Getwd()
	}
	if abs, err := filepath.Abs(root); err == nil {
		return abs
	}
	return root
}

// formatStatusLine renders the status as one line. Without a graph the
// mode is [DES] and there is no wave; without a stopped subagent there is
// no "Last" part; a graph DES cannot read says so in place of the wave.
func formatStatusLine(st des.OrchestrationStatus) string {
	mode, wave := "[DES]", ""
	if g := st.Graph; g != nil {
		switch {
		case g.Problem != "":
			mode, wave = "[DES]", " Graph unreadable"
		case g.CurrentWave >= len(g.Waves):
			mode, wave = "[SEQ]", " Waves done"
		default:
			mode = "[SEQ]"
			if g.Waves[g.CurrentWave].Parallel {
				mode = "[PAR]"
			}
			wave = fmt.Sprintf(" Wave %d", g.CurrentWave)
		}
	}
	line := fmt.Sprintf("%s Active: %d%s", mode, len(st.Running), wave)
	if l := st.Last; l != nil {
		name := l.Type
		if name == "" {
			name = l.ID
		}
		line += fmt.Sprintf(" | Last: %s completed (%ds)", name, int(l.Seconds+0.5))
	}
	if w := st.Workflow; w != nil && w.Phase != "" {
		line += " | " + w.Phase
		if w.TestIteration > 0 {
			line += fmt.Sprintf(" tests %d", w.TestIteration)
			if w.MaxIterations > 0 {
				line += fmt.Sprintf("/%d", w.MaxIterations)
			}
			line += " " + w.LastTestResult
			if w.TestStatus == "escalated" {
				line += " (escalated)"
			}
		}
	}
	return line
}

// shorten keeps a status line to one short line.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

const statusDoc = `Shows whether the warm decision server of this des-engine answers (and, when the last
hook event was decided in process instead, why and what fixes it), where the
project's decisions are made ("embedded", or the opa_url) and the
organisation's policy bundles (URL, revision, when fetched, the key that verified
it, and whether it is in use), then the orchestration governance: the settings in force
(delegation_mode, max_concurrent_agents, session_ttl_minutes, task_graph_file), the
subagents running now with their ages, the one that stopped last, and the task
graph: its waves, each phase's type, status and retries. --json prints the same as
one JSON object. Exit 0, or 2 when the settings or the registry cannot be read.`

func runStatus(ctx context.Context, e env, args []string) int {
	fs := newFlagSet(e, "status", "[--json]", statusDoc)
	asJSON := fs.Bool("json", false, "print JSON")
	if code, done := parseFlags(fs, args, 0); done {
		return code
	}
	root := commandRoot(ctx, e.lookupEnv)
	cfg, err := des.LoadConfig(root, e.lookupEnv)
	if err != nil {
		fmt.Fprintf(e.stderr, "des-hook status: %v\n", err)
		return exitUsage
	}
	st, err := des.StatusOf(ctx, root, cfg, time.Now())
	if err != nil {
		fmt.Fprintf(e.stderr, "des-hook status: %v\n", err)
		return exitUsage
	}
	ps := policyStatusOf(ctx, root, cfg, e.lookupEnv)
	doc := diagnose(ctx, root, e.lookupEnv)
	srv := decisionServerStatus(ctx, cfg, e.lookupEnv)
	if *asJSON {
		return writeJSON(e, "status", struct {
			des.OrchestrationStatus
			policyStatus
			ClaudeCode struct {
				Running bool   `json:"running"`
				Verdict string `json:"verdict"`
			} `json:"claude_code"`
			DecisionServer serverStatus `json:"decision_server"`
		}{st, ps, struct {
			Running bool   `json:"running"`
			Verdict string `json:"verdict"`
		}{doc.Running, doc.Verdict}, srv})
	}
	line := "claude code: " + doc.Verdict
	if n := countSeverity(doc, sevWarning); n > 0 {
		line += fmt.Sprintf(" (%d warning(s): des-hook doctor)", n)
	}
	fmt.Fprintln(e.stdout, line)
	printServerStatus(e.stdout, srv)
	if err := printPolicyStatus(e.stdout, ps); err != nil {
		fmt.Fprintf(e.stderr, "des-hook status: %v\n", err)
		return exitUsage
	}
	fmt.Fprintln(e.stdout)
	if err := printStatus(e.stdout, st); err != nil {
		fmt.Fprintf(e.stderr, "des-hook status: %v\n", err)
		return exitUsage
	}
	return exitOK
}

func printStatus(w io.Writer, st des.OrchestrationStatus) error {
	limit := "no limit"
	if st.MaxConcurrentAgents > 0 {
		limit = fmt.Sprint(st.MaxConcurrentAgents)
	}
	fmt.Fprintf(w, "delegation_mode: %s   max_concurrent_agents: %s   session_ttl_minutes: %d\n", st.DelegationMode, limit, st.SessionTTLMinutes)
	fmt.Fprintf(w, "task_graph_file: %s\n\n", st.TaskGraphFile)

	if len(st.Running) == 0 {
		fmt.Fprintln(w, "subagents running: none")
	} else {
		fmt.Fprintf(w, "subagents running: %d\n", len(st.Running))
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  AGENT\tTYPE\tSTARTED\tAGE")
		for _, a := range st.Running {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", a.ID, a.Type, a.StartedAt.UTC().Format(time.RFC3339), age(a.Seconds))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if l := st.Last; l != nil {
		fmt.Fprintf(w, "last stopped: %s (%s) after %s, at %s\n", l.ID, l.Type, age(l.Seconds), l.StoppedAt.UTC().Format(time.RFC3339))
	}
	if wf := st.Workflow; wf != nil && wf.Phase != "" {
		tests := "no test run recorded in the state"
		if wf.TestIteration > 0 {
			tests = fmt.Sprintf("test iteration %d/%d, last result %s", wf.TestIteration, wf.MaxIterations, wf.LastTestResult)
			if wf.TestStatus != "" {
				tests += ", " + wf.TestStatus
			}
		}
		fmt.Fprintf(w, "iSDLC workflow %s: phase %s, %s\n", wf.StateFile, wf.Phase, tests)
	}
	fmt.Fprintln(w)

	g := st.Graph
	switch {
	case g == nil:
		fmt.Fprintln(w, "task graph: none")
		return nil
	case g.Problem != "":
		fmt.Fprintf(w, "task graph %s: cannot be read: %s\n", g.Path, g.Problem)
		return nil
	}
	title := g.Path
	if g.TaskID != "" {
		title += " (" + g.TaskID + ")"
	}
	state := fmt.Sprintf("current wave %d of %d", g.CurrentWave, len(g.Waves))
	if g.CurrentWave >= len(g.Waves) {
		state = "every wave done"
	}
	fmt.Fprintf(w, "task graph %s: %s\n", title, state)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  WAVE\tPHASE\tTYPE\tAGENT\tSTATUS\tRETRIES")
	for i, wave := range g.Waves {
		label := fmt.Sprint(wave.ID)
		if wave.Parallel {
			label += " (parallel)"
		}
		if i == g.CurrentWave {
			label += " <-"
		}
		for j, p := range wave.Phases {
			if j > 0 {
				label = ""
			}
			retries := ""
			if p.Type == "implementation" || p.Retries > 0 {
				retries = fmt.Sprintf("%d/%d", p.Retries, p.MaxRetries)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\n", label, p.ID, p.Type, p.Agent, p.Status, retries)
		}
	}
	return tw.Flush()
}

// age renders seconds as people read a duration.
func age(seconds float64) string {
	return (time.Duration(seconds) * time.Second).Round(time.Second).String()
}
