package claudecode

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"time"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/internal/gitexec"
	"github.com/deterministic-exec/des/internal/integrity"
)

// Handler decides Claude Code hook events with des. Build one with New; a
// Handler is cheap, holds no open files, and is safe for concurrent use
// (each event builds the des.Engine of its own project, lazily: an event
// des has nothing to say about compiles no policy).
type Handler struct {
	lookupEnv  func(string) (string, bool)
	environ    []string
	logger     *slog.Logger
	dir        string
	self       string // the client's /proc directory ("" this process's)
	cache      *Cache
	engineOpts []des.Option
	routes     routeTable
	// readWithin and eventWithin are the hook's deadlines, read once from
	// the environment (DES_HOOK_DEADLINE_MS) by New.
	readWithin  time.Duration
	eventWithin func(event string) time.Duration
}

// An Option configures a Handler.
type Option func(*Handler)

// WithEnv sets the hook's environment, which holds CLAUDE_PROJECT_DIR and
// des's settings (DES_*). The default is the process's (os.LookupEnv).
func WithEnv(lookup func(string) (string, bool)) Option {
	return func(h *Handler) { h.lookupEnv = lookup }
}

// WithEnviron sets the environment of the programs des runs for an event
// (git), as KEY=VALUE pairs. The default is the process's.
func WithEnviron(environ []string) Option {
	return func(h *Handler) { h.environ = slices.Clone(environ) }
}

// WithLogger sets where des logs what it did and why it had no opinion.
// The default discards the log.
func WithLogger(l *slog.Logger) Option {
	return func(h *Handler) { h.logger = l }
}

// WithWorkingDir sets the hook's working directory, the one a relative
// CLAUDE_PROJECT_DIR or cwd is taken from. The default is the process's.
func WithWorkingDir(dir string) Option {
	return func(h *Handler) { h.dir = dir }
}

// WithClientPID names the hook process an event came through when it is
// not this one (a server deciding for a client): its /proc view is the one
// the event's paths are written in, and the processes an agent's call
// leaves behind are found under it.
func WithClientPID(pid int) Option {
	return func(h *Handler) {
		if pid > 0 {
			h.self = "/proc/" + strconv.Itoa(pid)
		}
	}
}

// WithCache keeps compiled policies and the effect check's baselines in c
// between events, for a program that decides many (a server).
func WithCache(c *Cache) Option {
	return func(h *Handler) { h.cache = c }
}

// WithEngineOptions adds options to every des.Engine the Handler builds,
// after its own (root, environment, logger, lazy policies, attested trail).
func WithEngineOptions(opts ...des.Option) Option {
	return func(h *Handler) { h.engineOpts = append(h.engineOpts, opts...) }
}

// New returns a Handler.
func New(opts ...Option) *Handler {
	h := &Handler{lookupEnv: os.LookupEnv, routes: defaultRoutes()}
	for _, o := range opts {
		o(h)
	}
	if h.logger == nil {
		h.logger = slog.New(slog.DiscardHandler)
	}
	h.readWithin, h.eventWithin = deadlines(h.lookupEnv, h.logger)
	return h
}

// Cache is what a long-running program keeps between events: compiled
// policies (by their content) and the effect check's baselines, decoded.
// It is safe for concurrent use.
type Cache struct {
	policies  *des.PolicyCache
	baselines *integrity.BaselineCache
}

// policyCacheSize is how many compiled policy sets a Cache keeps: one per
// project and policy revision a user works on at once, with room to spare.
const policyCacheSize = 32

// NewCache returns an empty Cache.
func NewCache() *Cache {
	return &Cache{policies: des.NewPolicyCache(policyCacheSize), baselines: integrity.NewBaselineCache()}
}

// Handle decides one event: des's answer, or the zero Output where des has
// no opinion (an event or tool des does not handle included). It never
// fails: where des is in charge (DES markers, a guarded document), an
// internal error or running out of time denies with DES-INTERNAL;
// elsewhere it is logged and des has no opinion. Its deadline is the
// hook's (20 s for tool events, 50 s for SubagentStop, DES_HOOK_DEADLINE_MS
// when set), or ctx's when sooner.
func (h *Handler) Handle(ctx context.Context, ev *Event) Output {
	return h.handle(ctx, ev, time.Now())
}

// Run is the command hook: it reads one event (one JSON object, at most
// 8 MiB) from stdin, decides it, and writes the answer on stdout, or
// nothing. Whatever happens it returns: a bad event is logged and gets no
// opinion, and a hook that ran it exits 0 (Claude Code reads exit status 2
// as a block).
func (h *Handler) Run(ctx context.Context, stdin io.Reader, stdout io.Writer) {
	defer func() {
		if p := recover(); p != nil {
			h.logger.Error(fmt.Sprintf("hook: panic: %v; no opinion", p), "stack", string(debug.Stack()))
		}
	}()
	start := time.Now()
	ev, warnings, err := readEventWithin(ctx, stdin, h.readWithin)
	if err != nil {
		h.logger.Error("hook: no opinion: " + err.Error())
		return
	}
	for _, w := range warnings {
		h.logger.Warn("hook: event decoded with a mismatch", "event", ev.HookEventName, "detail", w)
	}
	out := h.handle(ctx, ev, start)
	if out.NoOpinion() {
		return
	}
	if _, err := out.WriteTo(stdout); err != nil {
		h.logger.Error("hook: no opinion: cannot write the response", "event", ev.HookEventName, "tool", ev.ToolName, "err", err)
	}
}

// handle is Handle with the deadline counted from start.
func (h *Handler) handle(ctx context.Context, ev *Event, start time.Time) Output {
	key, fn, ok := h.routes.lookup(ev)
	if !ok {
		return Output{} // fast path: des has no opinion, and builds nothing
	}
	within := h.eventWithin(ev.HookEventName)
	ctx, cancel := context.WithDeadline(ctx, start.Add(within))
	defer cancel()
	if h.environ != nil {
		ctx = gitexec.WithEnviron(ctx, h.environ)
	}
	e := h.env(hookRoot(h.lookupEnv, ev, h.dir), ev.HookEventName)
	h.logger.Debug("hook: routing", "event", key.event, "tool", key.tool, "root", e.root)
	out, err := outputOf(ev.HookEventName, e.callWithin(ctx, fn, ev, within))
	if err != nil {
		h.logger.Error("hook: no opinion: cannot write the response", "event", ev.HookEventName, "tool", ev.ToolName, "err", err)
		return Output{}
	}
	return out
}

// Engine returns the des.Engine the Handler builds for the project at
// root, as its hook events get it: a command line that answers for the
// hook (escalations, stale work) sees what the hook sees.
func (h *Handler) Engine(ctx context.Context, root string) (*des.Engine, error) {
	return h.env(root, "").engine(ctx)
}

// env is one event's view of the Handler.
func (h *Handler) env(root, event string) *hookEnv {
	e := &hookEnv{root: root, event: event, lookupEnv: h.lookupEnv, logger: h.logger, self: h.self, engineOpts: h.engineOpts}
	if h.cache != nil {
		e.baselines = h.cache.baselines
		e.engineOpts = append(slices.Clip(e.engineOpts), des.WithPolicyCache(h.cache.policies))
	}
	return e
}

// newEngine builds an engine with the hook's options and then the
// Handler's. When that fails with the Handler's options, it builds it
// without them: an engine from the cache compiles every policy at New,
// where a lazy one compiles only what the event needs, so a broken team
// policy costs an unrelated event nothing. Built as a hook process builds
// it, the engine fails (or not) exactly where it would there.
func newEngine(ctx context.Context, own, extra []des.Option) (*des.Engine, error) {
	if len(extra) == 0 {
		return des.New(ctx, own...)
	}
	if e, err := des.New(ctx, append(slices.Clip(own), extra...)...); err == nil {
		return e, nil
	}
	return des.New(ctx, own...)
}

// Output is des's answer to one event, in the form Claude Code reads from
// a command hook's stdout. The zero value is no opinion.
type Output struct {
	Decision           string              `json:"decision,omitempty"` // "block" (SubagentStop, PostToolUse)
	Reason             string              `json:"reason,omitempty"`
	SystemMessage      string              `json:"systemMessage,omitempty"` // shown to the user
	HookSpecificOutput *HookSpecificOutput `json:"hookSpecificOutput,omitempty"`
}

// HookSpecificOutput is the part of an Output for one hook event.
type HookSpecificOutput struct {
	HookEventName            string `json:"hookEventName"`
	PermissionDecision       string `json:"permissionDecision,omitempty"` // "deny" (PreToolUse); never "allow"
	PermissionDecisionReason string `json:"permissionDecisionReason,omitempty"`
	AdditionalContext        string `json:"additionalContext,omitempty"` // told to the model
}

// NoOpinion reports whether o is the zero Output: des lets the call go on
// without a word.
func (o Output) NoOpinion() bool {
	return o.Decision == "" && o.Reason == "" && o.SystemMessage == "" && o.HookSpecificOutput == nil
}

// WriteTo writes o as the command hook does: one JSON object and a newline,
// or nothing for no opinion. HTML characters are not escaped, so commands
// such as "a && b" stay readable.
func (o Output) WriteTo(w io.Writer) (int64, error) {
	if o.NoOpinion() {
		return 0, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(o); err != nil {
		return 0, err
	}
	n, err := w.Write(buf.Bytes())
	return int64(n), err
}
