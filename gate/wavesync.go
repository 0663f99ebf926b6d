package gate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/internal/fileio"
)

// Wave sync: when the subagent started for a task graph phase stops, DES
// itself records the outcome in the graph (internal/taskgraph.Sync, one
// locked, atomic write) and audits it as TASK_GRAPH_UPDATED. There is no
// decision to make: the spec says what the outcome is, and Go carries it
// out.

// GraphUpdate is what one sync changed in the graph, as the caller's Sync
// reports it.
type GraphUpdate struct {
	// Changed is false when the graph already said so (a repeated stop) or
	// does not hold the phase: nothing was written or audited.
	Changed bool
	// Status is the phase's new status (completed or failed).
	Status string
	// Fields are added to the TASK_GRAPH_UPDATED entry (the verified
	// phase sent back and its retries, the wave moved from and to, ...).
	Fields map[string]any
}

// WaveSync finds the task phase of a stopped subagent and has the graph
// updated.
type WaveSync struct {
	Stop  SubagentStop // finds Gate 1's record and the transcript (RunsDir, ClaudeDirs, Root)
	Graph TaskGraph
	Audit *audit.Log // nil records nothing
	Now   func() time.Time
	// Sync updates the graph for phase: failed when Gate 2 failed the
	// step, or when phase is a verification phase whose last message holds
	// a failing verdict (the caller reads the graph for the type). It must
	// tell Writes of its write so that the effect check keeps it.
	Sync func(ctx context.Context, phase string, gate2Failed bool, lastMessage string, now time.Time) (GraphUpdate, error)
}

// WaveSyncResult is what the wave sync did.
type WaveSyncResult struct {
	// Phase is the task phase the subagent ran, "" when it ran none (or
	// there is no graph): nothing was done.
	Phase string
	// Found tells how the phase was found: "record" (Gate 1's record of
	// the invocation) or "transcript" (the prompt itself).
	Found  string
	Update GraphUpdate
}

// Run syncs the graph after a stop. gate2 is Gate 2's result on the same
// stop (nil when it did not run); lastMessage is the event's
// last_assistant_message ("" reads the transcript's last assistant text).
// A stop Gate 2 sends back to work (block) is not the end of the phase:
// nothing is synced. An error means the graph exists and the subagent ran
// one of its phases, but DES could not record the outcome.
func (w WaveSync) Run(ctx context.Context, s Stop, lastMessage string, gate2 *StopResult) (WaveSyncResult, error) {
	var res WaveSyncResult
	if w.Graph.File == "" || w.Sync == nil {
		return res, nil
	}
	if _, err := os.Lstat(filepath.Join(w.Stop.Root, filepath.FromSlash(w.Graph.File))); errors.Is(err, fs.ErrNotExist) {
		return res, nil // no graph: nothing to sync, and no transcript is read
	}
	res.Phase, res.Found = w.Stop.TaskPhase(ctx, s, w.Graph.PhaseID)
	if res.Phase == "" {
		return res, nil
	}
	if gate2 != nil && gate2.Action == StopActionBlock {
		return res, nil // the subagent goes back to work: its phase has not ended
	}
	if lastMessage == "" {
		if path, err := w.Stop.transcript(s.TranscriptPath); err == nil {
			lastMessage, _ = LastAssistantText(path)
		}
	}
	failed := gate2 != nil && gate2.Denied()
	now := w.now()
	upd, err := w.Sync(ctx, res.Phase, failed, lastMessage, now)
	res.Update = upd
	if err != nil {
		return res, fmt.Errorf("wave sync of phase %s in %s: %w", res.Phase, w.Graph.File, err)
	}
	if !upd.Changed || w.Audit == nil {
		return res, nil
	}
	fields := map[string]any{
		"task_graph": w.Graph.File, "phase": res.Phase, "status": upd.Status, "found": res.Found,
		"gate2_failed": failed, "agent_id": s.AgentID, "agent_type": s.AgentType, "session_id": s.SessionID,
	}
	if s.ToolUseID != "" {
		fields["tool_use_id"] = s.ToolUseID
	}
	for k, v := range upd.Fields {
		fields[k] = v
	}
	if err := w.Audit.Append(ctx, audit.Entry{Time: now, Event: audit.TaskGraphUpdated, Fields: fields}); err != nil {
		return res, fmt.Errorf("wave sync of phase %s: %w: %w", res.Phase, ErrNotRecorded, err)
	}
	return res, nil
}

func (w WaveSync) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

// TaskPhase finds the task graph phase a stopped subagent ran: first from
// Gate 1's record of its invocation (found by the Agent/Task call's id, from
// the meta file beside the transcript or the binding of its first tool
// call, else by the hash of the transcript's prompt), else from the
// transcript's prompt itself (phaseID). "" when neither names one.
func (g SubagentStop) TaskPhase(ctx context.Context, s Stop, phaseID func(string) (string, bool)) (phase, found string) {
	transcript, terr := g.transcript(s.TranscriptPath)
	id := s.ToolUseID
	if id == "" && terr == nil {
		id = metaToolUseID(transcript)
	}
	if id == "" {
		id = g.boundToolUseID(s.AgentID)
	}
	if r := g.readRun(id); r != nil && r.TaskPhase != "" {
		return r.TaskPhase, "record"
	}
	if terr != nil {
		return "", ""
	}
	wait := g.TranscriptWait
	if wait == 0 {
		wait = 200 * time.Millisecond
	}
	prompt, err := readTranscriptPrompt(ctx, transcript, wait)
	if err != nil {
		return "", ""
	}
	if r := g.readRun("prompt-" + promptKey(prompt)); r != nil && r.TaskPhase != "" {
		return r.TaskPhase, "record"
	}
	if phaseID != nil {
		if p, ok := phaseID(prompt); ok {
			return p, "transcript"
		}
	}
	return "", ""
}

// maxTranscriptTail is how much of the end of a transcript is read for the
// last assistant message: the verdict is at the end, and a transcript can
// be hundreds of megabytes.
const maxTranscriptTail = 4 << 20

// LastAssistantText returns the text of the last assistant message of a
// transcript (its text blocks joined), read from the last 4 MiB of the
// file; "" when there is none there.
func LastAssistantText(path string) (string, error) {
	f, fi, err := fileio.OpenRegular(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	start := fi.Size() - maxTranscriptTail
	if start > 0 {
		if _, err := f.Seek(start, io.SeekStart); err != nil {
			return "", err
		}
	}
	r := bufio.NewReaderSize(f, 64<<10)
	if start > 0 {
		if _, err := r.ReadBytes('\n'); err != nil { // a partial line
			return "", nil
		}
	}
	var last string
	for {
		line, err := readLine(r)
		if err != nil {
			break // io.EOF, or a line too long to be a message DES looks at
		}
		if !bytes.Contains(line, []byte(`"assistant"`)) {
			continue
		}
		var l struct {
			Type    string `json:"type"`
			Message *struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if json.Unmarshal(line, &l) != nil || l.Message == nil || (l.Type != "assistant" && l.Message.Role != "assistant") {
			continue
		}
		if text, err := contentText(l.Message.Content); err == nil && text != "" {
			last = text
		}
	}
	return last, nil
}
