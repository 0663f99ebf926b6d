package des

import (
	"context"
	"errors"
	"io/fs"
	"time"

	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/internal/registry"
	"github.com/deterministic-exec/des/internal/taskgraph"
)

// The backends of the orchestration facts and of what DES carries out
// itself: internal/taskgraph (the graph document, the wave sync, what to run
// next) and internal/registry (the subagent registry in .des/sessions).
// Every write is announced through w, so that the effect check keeps it.

// The gate announces its writes through gate.Writes; the backends' Writes
// have its shape, so that the gate passes its own without an import cycle
// (and their tests link no policy engine).
var (
	_ registry.Writes  = gate.Writes(nil)
	_ taskgraph.Writes = gate.Writes(nil)
)

func graphPhaseID(prompt string) (string, bool) { return taskgraph.PhaseID(prompt) }

// graphSync is taskgraph.Sync. The outcome is Gate 2's verdict and the
// verdict line of the last message, which fails a verification phase only:
// taskgraph tells by the phase's type.
// verificationTypes are the policies' verification_types (nil: the
// default, "verification" alone).
// The update itself is returned too, for des's record of the sync
// (rememberSync).
func graphSync(ctx context.Context, path, phase string, gate2Failed bool, lastMessage string, _ time.Time, verificationTypes map[string]bool, w gate.Writes) (gate.GraphUpdate, taskgraph.Update, error) {
	verdict := taskgraph.Verdict(lastMessage)
	var tw taskgraph.Writes
	if w != nil {
		tw = w
	}
	u, err := taskgraph.Sync(ctx, path, phase, taskgraph.Outcome{GateFailed: gate2Failed, Verdict: verdict, VerificationTypes: verificationTypes}, tw)
	upd := gate.GraphUpdate{Changed: u.Changed, Status: u.To, Fields: map[string]any{
		"from": u.From, "wave_from": u.WaveBefore, "wave_to": u.WaveAfter, "wave_advanced": u.WaveAdvanced,
	}}
	if verdict != "" {
		upd.Fields["verdict"] = verdict
	}
	if u.Reset != "" {
		upd.Fields["verified_phase"], upd.Fields["verified_retries"] = u.Reset, u.ResetRetries
	}
	return upd, u, err
}

// rememberSync keeps des's record of a wave sync (taskgraph.Remember) in
// the state directory, from the graph as the sync left it: the evidence the
// write guard reads (input.task_graph.evidence).
func rememberSync(ctx context.Context, stateDir, rel, path string, u taskgraph.Update, now time.Time) error {
	data, err := fileio.ReadBounded(path, taskgraph.MaxBytes)
	if err != nil {
		return err
	}
	return taskgraph.Remember(ctx, stateDir, rel, data, u, "", now)
}

// graphEvidence is input.task_graph.evidence (taskgraph.EvidenceFacts).
func graphEvidence(stateDir, rel string, facts map[string]any) {
	doc, ok := facts["document"].(map[string]any)
	if !ok {
		return
	}
	facts["evidence"] = taskgraph.EvidenceFacts(stateDir, rel, doc)
}

// graphNext is what to run after phase, read from the graph as the sync
// left it; "" when there is no graph or it does not hold the phase.
func graphNext(_ context.Context, path, phase string) (string, error) {
	data, err := fileio.ReadBounded(path, taskgraph.MaxBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	g, _, err := taskgraph.Parse(data)
	if err != nil {
		return "", err
	}
	return taskgraph.NextAfter(g, phase).String(), nil
}

func openRegistry(dir string, w gate.Writes) *registry.Registry {
	r := registry.Open(dir)
	if w != nil {
		r.Writes = w
	}
	return r
}

func agentState(a registry.Agent) AgentState {
	return AgentState{ID: a.ID, Type: a.Type, SessionID: a.SessionID, StartedAt: a.StartedAt, StoppedAt: a.StoppedAt, Seconds: a.Duration().Seconds()}
}

func registryRunning(_ context.Context, dir string, now time.Time, ttl time.Duration, w gate.Writes) ([]AgentState, error) {
	agents, err := openRegistry(dir, w).Running(now, ttl)
	out := make([]AgentState, len(agents))
	for i, a := range agents {
		out[i] = agentState(a)
	}
	return out, err
}

func registryLast(_ context.Context, dir string, _ time.Time) (AgentState, bool, error) {
	a, ok, err := openRegistry(dir, nil).Last()
	return agentState(a), ok, err
}

func registryCountDirect(ctx context.Context, dir, session string, now time.Time, w gate.Writes) (int, error) {
	return openRegistry(dir, w).CountDirect(ctx, session, now)
}

func registryStart(_ context.Context, dir string, a Agent, now time.Time, w gate.Writes) error {
	return openRegistry(dir, w).Start(registry.Agent{ID: a.ID, Type: a.Type, SessionID: a.SessionID}, now)
}

// registryStop marks an agent stopped; one that started before DES was
// installed (or was pruned) has nothing to mark.
func registryStop(_ context.Context, dir, id string, now time.Time, w gate.Writes) error {
	_, err := openRegistry(dir, w).Stop(id, now)
	if errors.Is(err, registry.ErrUnknownAgent) {
		return nil
	}
	return err
}

func registryResetTurn(ctx context.Context, dir, session string, w gate.Writes) error {
	return openRegistry(dir, w).ResetTurn(ctx, session)
}

func registryPrune(ctx context.Context, dir string, now time.Time, ttl time.Duration, w gate.Writes) error {
	_, err := openRegistry(dir, w).Prune(ctx, now, ttl)
	return err
}
