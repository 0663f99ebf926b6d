package des

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/deterministic-exec/des/internal/isdlc"
	"github.com/deterministic-exec/des/internal/statedir"

	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/internal/taskgraph"
)

// Orchestration governance: delegating orchestrators that run a task graph
// in waves. Go gathers the facts and carries out what the spec says DES
// does itself (the subagent registry, the wave sync, what to run next);
// the rules are Rego (des.delegation, des.taskgraph).

// taskGraph is the task graph of the settings, read through
// internal/taskgraph.
func (e *Engine) taskGraph() gate.TaskGraph {
	file := e.graphFile()
	return gate.TaskGraph{
		File: file,
		// internal/taskgraph reads the disk itself, through the root.
		// des's record of its own wave syncs (the state directory) is the
		// evidence a write's finished phases and retries are judged on.
		WriteFacts: func(rel string, content, _ []byte) map[string]any {
			f := taskgraph.WriteFacts(e.root, rel, content)
			graphEvidence(e.stateDir, rel, f)
			return f
		},
		DiskFacts: func() map[string]any { return taskgraph.InvocationFacts(e.root, file) },
		PhaseID:   taskgraph.PhaseID,
	}
}

// graphFile is task_graph_file as the gates compare paths: slash-separated,
// relative to the root.
func (e *Engine) graphFile() string {
	return filepath.ToSlash(filepath.Clean(filepath.FromSlash(e.cfg.TaskGraphFile)))
}

// GraphPath is the task graph document's absolute path.
func (e *Engine) GraphPath() string {
	return filepath.Join(e.root, filepath.FromSlash(e.graphFile()))
}

// sessionsDir is the subagent registry's directory.
func (e *Engine) sessionsDir() string { return filepath.Join(e.root, SessionsDir) }

// ttl is the registry's entry lifetime.
func (e *Engine) ttl() time.Duration { return time.Duration(e.cfg.SessionTTLMinutes) * time.Minute }

// registryFacts is Gate 1's input.registry, when the concurrency limit is
// set.
func (e *Engine) registryFacts() gate.Registry {
	if e.cfg.MaxConcurrentAgents <= 0 {
		return nil
	}
	return func(ctx context.Context) (map[string]any, error) {
		agents, err := registryRunning(ctx, e.sessionsDir(), e.now(), e.ttl(), e.writes)
		if err != nil {
			return nil, err
		}
		list := make([]any, len(agents))
		for i, a := range agents {
			list[i] = map[string]any{"agent_id": a.ID, "agent_type": a.Type, "started_at": a.StartedAt.UTC().Format(time.RFC3339)}
		}
		return map[string]any{"running": len(agents), "agents": list}, nil
	}
}

// DelegationGate returns the delegation check of the settings
// (delegation_mode), counting the main thread's direct calls in the
// subagent registry.
func (e *Engine) DelegationGate(lookupEnv func(string) (string, bool)) gate.Delegation {
	return gate.Delegation{
		Root: e.root, Mode: e.cfg.DelegationMode, TempDir: gate.TempDir(lookupEnv),
		CountDirect: func(ctx context.Context, session string) (int, error) {
			return registryCountDirect(ctx, e.sessionsDir(), session, e.now(), e.writes)
		},
	}
}

// CheckDelegation runs the delegation rules on a work tool call
// (DES-DELEGATION-REQUIRED). With delegation_mode off nothing is evaluated.
// An error with an evaluated result means the call was judged but its
// direct call could not be counted.
func (e *Engine) CheckDelegation(ctx context.Context, call gate.DelegationCall) (gate.Result, error) {
	return e.DelegationGate(os.LookupEnv).Check(ctx, e, call)
}

// SubagentStarted records a subagent in the registry (SubagentStart).
func (e *Engine) SubagentStarted(ctx context.Context, agentID, agentType, sessionID string) error {
	if agentID == "" {
		return nil
	}
	if err := registryStart(ctx, e.sessionsDir(), Agent{ID: agentID, Type: agentType, SessionID: sessionID}, e.now(), e.writes); err != nil {
		return fmt.Errorf("des: subagent registry: %w", err)
	}
	return nil
}

// SubagentStopped marks a subagent stopped in the registry (SubagentStop).
func (e *Engine) SubagentStopped(ctx context.Context, agentID string) error {
	if agentID == "" {
		return nil
	}
	if err := registryStop(ctx, e.sessionsDir(), agentID, e.now(), e.writes); err != nil {
		return fmt.Errorf("des: subagent registry: %w", err)
	}
	return nil
}

// UserPrompt starts a new turn (UserPromptSubmit): the session's count of
// direct calls goes back to zero, and registry entries older than
// session_ttl_minutes are dropped. Run records older than gate.RunRetention
// are removed too (runPruneLimit a turn); a failure there is logged, not
// returned, since it costs speed only.
func (e *Engine) UserPrompt(ctx context.Context, sessionID string) error {
	var errs []error
	if err := registryResetTurn(ctx, e.sessionsDir(), sessionID, e.writes); err != nil {
		errs = append(errs, err)
	}
	if err := registryPrune(ctx, e.sessionsDir(), e.now(), e.ttl(), e.writes); err != nil {
		errs = append(errs, err)
	}
	if n, err := gate.PruneRuns(ctx, e.writes, e.root, RunsDir, e.now().Add(-gate.RunRetention), runPruneLimit); err != nil {
		e.logger.Warn("des: old run records not removed", "dir", filepath.Join(e.root, RunsDir), "removed", n, "err", err)
	}
	if n, err := gate.PruneRuns(ctx, nil, filepath.Dir(statedir.Evidence(e.stateDir)), filepath.Base(statedir.Evidence(e.stateDir)), e.now().Add(-gate.RunRetention), runPruneLimit); err != nil {
		e.logger.Warn("des: old run records not removed", "dir", statedir.Evidence(e.stateDir), "removed", n, "err", err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("des: subagent registry: %w", err)
	}
	return nil
}

// runPruneLimit bounds the run records one turn removes: each removal is
// announced to the effect check (a few file operations), and a backlog
// goes over the next turns.
const runPruneLimit = 200

// WaveSyncGate returns the wave sync of this project.
func (e *Engine) WaveSyncGate() gate.WaveSync {
	return gate.WaveSync{
		Stop: e.SubagentStopGate(), Graph: e.taskGraph(), Audit: e.audit, Now: e.now,
		Sync: func(ctx context.Context, phase string, gate2Failed bool, lastMessage string, now time.Time) (gate.GraphUpdate, error) {
			types, err := e.verificationTypes(ctx)
			if err != nil {
				return gate.GraphUpdate{}, err
			}
			upd, u, err := graphSync(ctx, e.GraphPath(), phase, gate2Failed, lastMessage, now, types, e.writes)
			if err == nil && e.stateDir != "" {
				// The graph is updated; without the record a later write is
				// judged on the disk alone (and retries on the graph's own).
				if rerr := rememberSync(ctx, e.stateDir, e.graphFile(), e.GraphPath(), u, now); rerr != nil {
					e.logger.Error("des: the wave sync is not recorded in des's evidence", "phase", phase, "err", rerr)
				}
			}
			return upd, err
		},
	}
}

// verificationTypes is data.des.taskgraph.verification_types of the
// policies, which the write rules count as verifications: the wave sync
// fails a phase of any of these types on a failing verdict. nil when the
// policies define none (the default, "verification").
func (e *Engine) verificationTypes(ctx context.Context) (map[string]bool, error) {
	pe, err := e.Policy(ctx)
	if err != nil {
		return nil, err
	}
	raw, ok := pe.Data("des.taskgraph.verification_types")
	if !ok {
		return nil, nil
	}
	table, _ := raw.(map[string]any)
	types := make(map[string]bool, len(table))
	for t, on := range table {
		types[t] = on == true
	}
	return types, nil
}

// SyncTaskGraph records in the task graph how the subagent of a phase
// ended (SubagentStop, after Gate 2): see gate.WaveSync.Run.
func (e *Engine) SyncTaskGraph(ctx context.Context, s gate.Stop, lastMessage string, gate2 *gate.StopResult) (gate.WaveSyncResult, error) {
	return e.WaveSyncGate().Run(ctx, s, lastMessage, gate2)
}

// NextSteps tells the orchestrator what to run next after the subagent of
// the phase its prompt names has finished (PostToolUse for Agent/Task):
// the verification of a completed implementation phase, the next wave, a
// re-implementation, or that the user must decide. "" when the prompt
// names no phase or there is no graph.
func (e *Engine) NextSteps(ctx context.Context, prompt string) (string, error) {
	phase, ok := graphPhaseID(prompt)
	if !ok {
		return "", nil
	}
	text, err := graphNext(ctx, e.GraphPath(), phase)
	if err != nil {
		return "", fmt.Errorf("des: what to run after phase %s: %w", phase, err)
	}
	return text, nil
}

// OrchestrationStatus is what `des-hook status` and `des-hook statusline` show.
type OrchestrationStatus struct {
	DelegationMode      string       `json:"delegation_mode"`
	MaxConcurrentAgents int          `json:"max_concurrent_agents"`
	SessionTTLMinutes   int          `json:"session_ttl_minutes"`
	TaskGraphFile       string       `json:"task_graph_file"`
	Running             []AgentState `json:"running"`
	Last                *AgentState  `json:"last,omitempty"` // the subagent that stopped last
	Graph               *GraphState  `json:"task_graph,omitempty"`
	// Workflow is the iSDLC workflow in effect at the root, nil when
	// there is none.
	Workflow *WorkflowStatus `json:"workflow,omitempty"`
}

// WorkflowStatus is an iSDLC workflow's current phase and its test
// iterations, as the workflow state holds them (des writes them there from
// the test runs it saw under phase_evidence "des").
type WorkflowStatus struct {
	StateFile string `json:"state_file"`
	Phase     string `json:"phase,omitempty"`
	// Test iterations of the phase; TestIteration is 0 when none ran.
	TestIteration  int    `json:"test_iteration"`
	MaxIterations  int    `json:"max_iterations,omitempty"`
	LastTestResult string `json:"last_test_result,omitempty"`
	TestStatus     string `json:"test_status,omitempty"` // "success" or "escalated", "" otherwise
}

// AgentState is one subagent of the registry.
type AgentState struct {
	ID        string    `json:"agent_id"`
	Type      string    `json:"agent_type"`
	SessionID string    `json:"session_id,omitempty"`
	StartedAt time.Time `json:"started_at"`
	StoppedAt time.Time `json:"stopped_at,omitzero"`
	// Seconds is how long it has run (running) or ran (stopped).
	Seconds float64 `json:"seconds"`
}

// GraphState is the task graph as people read it.
type GraphState struct {
	Path        string      `json:"path"`
	Problem     string      `json:"problem,omitempty"` // why it could not be read
	TaskID      string      `json:"task_id,omitempty"`
	CurrentWave int         `json:"current_wave"`
	Waves       []WaveState `json:"waves"`
}

// WaveState is one wave of the graph.
type WaveState struct {
	ID       int          `json:"wave_id"`
	Parallel bool         `json:"parallel_execution"`
	Phases   []PhaseState `json:"phases"`
}

// PhaseState is one phase of a wave, the spec's defaults applied.
type PhaseState struct {
	ID         string `json:"phase_id"`
	Type       string `json:"type"`
	Agent      string `json:"agent,omitempty"`
	Verifies   string `json:"verifies_phase_id,omitempty"`
	Status     string `json:"status"`
	Retries    int    `json:"retries"`
	MaxRetries int    `json:"max_retries"`
}

// Status gathers the orchestration status: the settings, the registry
// (running subagents, the last stopped) and the graph. It writes nothing.
func (e *Engine) Status(ctx context.Context) (OrchestrationStatus, error) {
	return StatusOf(ctx, e.root, e.cfg, e.now())
}

// StatusOf is Engine.Status without an Engine: for the status line, which
// Claude Code runs after every message and which must neither load
// policies nor open the audit trail. cfg is the project's settings.
func StatusOf(ctx context.Context, root string, cfg Config, now time.Time) (OrchestrationStatus, error) {
	file := filepath.ToSlash(filepath.Clean(filepath.FromSlash(cfg.TaskGraphFile)))
	st := OrchestrationStatus{
		DelegationMode: cfg.DelegationMode, MaxConcurrentAgents: cfg.MaxConcurrentAgents,
		SessionTTLMinutes: cfg.SessionTTLMinutes, TaskGraphFile: file, Running: []AgentState{},
	}
	dir := filepath.Join(root, SessionsDir)
	ttl := time.Duration(cfg.SessionTTLMinutes) * time.Minute
	agents, err := registryRunning(ctx, dir, now, ttl, nil)
	if err != nil {
		return st, fmt.Errorf("des: subagent registry: %w", err)
	}
	for _, a := range agents {
		a.Seconds = now.Sub(a.StartedAt).Seconds()
		st.Running = append(st.Running, a)
	}
	if last, ok, err := registryLast(ctx, dir, now); err != nil {
		return st, fmt.Errorf("des: subagent registry: %w", err)
	} else if ok {
		st.Last = &last
	}
	st.Graph = graphState(filepath.Join(root, filepath.FromSlash(file)), file)
	st.Workflow = workflowStatus(root)
	return st, nil
}

// workflowStatus reads the workflow state in effect at root for people,
// nil when there is none or it cannot be read.
func workflowStatus(root string) *WorkflowStatus {
	w, err := isdlc.Discover(isdlc.Options{Root: root, Cwd: root})
	if err != nil || w == nil || w.State == nil {
		return nil
	}
	ws := &WorkflowStatus{StateFile: w.StateFile, Phase: isdlc.CurrentPhase(w.State)}
	if ws.Phase == "" {
		return ws
	}
	phases, _ := w.State["phases"].(map[string]any)
	doc, _ := phases[ws.Phase].(map[string]any)
	reqs, _ := doc["iteration_requirements"].(map[string]any)
	ti, _ := reqs["test_iteration"].(map[string]any)
	num := func(k string) int {
		switch n := ti[k].(type) {
		case json.Number: // how internal/isdlc reads numbers
			i, _ := n.Int64()
			return int(i)
		case float64:
			return int(n)
		}
		return 0
	}
	ws.TestIteration, ws.MaxIterations = num("current_iteration"), num("max_iterations")
	ws.LastTestResult, _ = ti["last_test_result"].(string)
	ws.TestStatus, _ = ti["status"].(string)
	return ws
}

// graphState reads the graph for people, nil when there is none; what
// keeps it from being read is its Problem.
func graphState(path, rel string) *GraphState {
	data, err := fileio.ReadBounded(path, maxGraphSize)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	g := &GraphState{Path: rel, Waves: []WaveState{}}
	if err != nil {
		g.Problem = err.Error()
		return g
	}
	var doc struct {
		TaskID      any             `json:"task_id"`
		CurrentWave *int            `json:"current_wave"`
		MaxRetries  *int            `json:"max_retries"`
		Waves       []graphWaveJSON `json:"waves"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		g.Problem = "not a task graph: " + err.Error()
		return g
	}
	if doc.TaskID != nil {
		g.TaskID = fmt.Sprint(doc.TaskID)
	}
	if doc.CurrentWave != nil {
		g.CurrentWave = *doc.CurrentWave
	}
	maxRetries := 3
	if doc.MaxRetries != nil {
		maxRetries = *doc.MaxRetries
	}
	for i, w := range doc.Waves {
		ws := WaveState{ID: i, Phases: []PhaseState{}}
		if n, ok := w.WaveID.(float64); ok {
			ws.ID = int(n)
		}
		ws.Parallel = w.Parallel != nil && *w.Parallel
		for _, p := range w.Phases {
			ps := PhaseState{ID: p.PhaseID, Type: p.Type, Agent: p.Agent, Verifies: p.Verifies, Status: "pending", MaxRetries: maxRetries}
			if p.Status != "" {
				ps.Status = p.Status
			}
			if p.Retries != nil {
				ps.Retries = *p.Retries
			}
			ws.Phases = append(ws.Phases, ps)
		}
		g.Waves = append(g.Waves, ws)
	}
	return g
}

type graphWaveJSON struct {
	WaveID   any   `json:"wave_id"`
	Parallel *bool `json:"parallel_execution"`
	Phases   []struct {
		PhaseID  string `json:"phase_id"`
		Type     string `json:"type"`
		Agent    string `json:"agent"`
		Verifies string `json:"verifies_phase_id"`
		Status   string `json:"status"`
		Retries  *int   `json:"retries"`
	} `json:"phases"`
}

// maxGraphSize bounds what is read of the graph for the status.
const maxGraphSize = 16 << 20

// Agent is a subagent as the registry records it.
type Agent struct {
	ID, Type, SessionID string
}
