package main

// End-to-end tests of orchestration governance (CONTRACT §9, issue 11)
// through the built hook binary, written from the contract, the issue and
// the orchestrator design document (../shared/design/001_c8c48af4d399b6ba.txt),
// not from the implementation. Every test is named TestGraph* so that
// `go test ./examples/des-engine/ -run TestGraph` runs exactly these.
//
// This file: the harness (a project with settings, a task graph and a
// Claude directory holding real subagent transcripts; one helper per hook
// event), delegation mode, the concurrency limit, the registry across
// processes, the status line and `hook settings`. taskgraph_doc_e2e_test.go
// holds the document rules (every DES-TASKGRAPH-* of document_write, the
// graph as a guarded document, .des/sessions protected);
// taskgraph_flow_e2e_test.go the delegation rules against the graph, the
// design's whole flow and the wave sync under racing stops.
//
// Conventions:
//   - deny and warning codes are compared as exact sets; a deny reason's
//     codes must be exactly the deny codes plus the warnings the case names;
//   - every PreToolUse call gets its own tool_use_id, as in Claude Code,
//     unless the test pairs it with its PostToolUse;
//   - a subagent's events carry the parent session's session_id (Claude
//     Code does so), its agent_id and agent_type; the main thread's carry
//     no agent_id;
//   - where the contract is silent, the test's comment says what it assumes.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	tgGraphPath = ".claude/state/active_task_graph.json"
	tgSession   = "0b6f2c4e-8d1a-4f3b-9e7c-2a5d8c1f4e90"
)

type gdoc = map[string]any

// tgProject is one project under test: its root, the Claude directory the
// hook reads transcripts from, and the environment of every hook process.
type tgProject struct {
	t       *testing.T
	root    string
	claude  string
	env     []string
	session string
}

// newGraphProject makes a project with .des/config.json holding cfg (none
// when nil) and the task graph at its default path (none when nil; a
// string is written as is).
func newGraphProject(t *testing.T, cfg gdoc, graph any) *tgProject {
	t.Helper()
	var opts []projOpt
	if cfg != nil {
		opts = append(opts, projConfig(cfg))
	}
	if graph != nil {
		opts = append(opts, projGraph(tgGraphPath, graph))
	}
	root := newTestProject(t, append(opts, projFiles("README.md", "# calculator\n"))...)
	claude := tempRoot(t)
	return &tgProject{t: t, root: root, claude: claude, session: tgSession,
		env: []string{"CLAUDE_CONFIG_DIR=" + claude, "DES_VALIDATION_TIMEOUT_MS=5000"}}
}

// putGraph writes a graph file directly (the test's own setup, not a tool
// call).
func (p *tgProject) putGraph(rel string, graph any) {
	p.t.Helper()
	writeFile(p.t, p.root, rel, tgJSON(p.t, graph))
}

// tgJSON is v as a file's content (marshalState).
func tgJSON(t testing.TB, v any) string {
	t.Helper()
	return marshalState(t, v)
}

// tgClone deep-copies a JSON document.
func tgClone(t testing.TB, d gdoc) gdoc {
	t.Helper()
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var out gdoc
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// ---- task graphs ----

func tgImpl(id string, files ...string) gdoc {
	fs := []any{}
	for _, f := range files {
		fs = append(fs, gdoc{"path": f, "must_exist": false})
	}
	objective := "Implement " + id
	if len(files) > 0 {
		objective = "Create " + files[0]
	}
	return gdoc{
		"phase_id": id, "type": "implementation", "objective": objective, "agent": "code-cleanup-optimizer",
		"deliverable_manifest": gdoc{"files": fs, "tests": []any{}, "acceptance_criteria": []any{"Basic math operations implemented"}},
		"status":               "pending",
	}
}

func tgVerify(id, of string) gdoc {
	p := gdoc{"phase_id": id, "type": "verification", "agent": "task-completion-verifier", "objective": "Verify " + of, "status": "pending"}
	if of != "" {
		p["verifies_phase_id"] = of
	}
	return p
}

func tgWave(id int, parallel bool, phases ...gdoc) gdoc {
	list := []any{}
	for _, ph := range phases {
		list = append(list, ph)
	}
	return gdoc{"wave_id": id, "parallel_execution": parallel, "phases": list}
}

func tgGraph(waves ...gdoc) gdoc {
	list := []any{}
	for _, w := range waves {
		list = append(list, w)
	}
	return gdoc{"task_id": "root", "description": "Create calculator.py AND utils.py, verified", "tier": 2, "complexity_score": 12, "current_wave": 0, "waves": list}
}

// tgPlan is the design's plan in three waves: two implementation phases in
// parallel, their two verification phases in parallel, then the
// integration tests (a verification phase depending on both verifications).
// Every implementation phase is verified in a later wave; nothing is
// atomic; it breaks no rule.
func tgPlan() gdoc {
	v2 := tgVerify("phase_2_0", "")
	v2["objective"], v2["depends_on"] = "Run the integration tests", []any{"phase_1_0", "phase_1_1"}
	return tgGraph(
		tgWave(0, true, tgImpl("phase_0_0", "calculator.py"), tgImpl("phase_0_1", "utils.py")),
		tgWave(1, true, tgVerify("phase_1_0", "phase_0_0"), tgVerify("phase_1_1", "phase_0_1")),
		tgWave(2, false, v2),
	)
}

// tgPhaseOf returns the phase id of g (which may be changed in place).
func tgPhaseOf(t testing.TB, g gdoc, id string) gdoc {
	t.Helper()
	for _, w := range g["waves"].([]any) {
		for _, ph := range w.(gdoc)["phases"].([]any) {
			if ph.(gdoc)["phase_id"] == id {
				return ph.(gdoc)
			}
		}
	}
	t.Fatalf("no phase %s in the graph", id)
	return nil
}

// withStatus sets phase statuses: id, status, id, status, ...
func withStatus(t testing.TB, g gdoc, pairs ...string) gdoc {
	t.Helper()
	for i := 0; i+1 < len(pairs); i += 2 {
		tgPhaseOf(t, g, pairs[i])["status"] = pairs[i+1]
	}
	return g
}

// graph reads the task graph on disk.
func (p *tgProject) graph() gdoc {
	p.t.Helper()
	raw, err := os.ReadFile(filepath.Join(p.root, filepath.FromSlash(tgGraphPath)))
	if err != nil {
		p.t.Fatalf("the task graph: %v", err)
	}
	var g gdoc
	if err := json.Unmarshal(raw, &g); err != nil {
		p.t.Fatalf("the task graph on disk is not JSON: %v\n%s", err, raw)
	}
	return g
}

func (p *tgProject) graphText() string {
	p.t.Helper()
	raw, err := os.ReadFile(filepath.Join(p.root, filepath.FromSlash(tgGraphPath)))
	if err != nil {
		p.t.Fatalf("the task graph: %v", err)
	}
	return string(raw)
}

// status is a phase's status on disk, "pending" when absent or null (the
// contract's default).
func (p *tgProject) status(id string) string {
	p.t.Helper()
	if s, ok := tgPhaseOf(p.t, p.graph(), id)["status"].(string); ok {
		return s
	}
	return "pending"
}

// retries is a phase's retries on disk, 0 when absent.
func (p *tgProject) retries(id string) int {
	p.t.Helper()
	if n, ok := tgPhaseOf(p.t, p.graph(), id)["retries"].(float64); ok {
		return int(n)
	}
	return 0
}

func (p *tgProject) currentWave() int {
	p.t.Helper()
	n, ok := p.graph()["current_wave"].(float64)
	if !ok {
		p.t.Fatalf("current_wave is not a number on disk: %v", p.graph()["current_wave"])
	}
	return int(n)
}

// wantDisk checks phase statuses on disk: id, status, ...
func (p *tgProject) wantDisk(pairs ...string) {
	p.t.Helper()
	for i := 0; i+1 < len(pairs); i += 2 {
		if got := p.status(pairs[i]); got != pairs[i+1] {
			p.t.Errorf("phase %s on disk is %q, want %q", pairs[i], got, pairs[i+1])
		}
	}
}

// ---- events ----

// opts are the fields every event of the session shares; agent is the
// subagent the event happens in (nil for the main thread).
func (p *tgProject) opts(agent *tgAgent) []evOpt {
	opts := []evOpt{evSession(p.session), evTranscript(filepath.Join(p.claude, "projects", "calc", p.session+".jsonl")), evMode("default")}
	if agent != nil {
		opts = append(opts, evAgent(agent.id, agent.typ))
	}
	return opts
}

// base is an event of the session with nothing else.
func (p *tgProject) base(event string, agent *tgAgent) gdoc {
	return hookEvent(event, p.root, p.opts(agent)...)
}

// tool is a PreToolUse event of a tool.
func (p *tgProject) tool(agent *tgAgent, name string, input gdoc) gdoc {
	return toolEvent("PreToolUse", name, p.root, input, p.opts(agent)...)
}

func (p *tgProject) bash(agent *tgAgent, command string) gdoc {
	return bashEv("PreToolUse", p.root, command, append(p.opts(agent), evInput(gdoc{"description": "run"}))...)
}

// fileTool is a PreToolUse of a file tool on path (relative to the root
// unless absolute).
func (p *tgProject) fileTool(agent *tgAgent, name, path string) gdoc {
	if !filepath.IsAbs(path) {
		path = filepath.Join(p.root, filepath.FromSlash(path))
	}
	switch name {
	case "Write":
		return fileEv("PreToolUse", name, p.root, path, gdoc{"content": "package calc\n"}, p.opts(agent)...)
	case "Edit", "MultiEdit":
		return fileEv("PreToolUse", name, p.root, path, nil, p.opts(agent)...)
	case "NotebookEdit":
		return notebookEv("PreToolUse", p.root, path, nil, p.opts(agent)...)
	case "Read":
		return p.tool(agent, name, gdoc{"file_path": path})
	case "Grep":
		return p.tool(agent, name, gdoc{"pattern": "func", "path": path})
	case "Glob":
		return p.tool(agent, name, gdoc{"pattern": "**/*.go", "path": path})
	}
	p.t.Fatalf("fileTool: %s", name)
	return nil
}

// writeGraphEv is a Write of the task graph with content.
func (p *tgProject) writeGraphEv(agent *tgAgent, rel string, content any) gdoc {
	return fileEv("PreToolUse", "Write", p.root, filepath.Join(p.root, filepath.FromSlash(rel)), gdoc{"content": tgJSON(p.t, content)}, p.opts(agent)...)
}

func (p *tgProject) userPrompt(text string) gdoc {
	return userPromptEv(p.root, text, p.opts(nil)...)
}

// tgAgent is one subagent: the Agent/Task call that starts it and the
// transcript Claude Code keeps of it.
type tgAgent struct {
	id, typ, prompt, toolUseID, transcript string
	tool                                   string
}

var tgAgentSeq sync.Mutex
var tgAgentN int

// agent makes a subagent of type typ for prompt: a fresh agent id (17
// characters, as Claude Code 2.1.2xx makes them), a fresh tool_use_id for
// the call that starts it, and its transcript in the Claude directory
// (first line: the prompt, a string; beside it the agent-<id>.meta.json
// with the starting call's toolUseId), as Claude Code 2.1.270 writes them.
func (p *tgProject) agent(tool, typ, prompt string) *tgAgent {
	p.t.Helper()
	tgAgentSeq.Lock()
	tgAgentN++
	n := tgAgentN
	tgAgentSeq.Unlock()
	a := &tgAgent{
		id: fmt.Sprintf("a%016x", 0x7154de3fc7190000+n), typ: typ, prompt: prompt, tool: tool,
		toolUseID: fmt.Sprintf("toolu_01GraphAgent%06d", n),
	}
	dir := filepath.Join(p.claude, "projects", "calc", p.session, "subagents")
	a.transcript = filepath.Join(dir, "agent-"+a.id+".jsonl")
	first, _ := json.Marshal(gdoc{
		"parentUuid": nil, "isSidechain": true, "promptId": "b842cda1-7298-40d9-87a4-1966249ed00c", "agentId": a.id, "type": "user",
		"message": gdoc{"role": "user", "content": prompt}, "uuid": fmt.Sprintf("dd540906-96b9-4e47-be0b-%012d", n),
		"timestamp": "2026-11-25T14:07:12.183Z", "userType": "external", "entrypoint": "cli", "cwd": p.root,
		"sessionId": p.session, "version": "2.1.270", "gitBranch": "main",
	})
	reply, _ := json.Marshal(gdoc{
		"parentUuid": fmt.Sprintf("dd540906-96b9-4e47-be0b-%012d", n), "isSidechain": true, "agentId": a.id, "type": "assistant",
		"message": gdoc{"role": "assistant", "content": []any{gdoc{"type": "text", "text": "Working on it."}}}, "sessionId": p.session,
	})
	writeFile(p.t, dir, filepath.Base(a.transcript), string(first)+"\n"+string(reply)+"\n")
	meta, _ := json.Marshal(gdoc{"agentType": typ, "description": "phase", "toolUseId": a.toolUseID, "spawnDepth": 1})
	writeFile(p.t, dir, "agent-"+a.id+".meta.json", string(meta)+"\n")
	return a
}

// phasePrompt is a delegation prompt naming phase id with a `Phase ID:`
// line, the way the design's orchestrator writes its phase prompts.
func phasePrompt(id, objective string) string {
	return "Phase ID: " + id + "\nObjective: " + objective + "\n\nContext from earlier phases:\n- Created: calculator.py\n\nReport the files you created and the decisions you made."
}

// markerPrompt names phase id with the routing marker instead.
func markerPrompt(id, objective string) string {
	return "<!-- DES-TASK-PHASE: " + id + " -->\n" + objective + "\n\nReport the files you created and the decisions you made."
}

// delegateEv is the main thread's PreToolUse of the call that starts a.
func (p *tgProject) delegateEv(a *tgAgent) gdoc {
	return agentEv("PreToolUse", a.tool, p.root, a.typ, "Phase delegation", a.prompt, append(p.opts(nil), evToolUseID(a.toolUseID))...)
}

func (p *tgProject) startEv(a *tgAgent) gdoc {
	return subagentStartEv(p.root, a.id, a.typ, p.opts(nil)...)
}

func (p *tgProject) stopEv(a *tgAgent, last string) gdoc {
	return subagentStopEv(p.root, a.id, a.typ, a.transcript, last, append(p.opts(nil), evMode("auto"))...)
}

// postEv is the PostToolUse of the call that started a, with Claude Code's
// completed response.
func (p *tgProject) postEv(a *tgAgent, text string) gdoc {
	return agentEv("PostToolUse", a.tool, p.root, a.typ, "Phase delegation", a.prompt, append(p.opts(nil), evToolUseID(a.toolUseID), evResponse(gdoc{
		"status": "completed", "prompt": a.prompt, "agentId": a.id,
		"content":         []any{gdoc{"type": "text", "text": text}},
		"totalDurationMs": 87000, "totalTokens": 14149, "totalToolUseCount": 9,
	}))...)
}

// ---- running and judging ----

// tgWant is the expected decision of one run.
type tgWant struct {
	deny []string // exact set of the deny reason's deny codes; nil: no deny
	warn []string // exact set of warning codes (additionalContext, or beside a deny); nil: none
	has  []string // substrings of the deny reason, else of the additionalContext
}

func tgDenies(codes ...string) tgWant { return tgWant{deny: codes} }
func tgWarns(codes ...string) tgWant  { return tgWant{warn: codes} }

var tgAllow = tgWant{}

func (w tgWant) with(has ...string) tgWant { w.has = append(slices.Clip(w.has), has...); return w }

var tgSeq struct {
	sync.Mutex
	n int
}

// run runs the hook on ev (a copy gets a fresh tool_use_id when it has
// none) and reads its output under §5.
func (p *tgProject) run(ev gdoc) (outcome, hookRun) {
	p.t.Helper()
	ev = tgClone(p.t, ev)
	if _, ok := ev["tool_use_id"]; !ok && strings.HasSuffix(fmt.Sprint(ev["hook_event_name"]), "ToolUse") {
		tgSeq.Lock()
		tgSeq.n++
		ev["tool_use_id"] = fmt.Sprintf("toolu_01Graph%08d", tgSeq.n)
		tgSeq.Unlock()
	}
	r := runHookProcess(p.t, p.root, p.env, ev)
	return decide(p.t, r), r
}

// check runs ev and compares the decision with w.
func (p *tgProject) check(ev gdoc, w tgWant) outcome {
	p.t.Helper()
	o, r := p.run(ev)
	what := fmt.Sprintf("%s %v", ev["hook_event_name"], ev["tool_name"])
	sorted := func(s []string) []string { s = slices.Clone(s); slices.Sort(s); return slices.Compact(s) }
	switch {
	case w.deny != nil:
		if o.deny == "" {
			p.t.Errorf("%s: want a deny with %v, got %s\nstderr: %s", what, w.deny, tgShow(r.stdout), r.stderr)
			return o
		}
		if got, want := codes(o.deny), sorted(append(slices.Clone(w.deny), w.warn...)); !slices.Equal(got, want) {
			p.t.Errorf("%s: deny codes = %v, want %v\nreason:\n%s", what, got, want, o.deny)
		}
	case o.deny != "":
		p.t.Errorf("%s: want no deny, got:\n%s", what, o.deny)
	case w.warn != nil:
		if got := codes(o.context); !slices.Equal(got, sorted(w.warn)) {
			p.t.Errorf("%s: additionalContext codes = %v, want %v\noutput: %s", what, got, sorted(w.warn), tgShow(r.stdout))
		}
	default:
		if o.stdout != "" && o.stdout != "{}" {
			p.t.Errorf("%s: want no opinion (empty stdout), got:\n%s\nstderr: %s", what, r.stdout, r.stderr)
		}
	}
	text := o.deny
	if text == "" {
		text = o.context
	}
	for _, s := range w.has {
		if !strings.Contains(text, s) {
			p.t.Errorf("%s: output lacks %q:\n%s", what, s, text)
		}
	}
	return o
}

func tgShow(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(nothing)"
	}
	return s
}

// quiet runs a bookkeeping event (SubagentStart, SubagentStop,
// UserPromptSubmit, PostToolUse) that must neither block nor deny; it
// returns what the hook said.
func (p *tgProject) quiet(ev gdoc) outcome {
	p.t.Helper()
	o, r := p.run(ev)
	if o.deny != "" || strings.Contains(r.stdout, `"decision"`) {
		p.t.Errorf("%s (%v): the hook blocked or denied:\n%s", ev["hook_event_name"], ev["agent_id"], r.stdout)
	}
	return o
}

// parallel runs one quiet event per element of evs, all at once, each in
// its own hook process, and returns when every one has finished.
func (p *tgProject) parallel(evs ...gdoc) []outcome {
	p.t.Helper()
	out := make([]outcome, len(evs))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, ev := range evs {
		wg.Go(func() {
			<-start
			out[i] = p.quiet(ev)
		})
	}
	close(start)
	wg.Wait()
	return out
}

// lifecycle runs the whole life of a delegated subagent after its
// PreToolUse was allowed: SubagentStart, SubagentStop with last as its
// last message, and the PostToolUse of its call; it returns what the
// orchestrator was told at PostToolUse.
func (p *tgProject) lifecycle(a *tgAgent, last string) string {
	p.t.Helper()
	p.quiet(p.startEv(a))
	p.quiet(p.stopEv(a, last))
	return p.post(a, last)
}

// post runs a's PostToolUse and returns its additionalContext, which must
// be PostToolUse output when there is one.
func (p *tgProject) post(a *tgAgent, text string) string {
	p.t.Helper()
	o := p.quiet(p.postEv(a, text))
	p.t.Logf("PostToolUse of %s (%s) told the orchestrator: %s", a.typ, a.id, tgShow(o.context))
	if o.context != "" && o.event != "PostToolUse" {
		p.t.Errorf("PostToolUse answered with hookEventName %q: %s", o.event, o.stdout)
	}
	return o.context
}

// ints are the whole numbers written in s.
func ints(s string) []int {
	var out []int
	for _, m := range regexp.MustCompile(`\d+`).FindAllString(s, -1) {
		if n, err := strconv.Atoi(m); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// statusline runs `hook statusline` as Claude Code runs a statusLine
// command: in the project, the session's JSON on stdin.
func (p *tgProject) statusline() string {
	p.t.Helper()
	in, _ := json.Marshal(gdoc{
		"hook_event_name": "Status", "session_id": p.session, "transcript_path": filepath.Join(p.claude, "projects", "calc", p.session+".jsonl"),
		"cwd": p.root, "model": gdoc{"id": "claude-opus-4-1", "display_name": "Opus"},
		"workspace": gdoc{"current_dir": p.root, "project_dir": p.root}, "version": "2.1.270",
		"output_style": gdoc{"name": "default"}, "cost": gdoc{"total_cost_usd": 0.01, "total_duration_ms": 45000},
	})
	r := p.cli(in, "statusline")
	if r.code != 0 {
		p.t.Fatalf("hook statusline: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	line := strings.TrimRight(r.stdout, "\n")
	if strings.Contains(line, "\n") {
		p.t.Errorf("hook statusline printed more than one line:\n%s", r.stdout)
	}
	return line
}

// cli runs a subcommand in the project with stdin.
func (p *tgProject) cli(stdin []byte, args ...string) hookRun {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, hookBin, args...)
	cmd.Env = append(append(cleanEnviron(), "CLAUDE_PROJECT_DIR="+p.root), p.env...)
	cmd.Dir = p.root
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		p.t.Fatal(err)
	}
	return hookRun{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
}

// sessionsText is everything under .des/sessions, for looking agent ids
// up in DES's registry without knowing its file layout.
func (p *tgProject) sessionsText() string {
	p.t.Helper()
	var b strings.Builder
	_ = filepath.WalkDir(filepath.Join(p.root, ".des", "sessions"), func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if raw, err := os.ReadFile(path); err == nil {
				b.Write(raw)
				b.WriteByte('\n')
			}
		}
		return nil
	})
	return b.String()
}

// ageAgent makes the registry entry of agent id look as if it had started
// age ago: every `started_at` in the files of .des/sessions that hold the
// id is moved back by age (an RFC 3339 string, or a Unix time in seconds
// or milliseconds), and the files' times too. The contract names the
// entry's fields ({agent_id, agent_type, session_id, started_at}), not the
// layout, so this touches nothing else.
func (p *tgProject) ageAgent(id string, age time.Duration) {
	p.t.Helper()
	var aged int
	var shift func(v any) any
	shift = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				if k == "started_at" {
					switch s := e.(type) {
					case string:
						if ts, err := time.Parse(time.RFC3339Nano, s); err == nil {
							x[k] = ts.Add(-age).UTC().Format(time.RFC3339Nano)
							aged++
						}
					case float64:
						if s > 1e12 {
							x[k] = s - float64(age.Milliseconds())
						} else {
							x[k] = s - age.Seconds()
						}
						aged++
					}
					continue
				}
				x[k] = shift(e)
			}
		case []any:
			for i := range x {
				x[i] = shift(x[i])
			}
		}
		return v
	}
	old := time.Now().Add(-age)
	_ = filepath.WalkDir(filepath.Join(p.root, ".des", "sessions"), func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		raw, err := os.ReadFile(path)
		if err != nil || !bytes.Contains(raw, []byte(id)) {
			return nil
		}
		var lines [][]byte
		var v any
		if json.Unmarshal(raw, &v) == nil {
			b, _ := json.Marshal(shift(v))
			lines = append(lines, b)
		} else { // JSON lines
			for _, l := range bytes.Split(bytes.TrimRight(raw, "\n"), []byte("\n")) {
				var e any
				if json.Unmarshal(l, &e) == nil {
					if m, ok := e.(map[string]any); ok && bytes.Contains(l, []byte(id)) {
						e = shift(m)
					}
					l, _ = json.Marshal(e)
				}
				lines = append(lines, l)
			}
		}
		if err := os.WriteFile(path, append(bytes.Join(lines, []byte("\n")), '\n'), 0o644); err != nil {
			p.t.Fatal(err)
		}
		_ = os.Chtimes(path, old, old)
		return nil
	})
	if aged == 0 {
		p.t.Fatalf("no started_at of agent %s found under .des/sessions:\n%s", id, p.sessionsText())
	}
}

// ---- delegation mode ----

var tgWorkTools = []string{"Bash", "Write", "Edit", "MultiEdit", "NotebookEdit"}

// workCall is a main-thread (agent nil) or subagent call of a work tool on
// a file inside the project.
func (p *tgProject) workCall(agent *tgAgent, tool string) gdoc {
	switch tool {
	case "Bash":
		return p.bash(agent, "go test ./...")
	case "NotebookEdit":
		return p.fileTool(agent, tool, "notebooks/explore.ipynb")
	}
	return p.fileTool(agent, tool, "calc/calc.go")
}

// Under enforce every main-thread work call is denied with
// DES-DELEGATION-REQUIRED, and nothing else is touched: calls inside a
// subagent, read-only tools, Agent/Task themselves (delegating is always
// possible: no deadlock, however many calls were denied), and writes to a
// file of the system's temporary directory outside the project.
func TestGraphDelegationEnforce(t *testing.T) {
	t.Parallel()
	p := newGraphProject(t, gdoc{"delegation_mode": "enforce"}, nil)
	sub := p.agent("Agent", "code-cleanup-optimizer", "Refactor calc.go")
	for _, tool := range tgWorkTools {
		p.check(p.workCall(nil, tool), tgDenies("DES-DELEGATION-REQUIRED").with(tool))
		p.check(p.workCall(sub, tool), tgAllow)
	}
	// The deny tells the model the way out: delegate.
	o := p.check(p.workCall(nil, "Write"), tgDenies("DES-DELEGATION-REQUIRED"))
	if !regexp.MustCompile(`(?i)delegat|subagent`).MatchString(o.deny) {
		t.Errorf("the deny does not say to delegate:\n%s", o.deny)
	}
	for _, tool := range []string{"Read", "Grep", "Glob"} {
		p.check(p.fileTool(nil, tool, "calc"), tgAllow)
	}
	p.check(p.tool(nil, "TodoWrite", gdoc{"todos": []any{gdoc{"content": "Create calculator.py", "status": "pending", "activeForm": "Creating"}}}), tgAllow)
	// No deadlock: after every denied call, delegating still works, with
	// either tool name, with or without a phase id (there is no graph).
	for i := range 4 {
		a := p.agent(tools(i), "code-cleanup-optimizer", phasePrompt("phase_0_0", "Create calculator.py"))
		p.check(p.delegateEv(a), tgAllow)
	}
	p.check(p.tool(nil, "Task", gdoc{"description": "x", "prompt": "Write calc.go", "subagent_type": "general-purpose"}), tgAllow)

	// The temporary directory outside the project: never affected. The
	// project itself lives under the temporary directory too: a file in
	// the project is still work.
	scratch := filepath.Join(t.TempDir(), "scratch.md")
	p.check(p.fileTool(nil, "Write", scratch), tgAllow)
	p.check(p.fileTool(nil, "Edit", scratch), tgAllow)
	p.check(p.fileTool(nil, "Write", filepath.Join(p.root, "notes.md")), tgDenies("DES-DELEGATION-REQUIRED"))
	// The exemption is for Write/Edit of such a file; Bash is work wherever
	// it writes.
	p.check(p.bash(nil, "echo draft > "+filepath.Join(t.TempDir(), "scratch.txt")), tgDenies("DES-DELEGATION-REQUIRED"))
	// A UserPromptSubmit changes nothing about enforce.
	p.quiet(p.userPrompt("now fix the tests"))
	p.check(p.workCall(nil, "Bash"), tgDenies("DES-DELEGATION-REQUIRED"))
}

// Under nudge the main thread's work calls go through with a warning the
// model reads (additionalContext) that counts the direct work calls since
// the last user prompt; UserPromptSubmit starts the count again. Read-only
// tools, delegations and subagents' calls are no direct work calls: they
// get nothing and are not counted.
func TestGraphDelegationNudge(t *testing.T) {
	t.Parallel()
	p := newGraphProject(t, gdoc{"delegation_mode": "nudge"}, nil)
	sub := p.agent("Agent", "code-cleanup-optimizer", "Refactor calc.go")
	// count checks the number in the warning: the count, and not the count
	// of a neighbouring call (the message may hold other numbers).
	count := func(o outcome, n int) {
		t.Helper()
		lines := codeLines(o.context, "DES-DELEGATION-REQUIRED")
		if len(lines) == 0 {
			t.Errorf("no DES-DELEGATION-REQUIRED warning (call %d): %q", n, o.stdout)
			return
		}
		got := ints(strings.Join(lines, " "))
		if !slices.Contains(got, n) || slices.Contains(got, n+1) || (n > 1 && slices.Contains(got, n-1)) {
			t.Errorf("direct call %d: the warning does not count %d:\n%s", n, n, strings.Join(lines, "\n"))
		}
	}
	p.quiet(p.userPrompt("Create calculator.py AND utils.py"))
	n := 0
	for i, tool := range tgWorkTools {
		n++
		count(p.check(p.workCall(nil, tool), tgWarns("DES-DELEGATION-REQUIRED")), n)
		// Between two direct calls: none of these counts.
		switch i {
		case 0:
			p.check(p.fileTool(nil, "Read", "README.md"), tgAllow)
			p.check(p.fileTool(nil, "Grep", "."), tgAllow)
		case 1:
			p.check(p.workCall(sub, "Bash"), tgAllow)
			p.check(p.workCall(sub, "Write"), tgAllow)
		case 2:
			a := p.agent("Agent", "code-reviewer", "Review calc.go")
			p.check(p.delegateEv(a), tgAllow)
		case 3:
			p.check(p.fileTool(nil, "Glob", "."), tgAllow)
			p.check(p.tool(nil, "Task", gdoc{"description": "x", "prompt": "Write the docs", "subagent_type": "documentation-expert"}), tgAllow)
		}
	}
	if n != 5 {
		t.Fatal(n)
	}
	p.quiet(p.userPrompt("and the docs"))
	count(p.check(p.workCall(nil, "Edit"), tgWarns("DES-DELEGATION-REQUIRED")), 1)
	count(p.check(p.workCall(nil, "Bash"), tgWarns("DES-DELEGATION-REQUIRED")), 2)
}

// Claude Code runs the hooks of parallel tool calls at once: ten
// main-thread work calls in one message are ten hook processes sharing
// the session's counter. Each is counted once: the ten warnings carry the
// counts 1 to 10 between them, and the next call is the eleventh.
func TestGraphNudgeCounterAcrossProcesses(t *testing.T) {
	t.Parallel()
	p := newGraphProject(t, gdoc{"delegation_mode": "nudge"}, nil)
	p.quiet(p.userPrompt("run everything"))
	const n = 10
	outs := make([]outcome, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			outs[i], _ = p.run(p.bash(nil, fmt.Sprintf("go test ./pkg%d/...", i)))
		})
	}
	wg.Wait()
	seen := map[int]bool{}
	for i, o := range outs {
		lines := codeLines(o.context, "DES-DELEGATION-REQUIRED")
		if len(lines) != 1 {
			t.Errorf("call %d: want one DES-DELEGATION-REQUIRED warning, got %q", i, o.stdout)
			continue
		}
		for _, k := range ints(lines[0]) {
			if k >= 1 && k <= n {
				seen[k] = true
			}
		}
	}
	for k := 1; k <= n; k++ {
		if !seen[k] {
			t.Errorf("no warning counts direct call %d of %d", k, n)
		}
	}
	o := p.check(p.workCall(nil, "Write"), tgWarns("DES-DELEGATION-REQUIRED"))
	if got := ints(strings.Join(codeLines(o.context, "DES-DELEGATION-REQUIRED"), " ")); !slices.Contains(got, n+1) {
		t.Errorf("the call after %d parallel ones does not count %d: %s", n, n+1, o.context)
	}
}

// off (the default) gives no opinion on anything; the environment
// variable overrides the file both ways.
func TestGraphDelegationOffAndEnv(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		cfg  gdoc
		env  string
		w    tgWant
	}{
		{"default", gdoc{}, "", tgAllow},
		{"no settings file", nil, "", tgAllow},
		{"off", gdoc{"delegation_mode": "off"}, "", tgAllow},
		{"env enforce over file off", gdoc{"delegation_mode": "off"}, "DES_DELEGATION_MODE=enforce", tgDenies("DES-DELEGATION-REQUIRED")},
		{"env off over file enforce", gdoc{"delegation_mode": "enforce"}, "DES_DELEGATION_MODE=off", tgAllow},
		{"env nudge", nil, "DES_DELEGATION_MODE=nudge", tgWarns("DES-DELEGATION-REQUIRED")},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := newGraphProject(t, c.cfg, nil)
			if c.env != "" {
				p.env = append(p.env, c.env)
			}
			p.quiet(p.userPrompt("go"))
			for _, tool := range tgWorkTools {
				p.check(p.workCall(nil, tool), c.w)
			}
		})
	}
}

// A bad delegation_mode or max_concurrent_agents is a bad setting: where
// DES is in charge (a write of the task graph, a guarded document) it
// denies with DES-INTERNAL naming the setting (§5, §6).
func TestGraphBadSettings(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, setting string
		cfg           gdoc
		env           string
	}{
		{"delegation_mode in the file", "delegation_mode", gdoc{"delegation_mode": "strict"}, ""},
		{"max_concurrent_agents from the environment", "max_concurrent_agents", nil, "DES_MAX_CONCURRENT_AGENTS=many"},
		{"session_ttl_minutes in the file", "session_ttl_minutes", gdoc{"session_ttl_minutes": "an hour"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := newGraphProject(t, c.cfg, tgPlan())
			if c.env != "" {
				p.env = append(p.env, c.env)
			}
			p.check(p.writeGraphEv(nil, tgGraphPath, tgPlan()), tgDenies("DES-INTERNAL").with(c.setting))
		})
	}
}

// ---- the concurrency limit and the registry ----

// With max_concurrent_agents N, a main-thread Agent/Task call while N
// subagents run is DES-CONCURRENCY-LIMIT; a stop frees a slot; a subagent's
// own Agent call is not the main thread's.
func TestGraphConcurrencyLimit(t *testing.T) {
	t.Parallel()
	p := newGraphProject(t, gdoc{"max_concurrent_agents": 2}, nil)
	a1 := p.agent("Agent", "codebase-context-analyzer", "Analyse the code base")
	a2 := p.agent("Task", "tech-lead-architect", "Design the calculator")
	p.check(p.delegateEv(a1), tgAllow)
	p.quiet(p.startEv(a1))
	p.check(p.delegateEv(a2), tgAllow) // one running: a slot is free
	p.quiet(p.startEv(a2))

	a3 := p.agent("Agent", "code-cleanup-optimizer", "Create calculator.py")
	p.check(p.delegateEv(a3), tgDenies("DES-CONCURRENCY-LIMIT").with("2"))
	a3.tool = "Task"
	p.check(p.delegateEv(a3), tgDenies("DES-CONCURRENCY-LIMIT"))
	// Inside a subagent: not the main thread's delegation.
	nested := p.tool(a1, "Agent", gdoc{"description": "nested", "prompt": "Look at utils.py", "subagent_type": "Explore"})
	p.check(nested, tgAllow)
	// Work tools are not limited by it.
	p.check(p.workCall(nil, "Bash"), tgAllow)

	// A stop frees a slot.
	p.quiet(p.stopEv(a1, "Analysis done: 3 modules."))
	p.check(p.delegateEv(a3), tgAllow)
	p.quiet(p.startEv(a3))
	a4 := p.agent("Agent", "documentation-expert", "Document calculator.py")
	p.check(p.delegateEv(a4), tgDenies("DES-CONCURRENCY-LIMIT"))

	// Assumed (the design: "adding an already-registered session is
	// safe"): a second SubagentStart of a running agent does not count it
	// twice, and a stop of an agent never started frees nothing.
	p.quiet(p.stopEv(a2, "Design written."))
	p.quiet(p.startEv(a3))
	ghost := p.agent("Agent", "Explore", "never started")
	p.quiet(p.stopEv(ghost, "done"))
	p.check(p.delegateEv(a4), tgAllow)
	p.quiet(p.startEv(a4))
	p.check(p.delegateEv(p.agent("Agent", "code-reviewer", "Review")), tgDenies("DES-CONCURRENCY-LIMIT"))
}

// Entries older than session_ttl_minutes are dropped: a subagent that
// started 30 minutes ago still counts under the default lifetime (60) and
// no longer under 10 (from the file, then from the environment); one that
// started two hours ago never counts under the default.
func TestGraphConcurrencyTTL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		cfg  gdoc
		env  string
		age  time.Duration
		w    tgWant
	}{
		{"30 min, default lifetime", gdoc{"max_concurrent_agents": 1}, "", 30 * time.Minute, tgDenies("DES-CONCURRENCY-LIMIT")},
		{"2 h, default lifetime", gdoc{"max_concurrent_agents": 1}, "", 2 * time.Hour, tgAllow},
		{"30 min, lifetime 10", gdoc{"max_concurrent_agents": 1, "session_ttl_minutes": 10}, "", 30 * time.Minute, tgAllow},
		{"30 min, lifetime 10 from the environment", gdoc{"max_concurrent_agents": 1}, "DES_SESSION_TTL_MINUTES=10", 30 * time.Minute, tgAllow},
		{"5 min, lifetime 10", gdoc{"max_concurrent_agents": 1, "session_ttl_minutes": 10}, "", 5 * time.Minute, tgDenies("DES-CONCURRENCY-LIMIT")},
		{"limit from the environment", nil, "DES_MAX_CONCURRENT_AGENTS=1", time.Minute, tgDenies("DES-CONCURRENCY-LIMIT")},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := newGraphProject(t, c.cfg, nil)
			if c.env != "" {
				p.env = append(p.env, c.env)
			}
			old := p.agent("Agent", "codebase-context-analyzer", "Analyse")
			p.quiet(p.startEv(old))
			p.ageAgent(old.id, c.age)
			p.check(p.delegateEv(p.agent("Agent", "code-reviewer", "Review")), c.w)
		})
	}
}

// The registry across processes: ten SubagentStart hooks at once leave ten
// running subagents (the status line, the registry files, `hook status`,
// and the limit all see them); ten stops at once leave none.
func TestGraphRegistryAcrossProcesses(t *testing.T) {
	t.Parallel()
	p := newGraphProject(t, gdoc{"max_concurrent_agents": 10}, nil)
	var agents []*tgAgent
	var starts, stops []gdoc
	for i := range 10 {
		a := p.agent(tools(i), "codebase-context-analyzer", fmt.Sprintf("Analyse module %d", i))
		agents = append(agents, a)
		starts = append(starts, p.startEv(a))
		stops = append(stops, p.stopEv(a, fmt.Sprintf("Module %d analysed.", i)))
	}
	p.parallel(starts...)

	if line := p.statusline(); !regexp.MustCompile(`Active: 10\b`).MatchString(line) {
		t.Errorf("status line after 10 starts = %q, want Active: 10", line)
	}
	reg := p.sessionsText()
	for _, a := range agents {
		if !strings.Contains(reg, a.id) {
			t.Errorf("agent %s is not in .des/sessions", a.id)
		}
	}
	p.check(p.delegateEv(p.agent("Agent", "code-reviewer", "Review")), tgDenies("DES-CONCURRENCY-LIMIT").with("10"))

	// `hook status` is for people; assumed: it lists the running agents by
	// id (the JSON form when it has one, else the text).
	st := p.cli(nil, "status", "--json")
	if st.code != 0 {
		st = p.cli(nil, "status")
	}
	if st.code != 0 {
		t.Errorf("hook status: exit %d\n%s%s", st.code, st.stdout, st.stderr)
	} else {
		for _, a := range agents {
			if !strings.Contains(st.stdout, a.id) {
				t.Errorf("hook status does not list running agent %s:\n%s", a.id, st.stdout)
			}
		}
	}

	p.parallel(stops...)
	if line := p.statusline(); !regexp.MustCompile(`Active: 0\b`).MatchString(line) {
		t.Errorf("status line after 10 stops = %q, want Active: 0", line)
	}
	p.check(p.delegateEv(p.agent("Agent", "code-reviewer", "Review")), tgAllow)
}

// `hook statusline`: `[PAR] Active: N Wave W | Last: <agent> completed
// (Ns)`. Assumed where the contract only gives the example: W is the
// graph's current_wave as written in it, the Wave part is left out when
// there is no graph, and Last names the agent_type of the last stopped
// subagent.
func TestGraphStatusline(t *testing.T) {
	t.Parallel()
	t.Run("no graph", func(t *testing.T) {
		t.Parallel()
		p := newGraphProject(t, gdoc{}, nil)
		if line := p.statusline(); strings.Contains(line, "Wave") {
			t.Errorf("fresh project without a graph: status line %q", line)
		}
		a := p.agent("Agent", "codebase-context-analyzer", "Analyse")
		b := p.agent("Agent", "tech-lead-architect", "Design")
		p.quiet(p.startEv(a))
		p.quiet(p.startEv(b))
		if line := p.statusline(); !strings.Contains(line, "Active: 2") || strings.Contains(line, "Wave") {
			t.Errorf("two running, no graph: status line %q", line)
		}
		p.quiet(p.stopEv(a, "Analysis done."))
		line := p.statusline()
		if !strings.Contains(line, "Active: 1") || !regexp.MustCompile(`Last: codebase-context-analyzer completed \(\d+s\)`).MatchString(line) {
			t.Errorf("after a stop: status line %q", line)
		}
	})
	t.Run("graph", func(t *testing.T) {
		t.Parallel()
		g := withStatus(t, tgPlan(), "phase_0_0", "completed", "phase_0_1", "completed")
		g["current_wave"] = 1
		p := newGraphProject(t, gdoc{}, g)
		a := p.agent("Agent", "task-completion-verifier", phasePrompt("phase_1_0", "Verify calculator.py"))
		b := p.agent("Agent", "task-completion-verifier", phasePrompt("phase_1_1", "Verify utils.py"))
		p.quiet(p.startEv(a))
		p.quiet(p.startEv(b))
		if line := p.statusline(); !strings.Contains(line, "[PAR] Active: 2 Wave 1") {
			t.Errorf("status line %q, want [PAR] Active: 2 Wave 1 ...", line)
		}
		// `hook status`, for people, shows the registry and the graph
		// (assumed: the running agents by id, the phases by id).
		if st := p.cli(nil, "status"); st.code != 0 {
			t.Errorf("hook status: exit %d\n%s%s", st.code, st.stdout, st.stderr)
		} else {
			for _, want := range []string{a.id, b.id, "phase_1_0", "phase_2_0"} {
				if !strings.Contains(st.stdout, want) {
					t.Errorf("hook status does not show %s:\n%s", want, st.stdout)
				}
			}
		}
	})
	t.Run("not a DES project", func(t *testing.T) {
		t.Parallel()
		p := newGraphProject(t, nil, nil)
		p.statusline() // exit 0, at most one line
		if _, err := os.Stat(filepath.Join(p.root, ".des", "config.json")); err == nil {
			t.Errorf("the status line created settings")
		}
	})
}

// `hook settings` sends Claude Code every event §9 needs (SubagentStart,
// UserPromptSubmit, SubagentStop, Agent/Task and the work tools at
// PreToolUse, Agent/Task at PostToolUse) and installs the status line; it
// protects .des/sessions like DES's other files (§10, assumed: the
// registry is one of "DES's files", and the task graph one of the guarded
// workflow documents the sandbox keeps Bash from writing).
func TestGraphSettings(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	res := runBinCLI(t, root, "settings")
	if res.code != 0 {
		t.Fatalf("hook settings: %+v", res)
	}
	var s struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Type    string `json:"type"`
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
		StatusLine *struct {
			Type    string `json:"type"`
			Command string `json:"command"`
		} `json:"statusLine"`
		Permissions struct {
			Deny []string `json:"deny"`
		} `json:"permissions"`
		Sandbox struct {
			Filesystem struct {
				DenyWrite []string `json:"denyWrite"`
			} `json:"filesystem"`
		} `json:"sandbox"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &s); err != nil {
		t.Fatalf("hook settings stdout: %v\n%s", err, res.stdout)
	}
	covers := func(event, tool string) bool {
		for _, m := range s.Hooks[event] {
			if len(m.Hooks) == 0 || m.Hooks[0].Command == "" {
				continue
			}
			if tool == "" || m.Matcher == "" || m.Matcher == "*" {
				return true
			}
			if re, err := regexp.Compile("^(?:" + m.Matcher + ")$"); err == nil && re.MatchString(tool) {
				return true
			}
		}
		return false
	}
	for _, c := range []struct{ event, tool string }{
		{"SubagentStart", ""}, {"UserPromptSubmit", ""}, {"SubagentStop", ""},
		{"PreToolUse", "Agent"}, {"PreToolUse", "Task"}, {"PreToolUse", "Bash"}, {"PreToolUse", "Write"},
		{"PreToolUse", "Edit"}, {"PreToolUse", "MultiEdit"}, {"PreToolUse", "NotebookEdit"},
		{"PostToolUse", "Agent"}, {"PostToolUse", "Task"},
	} {
		if !covers(c.event, c.tool) {
			t.Errorf("hook settings: no %s hook covers %q:\n%s", c.event, c.tool, res.stdout)
		}
	}
	if s.StatusLine == nil || s.StatusLine.Type != "command" || !strings.Contains(s.StatusLine.Command, "statusline") {
		t.Errorf("hook settings: statusLine = %+v, want a command running `hook statusline`", s.StatusLine)
	}
	if !slices.ContainsFunc(s.Permissions.Deny, func(r string) bool { return strings.Contains(r, "/.des/sessions") }) {
		t.Errorf("hook settings: no permission deny rule covers /.des/sessions: %v", s.Permissions.Deny)
	}
	for _, want := range []string{"./.des/sessions", "./" + tgGraphPath} {
		if !slices.ContainsFunc(s.Sandbox.Filesystem.DenyWrite, func(p string) bool { return strings.HasPrefix(p, want) }) {
			t.Errorf("hook settings: sandbox denyWrite lacks %s: %v", want, s.Sandbox.Filesystem.DenyWrite)
		}
	}
	// The catalogue lists every §9 code with its severity.
	cat := runBinCLI(t, root, "policies")
	if cat.code != 0 {
		t.Fatalf("hook policies: %+v", cat)
	}
	for code, sev := range map[string]string{
		"DES-DELEGATION-REQUIRED": "deny", "DES-CONCURRENCY-LIMIT": "deny",
		"DES-TASKGRAPH-INVALID": "deny", "DES-TASKGRAPH-WAVE-MIX": "deny", "DES-TASKGRAPH-WAVE-DEPENDENCY": "deny",
		"DES-TASKGRAPH-FILE-CONFLICT": "deny", "DES-TASKGRAPH-UNVERIFIED": "deny", "DES-TASKGRAPH-DEPTH": "deny",
		"DES-TASKGRAPH-ATOMICITY": "warn", "DES-TASKGRAPH-TRANSITION": "deny", "DES-TASKGRAPH-UNKNOWN-PHASE": "deny",
		"DES-TASKGRAPH-WAVE": "deny", "DES-TASKGRAPH-DEPENDENCY": "deny", "DES-VERIFY-ESCALATE": "deny",
	} {
		found := false
		for _, line := range strings.Split(cat.stdout, "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == code {
				found = true
				// DES-DELEGATION-REQUIRED is a deny or a warning by the
				// setting; the catalogue may give either.
				if f[1] != sev && code != "DES-DELEGATION-REQUIRED" {
					t.Errorf("hook policies: %s has severity %s, want %s", code, f[1], sev)
				}
			}
		}
		if !found {
			t.Errorf("hook policies does not list %s", code)
		}
	}
}
