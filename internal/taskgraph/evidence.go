package taskgraph

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/internal/filelock"
)

// Evidence: des's own record of what its wave sync set in a task graph,
// kept in des's state directory (outside the project, out of the agent's
// reach), one file per graph file. The write guard reads it as
// input.task_graph.evidence: a write may leave a phase completed or failed
// only where the disk already said so or des's record shows the subagent
// run that set it, and no write lowers a phase's retries below the failed
// verifications des counted, whatever the plan's task_id (a phase is known
// by its phase_id, else by its content). The record of a plan is dropped
// when des's sync finds every wave done.

// MemoryDirName is the directory of the records inside the state directory.
const MemoryDirName = "taskgraph"

// maxMemory bounds what is read of a record.
const maxMemory = 4 << 20

// memoryLockWait bounds the wait for a record's lock.
const memoryLockWait = 2 * time.Second

// Memory is des's record of one task graph file.
type Memory struct {
	Path string `json:"path"` // the graph, relative to the project root
	// MaxRetries is the graph's max_retries when des last synced it.
	MaxRetries int                    `json:"max_retries"`
	Phases     map[string]PhaseRecord `json:"phases"`
}

// PhaseRecord is what des last set for one phase.
type PhaseRecord struct {
	Status  string    `json:"status"`            // completed, failed, or pending (sent back by a failed verification)
	Retries int       `json:"retries"`           // failed verifications des counted
	Content string    `json:"content,omitempty"` // ContentKey of the phase
	Agent   string    `json:"agent,omitempty"`   // the subagent type that ran it, when known
	At      time.Time `json:"at"`
}

// MemoryPath is the record of the graph at rel (slash path relative to the
// project root) in the state directory.
func MemoryPath(stateDir, rel string) string {
	sum := sha256.Sum256([]byte(rel))
	return filepath.Join(stateDir, MemoryDirName, hex.EncodeToString(sum[:16])+".json")
}

// ContentKey identifies a phase by what it does (type, objective with case
// and spacing normalised, deliverable files), so that a phase renamed in a
// new plan keeps its history; "" when the phase has neither objective nor
// files (too little to tell it apart).
func ContentKey(p Phase) string {
	obj := strings.Join(strings.Fields(strings.ToLower(p.Objective)), " ")
	if obj == "" && len(p.Files) == 0 {
		return ""
	}
	files := slices.Clone(p.Files)
	slices.Sort(files)
	sum := sha256.Sum256([]byte(p.Type + "\x00" + obj + "\x00" + strings.Join(files, "\x00")))
	return hex.EncodeToString(sum[:12])
}

// ReadMemory reads the record of the graph at rel; nil when there is none.
func ReadMemory(stateDir, rel string) (*Memory, error) {
	raw, err := fileio.ReadBounded(MemoryPath(stateDir, rel), maxMemory)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m Memory
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("des's record of %s: %w", rel, err)
	}
	if m.Phases == nil {
		m.Phases = map[string]PhaseRecord{}
	}
	return &m, nil
}

// Remember records what one wave sync did (u), graph being the graph file's
// content after it: the phase's new status, the phase a failed
// verification sent back with its retries, the graph's max_retries. When
// every wave of the graph is done the record is removed: the plan is over.
// Under a lock beside the record, replaced atomically.
func Remember(ctx context.Context, stateDir, rel string, graph []byte, u Update, agent string, now time.Time) error {
	if stateDir == "" || u.PhaseID == "" || u.To == "" {
		return nil
	}
	g, _, err := Parse(graph)
	if err != nil {
		return fmt.Errorf("des's record of %s: %w", rel, err)
	}
	path := MemoryPath(stateDir, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("des's record of %s: %w", rel, err)
	}
	lctx, cancel := context.WithTimeout(ctx, memoryLockWait)
	defer cancel()
	lock, err := filelock.Acquire(lctx, path+".lock")
	if err != nil {
		return fmt.Errorf("des's record of %s: %w", rel, err)
	}
	defer func() { _ = lock.Unlock() }()
	if g.Complete() {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("des's record of %s: %w", rel, err)
		}
		return nil
	}
	m, err := ReadMemory(stateDir, rel)
	if err != nil || m == nil {
		m = &Memory{Phases: map[string]PhaseRecord{}} // an unreadable record is replaced by what des knows now
	}
	m.Path, m.MaxRetries = rel, g.MaxRetries
	set := func(id, status string, retries int, agent string) {
		old := m.Phases[id]
		r := PhaseRecord{Status: status, Retries: max(old.Retries, retries), Agent: agent, At: now.UTC()}
		if p, ok := g.Phase(id); ok {
			r.Content = ContentKey(p)
			r.Retries = max(r.Retries, p.Retries)
			if r.Agent == "" {
				r.Agent = p.Agent
			}
		}
		m.Phases[id] = r
	}
	set(u.PhaseID, u.To, 0, agent)
	if u.Reset != "" {
		set(u.Reset, StatusPending, u.ResetRetries, "")
	}
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := fileio.WriteAtomic(path, append(raw, '\n')); err != nil {
		return fmt.Errorf("des's record of %s: %w", rel, err)
	}
	return nil
}

// EvidenceFacts is input.task_graph.evidence for a write that would leave
// doc in the graph at rel: {"known": false} without a record; else
// {"known": true, "max_retries", "phases": {incoming phase_id: {"status",
// "retries", "matched_by" ("phase_id" or "content"), "recorded_id",
// "agent", "at"}}} for each incoming phase des has a record of. A record
// that cannot be read is {"known": false, "error"}: nothing counts as seen.
func EvidenceFacts(stateDir, rel string, doc map[string]any) map[string]any {
	if stateDir == "" {
		return map[string]any{"known": false}
	}
	m, err := ReadMemory(stateDir, rel)
	if err != nil {
		return map[string]any{"known": false, "error": err.Error()}
	}
	if m == nil {
		return map[string]any{"known": false}
	}
	byContent := map[string][]string{}
	for id, r := range m.Phases {
		if r.Content != "" {
			byContent[r.Content] = append(byContent[r.Content], id)
		}
	}
	phases := map[string]any{}
	g := view(doc)
	for _, w := range g.Waves {
		for _, p := range w.Phases {
			if _, done := phases[p.PhaseID]; done || p.PhaseID == "" {
				continue
			}
			id, how := p.PhaseID, "phase_id"
			r, ok := m.Phases[id]
			if !ok {
				// Another id for the same work: only when one recorded phase
				// has this content, and no incoming phase already uses its id.
				ids := byContent[ContentKey(p)]
				if ContentKey(p) == "" || len(ids) != 1 {
					continue
				}
				if _, used := g.Phase(ids[0]); used {
					continue
				}
				id, how, r = ids[0], "content", m.Phases[ids[0]]
			}
			phases[p.PhaseID] = map[string]any{
				"status": r.Status, "retries": r.Retries, "matched_by": how, "recorded_id": id,
				"agent": r.Agent, "at": r.At.Format(time.RFC3339),
			}
		}
	}
	return map[string]any{"known": true, "max_retries": m.MaxRetries, "phases": phases}
}
