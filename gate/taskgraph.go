package gate

import (
	"context"
	"fmt"
	"path/filepath"
)

// Orchestration governance: delegating orchestrators that run a task
// graph in waves (des.taskgraph, des.delegation). Go gathers the facts
// (internal/taskgraph, internal/registry, filled in by package des); Rego
// decides.

// TaskGraph is the orchestrator's task graph document and how Go reads it.
// Package des fills it from internal/taskgraph; a zero TaskGraph has no
// graph, and the task graph rules give no opinion.
type TaskGraph struct {
	// File is the graph's path, relative to the project root and
	// slash-separated (setting task_graph_file); "" means none.
	File string
	// WriteFacts returns input.task_graph of document_write for a write
	// that would leave content in the graph, disk being what the file
	// holds now (nil when it does not exist): {path, document,
	// schema_errors} or {path, problem, error}, and disk when the file on
	// disk parses.
	WriteFacts func(rel string, content, disk []byte) map[string]any
	// DiskFacts returns input.task_graph of pre_invocation, the graph on
	// disk: {path, document}, or {path, problem, error} when it exists but
	// cannot be used; nil when there is no graph file. Nil DiskFacts reads
	// the file and builds them with WriteFacts.
	DiskFacts func() map[string]any
	// PhaseID returns the phase a delegation prompt names ("Phase ID: <id>"
	// or <!-- DES-TASK-PHASE: <id> -->).
	PhaseID func(prompt string) (string, bool)
}

// is reports whether the root-relative path rel is the graph.
func (g TaskGraph) is(rel string) bool { return g.File != "" && rel == g.File }

// globs is the graph as a list of globs, for the code that handles every
// kind of guarded document alike. Its path holds no pattern characters
// (the setting refuses them).
func (g TaskGraph) globs() []string {
	if g.File == "" {
		return nil
	}
	return []string{g.File}
}

// phaseID is the phase a prompt names, "" when none (or no graph reader).
func (g TaskGraph) phaseID(prompt string) string {
	if g.PhaseID == nil {
		return ""
	}
	id, ok := g.PhaseID(prompt)
	if !ok {
		return ""
	}
	return id
}

// writeFacts is input.task_graph for a write to the graph. Without a
// reader only the path is known: the rules then judge nothing but the path.
func (g TaskGraph) writeFacts(rel string, content, disk []byte) map[string]any {
	if g.WriteFacts == nil {
		return map[string]any{"path": rel}
	}
	f := g.WriteFacts(rel, content, disk)
	if f == nil {
		f = map[string]any{}
	}
	f["path"] = rel
	return f
}

// Facts returns input.task_graph of pre_invocation: the graph on disk,
// {path, document} (or {path, problem, error} when it does not parse); nil
// when there is no graph file. A file DES cannot read (too large, not a
// regular file) is an error: the graph exists, and DES cannot judge against
// it.
func (g TaskGraph) Facts(root string) (map[string]any, error) {
	if g.File == "" {
		return nil, nil
	}
	if g.DiskFacts != nil {
		return g.DiskFacts(), nil
	}
	data, err := readBounded(filepath.Join(root, filepath.FromSlash(g.File)))
	if err != nil {
		return nil, fmt.Errorf("task graph %s: %w", g.File, err)
	}
	if data == nil {
		return nil, nil
	}
	f := g.writeFacts(g.File, data, nil)
	delete(f, "disk")
	return f, nil
}

// Registry is what Gate 1 learns of the subagents running now, for the
// concurrency limit (setting max_concurrent_agents): input.registry,
// {running, agents: [{agent_id, agent_type, started_at}]}. Package des fills
// it from internal/registry when the limit is set; nil means no limit, and
// the registry is not read.
type Registry func(ctx context.Context) (map[string]any, error)
