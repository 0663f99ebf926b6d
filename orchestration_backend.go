package des

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"time"

	"github.com/deterministic-exec/des/gate"
)

// The backends of the orchestration facts: internal/taskgraph and
// internal/registry. PLACEHOLDER until those packages are merged.

var errNoBackend = errors.New("not available in this build")

func graphWriteFacts(rel string, content, disk []byte) map[string]any {
	f := map[string]any{"path": rel}
	var doc any
	if err := json.Unmarshal(content, &doc); err != nil {
		f["problem"], f["error"] = "invalid_json", err.Error()
	} else if _, ok := doc.(map[string]any); !ok {
		f["problem"], f["error"] = "not_object", "not a JSON object"
	} else {
		f["document"], f["schema_errors"] = doc, []any{}
	}
	var d map[string]any
	if disk != nil && json.Unmarshal(disk, &d) == nil {
		f["disk"] = d
	}
	return f
}

var phaseRE = regexp.MustCompile(`<!--\s*DES-TASK-PHASE:\s*([A-Za-z0-9._-]+)\s*-->|(?mi)^\s*Phase ID:\s*([A-Za-z0-9._-]+)\s*$`)

func graphPhaseID(prompt string) (string, bool) {
	m := phaseRE.FindStringSubmatch(prompt)
	if m == nil {
		return "", false
	}
	return m[1] + m[2], true
}

func graphSync(ctx context.Context, path, phase string, gate2Failed bool, lastMessage string, now time.Time, w gate.Writes) (gate.GraphUpdate, error) {
	return gate.GraphUpdate{}, errNoBackend
}

func graphNext(ctx context.Context, path, phase string) (string, error) { return "", nil }

func registryRunning(ctx context.Context, dir string, now time.Time, ttl time.Duration, w gate.Writes) ([]AgentState, error) {
	return nil, nil
}

func registryLast(ctx context.Context, dir string, now time.Time) (AgentState, bool, error) {
	return AgentState{}, false, nil
}

func registryCountDirect(ctx context.Context, dir, session string, now time.Time, w gate.Writes) (int, error) {
	return 0, nil
}

func registryStart(ctx context.Context, dir string, a Agent, now time.Time, w gate.Writes) error {
	return nil
}
func registryStop(ctx context.Context, dir, id string, now time.Time, w gate.Writes) error {
	return nil
}
func registryResetTurn(ctx context.Context, dir, session string, w gate.Writes) error { return nil }
func registryPrune(ctx context.Context, dir string, now time.Time, ttl time.Duration, w gate.Writes) error {
	return nil
}
