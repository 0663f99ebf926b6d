package taskgraph

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/deterministic-exec/des/internal/datadoc"
)

// DefaultPath is where the graph lives unless the task_graph_file setting
// says otherwise (slash path relative to the project root).
const DefaultPath = ".claude/state/active_task_graph.json"

// MaxBytes bounds a graph read from disk: a plan of thousands of phases is
// far below it, and a hook must not read an unbounded file.
const MaxBytes = 4 << 20

// Phase statuses and types the spec names (others are allowed for type).
const (
	StatusPending    = "pending"
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusFailed     = "failed"

	TypeImplementation = "implementation"
	TypeVerification   = "verification"
)

// DefaultMaxRetries is max_retries when the graph does not set it.
const DefaultMaxRetries = 3

// Errors of Parse, wrapped with where and why.
var (
	ErrInvalidJSON = errors.New("task graph is not valid JSON")
	ErrNotObject   = errors.New("task graph is not a JSON object")
)

// Graph is the typed view of a task graph, defaults applied and null read
// as absent. A value of the wrong type also reads as absent: Validate
// reports it, and Sync refuses a graph that fails the schema.
type Graph struct {
	TaskID          string
	Description     string
	Tier            int     // 0 when absent
	ComplexityScore float64 // 0 when absent
	CurrentWave     int     // index into Waves; len(Waves) once the plan is complete
	MaxRetries      int     // default 3
	Waves           []Wave
}

// Wave is one wave of phases.
type Wave struct {
	WaveID            int // the label; -1 when absent
	ParallelExecution bool
	Phases            []Phase
}

// Phase is one phase of a wave.
type Phase struct {
	PhaseID          string
	Type             string
	Objective        string
	Agent            string
	DependsOn        []string
	VerifiesPhaseID  string
	Files            []string // deliverable_manifest.files[].path
	IsAtomic         bool
	Depth            int // 0 when absent
	EstimatedMinutes float64
	Status           string // default "pending"
	Retries          int
	Wave             int // index of the wave that holds it (not a document field)
}

// Parse decodes a task graph. It returns the typed view and the document
// itself (numbers as json.Number, as the policy gets it); the error wraps
// ErrInvalidJSON or ErrNotObject, saying where.
func Parse(data []byte) (*Graph, map[string]any, error) {
	v, err := datadoc.Decode(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrInvalidJSON, err)
	}
	doc, ok := v.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("%w (it is %s)", ErrNotObject, datadoc.Kind(v))
	}
	return view(doc), doc, nil
}

// view builds the typed view of a decoded document.
func view(doc map[string]any) *Graph {
	g := &Graph{
		TaskID:          str(doc["task_id"]),
		Description:     str(doc["description"]),
		Tier:            integer(doc["tier"], 0),
		ComplexityScore: number(doc["complexity_score"]),
		CurrentWave:     integer(doc["current_wave"], 0),
		MaxRetries:      integer(doc["max_retries"], DefaultMaxRetries),
	}
	// Out-of-range numbers read as absent too, so that no caller indexes
	// with them.
	if g.CurrentWave < 0 {
		g.CurrentWave = 0
	}
	if g.MaxRetries < 0 {
		g.MaxRetries = DefaultMaxRetries
	}
	waves, _ := doc["waves"].([]any)
	for wi, wv := range waves {
		wm, _ := wv.(map[string]any)
		w := Wave{WaveID: integer(wm["wave_id"], -1), ParallelExecution: boolean(wm["parallel_execution"])}
		phases, _ := wm["phases"].([]any)
		for _, pv := range phases {
			pm, _ := pv.(map[string]any)
			p := Phase{
				PhaseID:          str(pm["phase_id"]),
				Type:             str(pm["type"]),
				Objective:        str(pm["objective"]),
				Agent:            str(pm["agent"]),
				VerifiesPhaseID:  str(pm["verifies_phase_id"]),
				IsAtomic:         boolean(pm["is_atomic"]),
				Depth:            integer(pm["depth"], 0),
				EstimatedMinutes: number(pm["estimated_minutes"]),
				Status:           str(pm["status"]),
				Retries:          max(integer(pm["retries"], 0), 0),
				Wave:             wi,
			}
			if p.Status == "" {
				p.Status = StatusPending
			}
			deps, _ := pm["depends_on"].([]any)
			for _, d := range deps {
				if s, ok := d.(string); ok {
					p.DependsOn = append(p.DependsOn, s)
				}
			}
			if p.DependsOn == nil {
				p.DependsOn = []string{}
			}
			man, _ := pm["deliverable_manifest"].(map[string]any)
			files, _ := man["files"].([]any)
			for _, f := range files {
				fm, _ := f.(map[string]any)
				if s := str(fm["path"]); s != "" {
					p.Files = append(p.Files, s)
				}
			}
			w.Phases = append(w.Phases, p)
		}
		g.Waves = append(g.Waves, w)
	}
	return g
}

// Phase returns the first phase with the id, and whether there is one.
func (g *Graph) Phase(id string) (Phase, bool) {
	for _, w := range g.Waves {
		for _, p := range w.Phases {
			if p.PhaseID == id {
				return p, true
			}
		}
	}
	return Phase{}, false
}

// Complete reports whether the plan is done: current_wave is past the last
// wave.
func (g *Graph) Complete() bool { return g.CurrentWave >= len(g.Waves) }

// Duplicates lists the phase ids that occur more than once, in order of
// their second occurrence (the spec's DES-TASKGRAPH-INVALID; the schema
// cannot say it).
func (g *Graph) Duplicates() []string {
	seen := map[string]int{}
	var dup []string
	for _, w := range g.Waves {
		for _, p := range w.Phases {
			if seen[p.PhaseID]++; seen[p.PhaseID] == 2 {
				dup = append(dup, p.PhaseID)
			}
		}
	}
	return dup
}

// verifiers lists the verification phases that verify id.
func (g *Graph) verifiers(id string) []Phase {
	var out []Phase
	for _, w := range g.Waves {
		for _, p := range w.Phases {
			if p.Type == TypeVerification && p.VerifiesPhaseID == id {
				out = append(out, p)
			}
		}
	}
	return out
}

func str(v any) string { s, _ := v.(string); return s }

func boolean(v any) bool { b, _ := v.(bool); return b }

func number(v any) float64 {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		if err == nil {
			return f
		}
	case float64:
		return n
	}
	return 0
}

// integer reads an integral JSON number (3 or 3.0); anything else, or a
// value beyond int range, is def.
func integer(v any, def int) int {
	switch n := v.(type) {
	case json.Number:
		if i, err := strconv.ParseInt(string(n), 10, 64); err == nil && i >= math.MinInt32 && i <= math.MaxInt32 {
			return int(i)
		}
		if f, err := n.Float64(); err == nil && f == math.Trunc(f) && math.Abs(f) <= math.MaxInt32 {
			return int(f)
		}
	case float64:
		if n == math.Trunc(n) && math.Abs(n) <= math.MaxInt32 {
			return int(n)
		}
	}
	return def
}
