package claudecode

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/internal/integrity"
	"github.com/deterministic-exec/des/internal/program"
	"github.com/deterministic-exec/des/internal/statedir"
)

// handlerFunc handles one routed event. It returns the response to render;
// it never writes to stdout itself.
type handlerFunc func(ctx context.Context, h *hookEnv, ev *Event) response

// routeKey selects a handler: the hook event and, for tool events, the tool.
// Events without a tool use tool "".
type routeKey struct{ event, tool string }

type routeTable map[routeKey]handlerFunc

// defaultRoutes returns the routes of the hook events des handles
// (docs/reference.md, "Hook events"). It builds a new table on
// each call so that no package state is ever shared or mutated.
func defaultRoutes() routeTable {
	return routeTable{
		{eventPreToolUse, toolAgent}:            preToolUseSubagent,
		{eventPreToolUse, toolTask}:             preToolUseSubagent,
		{eventPreToolUse, toolSkill}:            preToolUseSkill,
		{eventPreToolUse, toolWrite}:            preToolUseWrite,
		{eventPreToolUse, toolEdit}:             preToolUseWrite,
		{eventPreToolUse, toolMultiEdit}:        preToolUseWrite,
		{eventPreToolUse, toolBash}:             preToolUseBash,
		{eventPostToolUse, toolWrite}:           postToolUseWrite,
		{eventPostToolUse, toolEdit}:            postToolUseWrite,
		{eventPostToolUse, toolMultiEdit}:       postToolUseWrite,
		{eventPostToolUse, toolAgent}:           postToolUseSubagent,
		{eventPostToolUse, toolTask}:            postToolUseSubagent,
		{eventPostToolUse, toolAskUserQuestion}: postToolUseQuestion,
		{eventSubagentStop, ""}:                 subagentStop,
		{eventSubagentStart, ""}:                subagentStart,
		{eventUserPromptSubmit, ""}:             userPromptSubmit,
		{eventSessionStart, ""}:                 sessionStart,

		// Tools that write files DES cannot read ahead of time: their effect
		// is checked after they run (internal/integrity).
		{eventPreToolUse, toolNotebook}:         preToolUseNotebook,
		{eventPreToolUse, toolMCP}:              preToolUseMCP,
		{eventPostToolUse, toolBash}:            postToolUseBash,
		{eventPostToolUse, toolNotebook}:        postToolUseEffects,
		{eventPostToolUse, toolMCP}:             postToolUseEffects,
		{eventPostToolUseFailure, toolBash}:     postToolUseBash,
		{eventPostToolUseFailure, toolNotebook}: postToolUseEffects,
		{eventPostToolUseFailure, toolMCP}:      postToolUseEffects,
		{eventPostToolBatch, ""}:                postToolBatch,
	}
}

// lookup finds the handler for ev: first by event and tool, then by event
// alone (SubagentStop carries no tool).
func (t routeTable) lookup(ev *Event) (routeKey, handlerFunc, bool) {
	k := routeKey{ev.HookEventName, ev.ToolName}
	if fn, ok := t[k]; ok {
		return k, fn, true
	}
	if strings.HasPrefix(ev.ToolName, "mcp__") {
		if fn, ok := t[routeKey{ev.HookEventName, toolMCP}]; ok {
			return routeKey{ev.HookEventName, toolMCP}, fn, true
		}
	}
	k = routeKey{ev.HookEventName, ""}
	fn, ok := t[k]
	return k, fn, ok
}

// hookEnv is what a handler gets besides the event: where the project is,
// the environment, a logger, and the DES engine, built on first use so that
// events DES has nothing to say about never pay for compiling policies.
type hookEnv struct {
	root      string
	event     string // hook_event_name being handled, for the fail posture
	lookupEnv func(string) (string, bool)
	logger    *slog.Logger

	required atomic.Bool // DES validation is required for this event

	engineOnce sync.Once
	eng        *des.Engine
	engErr     error
	engineOpts []des.Option // the Handler's, after the hook's own
	// newEngine, when set, builds the engine instead (tests).
	newEngine func(ctx context.Context, opts ...des.Option) (*des.Engine, error)

	checkerOnce sync.Once
	chk         *integrity.Checker // nil when the project has no directory
	exe         string             // this executable, to tell DES's hook entries
	baselines   *integrity.BaselineCache
	self        string // /proc/self in the event's paths is this directory ("" this process's)

	// refVerdicts keeps the judgment of a call's ref moves (by repository
	// and moves): the effect check asks it to trust HEAD, then the ref
	// check acts on it, judged and recorded once.
	refVerdicts map[string]refVerdict
}

type refVerdict struct {
	reason string
	err    error
}

// engine returns the DES engine, building it on the first call. The result,
// error included, is kept: one hook process handles one event, and a bad
// setting does not heal between two calls.
func (h *hookEnv) engine(ctx context.Context) (*des.Engine, error) {
	h.engineOnce.Do(func() {
		// Lazy: a handler that finds nothing for DES to judge compiles no policy.
		// The trail is attested: the agent the hook watches may append
		// to it (sandboxed Bash, for the pre-commit hook).
		opts := []des.Option{des.WithRoot(h.root), des.WithEnv(h.lookupEnv), des.WithLogger(h.logger), des.WithLazyPolicies(), des.WithAttestedTrail(),
			des.WithProtectedFiles(h.binaries()...), des.WithProcessDir(h.self)}
		if c := h.checker(); c != nil {
			// DES's own writes are announced, so that another call's effect
			// check running meanwhile keeps them.
			opts = append(opts, des.WithWrites(c))
		}
		if h.newEngine != nil {
			h.eng, h.engErr = h.newEngine(ctx, opts...)
			return
		}
		h.eng, h.engErr = newEngine(ctx, opts, h.engineOpts)
	})
	return h.eng, h.engErr
}

// binaries are the programs that run des for this event: the client
// Claude Code started (DES_CLIENT_PATH), des-engine beside it, and this
// executable. Replacing one switches des off.
// clientPID is the pid of the process the event came through: this one, or
// the warm server's client (its /proc directory is h.self).
func (h *hookEnv) clientPID() int {
	if pid, err := strconv.Atoi(strings.TrimPrefix(h.self, "/proc/")); err == nil && pid > 0 {
		return pid
	}
	return os.Getpid()
}

func (h *hookEnv) binaries() []string { return program.Binaries(h.lookupEnv) }

// requireValidation records that DES validation is required for this event
// (DES markers found, a guarded document written). From then on a panic in
// the handler fails closed, as an internal error would.
func (h *hookEnv) requireValidation() { h.required.Store(true) }

// validationRequired reports whether requireValidation was called.
func (h *hookEnv) validationRequired() bool { return h.required.Load() }

// call runs a handler, turning a panic into the fail posture of an internal
// error: deny where validation was required, no opinion elsewhere.
func (h *hookEnv) call(ctx context.Context, fn handlerFunc, ev *Event) (r response) {
	defer func() {
		if p := recover(); p != nil {
			h.logger.Error(fmt.Sprintf("hook: panic in the %s handler: %v", h.event, p), "stack", string(debug.Stack()))
			r = h.internalError(h.validationRequired(), fmt.Errorf("panic in the %s handler: %v", h.event, p))
		}
	}()
	if ev.HookEventName == eventPreToolUse && ev.AgentID != "" {
		h.bindAgent(ctx, ev)
	}
	return fn(ctx, h, ev)
}

// bindAgent ties a subagent to the run Gate 1 recorded, at its first tool
// call, before the call could touch its transcript (gate.SubagentStop.Bind).
// It needs no settings; a failure only loses the binding, and Gate 2 falls
// back on the other ways to find the run.
func (h *hookEnv) bindAgent(ctx context.Context, ev *Event) {
	g := gate.SubagentStop{Root: h.root, RunsDir: filepath.Join(h.root, des.RunsDir), EvidenceDir: statedir.Evidence(statedir.For(h.root, h.lookupEnv)), ClaudeDirs: gate.ClaudeDirs(h.lookupEnv)}
	if err := g.Bind(ctx, ev.AgentID, ev.TranscriptPath); err != nil {
		h.logger.Info("hook: the subagent is not bound to a run", "agent_id", ev.AgentID, "err", err)
	}
}

// Deadlines of one hook event, well below the timeouts `des-hook settings`
// gives Claude Code (30 s for tool events, 60 s for SubagentStop): a hook
// that Claude Code times out does not block, so DES must answer first. The
// deadline starts when the hook starts and covers reading stdin; every
// wait of the handler (locks, git, a transcript not flushed yet) ends with
// it, and where DES is in charge running out of time is DES-INTERNAL naming
// what it waited on. DES_HOOK_DEADLINE_MS replaces both.
const (
	toolDeadline = 20 * time.Second
	stopDeadline = 50 * time.Second
	// deadlineGrace is how long after the deadline the hook still waits
	// for a handler to report, before answering without it.
	deadlineGrace = time.Second
	deadlineEnv   = "DES_HOOK_DEADLINE_MS"
)

// deadlines returns the deadline of the stdin read and of an event of the
// given name, both counted from the hook's start.
func deadlines(lookupEnv func(string) (string, bool), logger *slog.Logger) (read time.Duration, event func(name string) time.Duration) {
	if raw, ok := lookupEnv(deadlineEnv); ok && strings.TrimSpace(raw) != "" {
		ms, err := strconv.Atoi(strings.TrimSpace(raw))
		if err == nil && ms > 0 && ms <= int(stopDeadline/time.Millisecond) {
			d := time.Duration(ms) * time.Millisecond
			return d, func(string) time.Duration { return d }
		}
		logger.Warn(deadlineEnv+" is not a number of milliseconds from 1 to 50000; using the defaults", "value", raw)
	}
	return toolDeadline, func(name string) time.Duration {
		if name == eventSubagentStop {
			return stopDeadline
		}
		return toolDeadline
	}
}

// callWithin runs the handler under ctx and answers without it when it has
// not returned deadlineGrace after ctx ends: every wait in des honours ctx,
// and this is the net under one that would not. The handler then goes on
// in the background until the process exits, its response unused.
func (h *hookEnv) callWithin(ctx context.Context, fn handlerFunc, ev *Event, within time.Duration) response {
	done := make(chan response, 1)
	go func() { done <- h.call(ctx, fn, ev) }()
	select {
	case r := <-done:
		return r
	case <-ctx.Done():
	}
	t := time.NewTimer(deadlineGrace)
	defer t.Stop()
	select {
	case r := <-done:
		return r
	case <-t.C:
		return h.internalError(h.validationRequired(), fmt.Errorf("the %s handler did not finish within the hook's deadline of %v: %w", h.event, within, context.Cause(ctx)))
	}
}

// readEventWithin is readEvent bounded by d: a writer that never closes
// stdin must not hold the hook past Claude Code's timeout. Before the event
// is read DES cannot be in charge, so running out of time is no opinion.
func readEventWithin(ctx context.Context, r io.Reader, d time.Duration) (*Event, []string, error) {
	type read struct {
		ev       *Event
		warnings []string
		err      error
	}
	done := make(chan read, 1)
	go func() {
		ev, w, err := readEvent(r)
		done <- read{ev, w, err}
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case x := <-done:
		return x.ev, x.warnings, x.err
	case <-t.C:
		return nil, nil, fmt.Errorf("read stdin: the event was not complete (stdin not closed) within %v", d)
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("read stdin: %w", ctx.Err())
	}
}

// hookRoot is the project root in hook mode (docs/reference.md, "Hook
// events"): CLAUDE_PROJECT_DIR, else the event's cwd, else the current
// directory. cwd, when set, is the current directory relative paths are
// taken from (the client's, in the warm server).
func hookRoot(lookupEnv func(string) (string, bool), ev *Event, cwd string) string {
	root, ok := lookupEnv("CLAUDE_PROJECT_DIR")
	if !ok || root == "" {
		root = ev.Cwd
	}
	if root == "" {
		root = "."
	}
	if cwd != "" && !filepath.IsAbs(root) {
		root = filepath.Join(cwd, root)
	}
	if abs, err := filepath.Abs(root); err == nil {
		return abs
	}
	return root
}
