package des

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/internal/statedir"
	"github.com/deterministic-exec/des/policy"
)

// Option configures an Engine.
type Option func(*options)

type options struct {
	root      string
	config    *Config
	lookupEnv func(string) (string, bool)
	dirs      []string
	bundles   []string
	fss       []namedFS
	auditDir  string
	clock     func() time.Time
	logger    *slog.Logger
	lazy      bool
	attest    bool   // WithAttestedTrail
	self      string // WithProcessDir
	writes    gate.Writes
	workflow  *gate.Workflow
	cache     *PolicyCache
	protect   []string // WithProtectedFiles
}

type namedFS struct {
	name string
	fsys fs.FS
}

// WithRoot sets the project root: where .des/ lives and what relative
// settings are resolved against. The default is the current directory.
func WithRoot(dir string) Option { return func(o *options) { o.root = dir } }

// WithConfig uses c instead of reading .des/config.json and the environment.
// It is validated like a loaded one.
func WithConfig(c Config) Option { return func(o *options) { o.config = &c } }

// WithEnv sets how environment variables are looked up (os.LookupEnv by
// default), so a caller can pass a fixed environment.
func WithEnv(lookup func(string) (string, bool)) Option {
	return func(o *options) { o.lookupEnv = lookup }
}

// WithPolicyDirs adds team policy directories to those of the settings.
func WithPolicyDirs(dirs ...string) Option {
	return func(o *options) { o.dirs = append(o.dirs, dirs...) }
}

// WithBundles adds OPA bundles (.tar.gz from `opa build`, or directories).
func WithBundles(paths ...string) Option {
	return func(o *options) { o.bundles = append(o.bundles, paths...) }
}

// WithPolicyFS adds the policies of a file system, such as an embed.FS.
func WithPolicyFS(name string, fsys fs.FS) Option {
	return func(o *options) { o.fss = append(o.fss, namedFS{name, fsys}) }
}

// WithAuditDir overrides the audit directory of the settings.
func WithAuditDir(dir string) Option { return func(o *options) { o.auditDir = dir } }

// WithClock sets the clock for evaluation times and audit timestamps
// (time.Now by default).
func WithClock(now func() time.Time) Option { return func(o *options) { o.clock = now } }

// WithLogger sets the logger; the default discards.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithWrites tells w of each file DES writes in the project (step
// rewrites, run records, pending records), before and after the write, so
// that a check of tool-call effects running at the same time takes them
// for DES's own (see gate.Writes).
func WithWrites(w gate.Writes) Option { return func(o *options) { o.writes = w } }

// WithLazyPolicies defers loading the policies to the first evaluation, and
// compiles for each gate only its own package and the packages it refers to
// (policy.WithLazyCompile). A policy error is then returned by the first
// evaluation that needs the policy. For short-lived processes, such as a
// hook, where most events need no policy and the rest need one gate.
func WithLazyPolicies() Option { return func(o *options) { o.lazy = true } }

// WithAttestedTrail makes this Engine start the audit trail's attestations
// (a file of the project's per-user state directory) when they have not
// started. From then on every Engine of the project records the lines it
// appends there, where it can (outside Claude Code's sandbox), and the
// gates take a confirmed phase move or the resolution of a Gate 2 failure
// only from a recorded line: sandboxed Bash may append to the trail,
// chained as well as DES's own lines, but cannot write the state directory.
// Claude Code's hook uses it: the agent it watches can append to the
// trail. Without any Engine that has it, a trail is read as it always was
// (made by hand, copied from another machine, written before the hook).
func WithAttestedTrail() Option { return func(o *options) { o.attest = true } }

// WithProtectedFiles protects files outside the project that run des, such
// as the hook's own binaries: a tool call that writes one is denied
// (DES-PROTECTED-PATH) like a write to .des/config.json, since replacing
// des's program switches des off as surely as removing its settings.
// Relative paths are taken against the project root.
func WithProtectedFiles(paths ...string) Option {
	return func(o *options) { o.protect = append(o.protect, paths...) }
}

// WithProcessDir sets the /proc directory of the process whose view the
// paths of tool calls are taken in: /proc/self and /proc/thread-self stand
// for it. The warm decision server passes its client's ("/proc/<pid>"), so
// that /proc/self/cwd is the hook's working directory, not the server's.
// The default is this process.
func WithProcessDir(dir string) Option { return func(o *options) { o.self = dir } }

// Engine is des, built once and shared. It is safe for concurrent use.
type Engine struct {
	root   string
	cfg    Config
	audit  *audit.Log
	now    func() time.Time
	logger *slog.Logger
	writes gate.Writes

	claudeDirs  []string // where subagent transcripts may be read, besides the root
	extraPolicy []string // policy directories and bundles a program added (WithPolicyDirs, WithBundles), absolute
	stateDir    string   // the project's per-user state directory (statedir.For), outside the project
	witnessDir  string   // the audit trail's witnesses (statedir.AuditWitness), outside the project
	protect     []string // files outside the project that run des (WithProtectedFiles), absolute
	self        string   // WithProcessDir: whose /proc/self paths are taken in

	workflow gate.Workflow // finds the multi-phase workflow state (phases.go)

	bundles []BundleStatus // the organisation's bundles in the policies (des_bundles.go)

	policyOpts []policy.Option
	policyData map[string]any // data.des.config, sent with each remote decision
	remote     *policy.Remote // the OPA server of opa_url; nil decides in process
	policyOnce sync.Once
	policy     *policy.Engine
	policyErr  error

	dlog decisionLog // des_decisionlog.go

	testRuns runsMemo // the attested test runs, read again when they change (workflow_evidence.go)
}

// New reads the settings, loads and compiles the policies and opens the audit
// trail. A bad setting is a *ConfigError; a policy that does not parse or
// compile is a policy.Errors with file:line:col. With WithPolicyCache the
// compiled policies come from the cache when their sources and the settings
// they read are as an entry's.
func New(ctx context.Context, opts ...Option) (*Engine, error) {
	o := options{lookupEnv: os.LookupEnv, clock: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	root := o.root
	if root == "" {
		root = "."
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("des: project root: %w", err)
	}

	var cfg Config
	if o.config != nil {
		cfg = *o.config
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
	} else if cfg, err = LoadConfig(root, o.lookupEnv); err != nil {
		return nil, err
	}
	if o.auditDir != "" {
		cfg.AuditDir = o.auditDir
	}

	// Policies compare paths as Go hands them (gate.ProjectPath): the
	// configured directories are put in the same form.
	seen := cfg
	seen.AuditDir = gate.ProjectPath(root, cfg.AuditDir)
	// Every place des loads rules or tables from is protected: the
	// configured policy directories, those and the bundles a program adds
	// (WithPolicyDirs, WithBundles), the key files that verify the
	// organisation's bundles, and the phase requirement files, which
	// decide what the phase gates require. An fs.FS (WithPolicyFS) is the
	// program's own.
	extra := slices.Concat(resolveAll(root, o.dirs), resolveAll(root, o.bundles), resolveAll(root, bundleKeyFiles(cfg)))
	seen.PolicyDirs = nil
	for _, d := range append(slices.Clone(cfg.PolicyDirs), extra...) {
		seen.PolicyDirs = append(seen.PolicyDirs, gate.ProjectPath(root, d))
	}
	seen.PhaseRequirementsFiles = make([]string, len(cfg.PhaseRequirementsFiles))
	for i, f := range cfg.PhaseRequirementsFiles {
		seen.PhaseRequirementsFiles[i] = gate.ProjectPath(root, f)
	}
	// DES's per-user state directory is protected too; policies see it
	// absolute, as ProjectPath gives a path outside the project.
	stateDir := statedir.For(root, o.lookupEnv)
	pdata := seen.policyData()
	pdata["state_dir"] = gate.ProjectPath(root, stateDir)
	// The audit witnesses sit beside it, shared by every project: removed
	// with the trail, the trail would verify as "not witnessed".
	witnessDir := statedir.AuditWitness(o.lookupEnv)
	pdata["witness_dir"] = gate.ProjectPath(root, witnessDir)
	protect := resolveAll(root, o.protect)
	protectedFiles := make([]string, len(protect))
	for i, f := range protect {
		protectedFiles[i] = gate.ProjectPath(root, f)
	}
	pdata["protected_files"] = protectedFiles
	popts := []policy.Option{policy.WithData("des.config", pdata)}
	if o.cache == nil {
		// A cached policy engine serves many Engines: it keeps no one's logger.
		popts = append(popts, policy.WithLogger(o.logger))
	}
	dirs, err := policyDirs(root, cfg.PolicyDirs, settingSource(root, o.lookupEnv, o.config != nil, "DES_POLICY_DIRS"), o.logger)
	if err != nil {
		return nil, err
	}
	dirs = append(dirs, resolveAll(root, o.dirs)...)
	named := policySources(root, dirs)
	orgFS, bundles, err := orgBundles(root, cfg, o.lookupEnv, o.clock(), o.cache)
	if err != nil {
		return nil, err
	}
	o.fss = append(orgFS, o.fss...)
	popts = append(popts, policy.WithBundles(resolveAll(root, o.bundles)...))
	for _, d := range named {
		popts = append(popts, policy.WithDir(d.path, d.name))
	}
	for _, f := range o.fss {
		popts = append(popts, policy.WithFS(f.name, f.fsys))
	}
	log, err := audit.Open(resolve(root, cfg.AuditDir), audit.WithRoot(root), audit.WithClock(o.clock), audit.WithLogger(o.logger),
		audit.WithRetention(cfg.AuditLogRetentionDays), audit.WithWitness(statedir.AuditWitness(o.lookupEnv)),
		audit.WithAttestations(statedir.Attestations(stateDir), o.attest))
	if err != nil {
		return nil, fmt.Errorf("des: %w", err)
	}
	if o.lazy && o.cache == nil {
		popts = append(popts, policy.WithLazyCompile())
	}
	e := &Engine{root: root, cfg: cfg, extraPolicy: extra, audit: log, now: o.clock, logger: o.logger, policyOpts: popts, writes: o.writes, stateDir: stateDir, witnessDir: witnessDir, protect: protect, bundles: bundles, self: o.self}
	if e.remote, err = newRemote(root, cfg, o.lookupEnv, o.config != nil, o.logger); err != nil {
		return nil, err
	}
	e.policyData = pdata
	e.claudeDirs = gate.ClaudeDirs(o.lookupEnv)
	if o.workflow != nil {
		e.workflow = *o.workflow
	} else {
		e.workflow = e.defaultWorkflow(o.lookupEnv)
	}
	if o.cache != nil {
		src, err := o.cache.sourcesKey(named, resolveAll(root, o.bundles), o.fss)
		if err != nil {
			return nil, fmt.Errorf("des: %w", err)
		}
		dk, err := dataKey(pdata)
		if err != nil {
			return nil, fmt.Errorf("des: settings for the policies: %w", err)
		}
		pe, err := o.cache.get(ctx, src+"/"+dk, src, func() (*policy.Engine, error) {
			pe, err := policy.New(ctx, popts...)
			if err == nil {
				err = pe.Prepare(ctx)
			}
			return pe, err
		}, func(base *policy.Engine) (*policy.Engine, error) {
			return base.WithDataAt(ctx, "des.config", pdata)
		})
		e.policyOnce.Do(func() {
			e.policy = pe
			if err != nil {
				e.policyErr = fmt.Errorf("des: %w", err)
			}
		})
		if e.policyErr != nil {
			return nil, e.policyErr
		}
		return e, nil
	}
	if !o.lazy {
		if _, err := e.Policy(ctx); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Policy returns the policy engine, loading and compiling the policies on
// first use when the Engine was built WithLazyPolicies.
func (e *Engine) Policy(ctx context.Context) (*policy.Engine, error) {
	e.policyOnce.Do(func() {
		e.policy, e.policyErr = policy.New(ctx, e.policyOpts...)
		if e.policyErr != nil {
			e.policyErr = fmt.Errorf("des: %w", e.policyErr)
		}
	})
	return e.policy, e.policyErr
}

// settingSource names where a setting checked after loading came from, as
// a ConfigError does for the others: the option, the environment variable
// (which wins over the file), else the settings file.
func settingSource(root string, lookupEnv func(string) (string, bool), fromOption bool, env string) string {
	if fromOption {
		return "WithConfig"
	}
	if v, ok := lookupEnv(env); ok && strings.TrimSpace(v) != "" {
		return env
	}
	return filepath.Join(root, ConfigFile)
}

// policyDirs resolves the configured policy directories. The default
// directory is optional; one the settings name must exist. source says
// where the setting came from, for the error.
func policyDirs(root string, dirs []string, source string, logger *slog.Logger) ([]string, error) {
	var out []string
	for _, d := range dirs {
		abs := resolve(root, d)
		info, err := os.Stat(abs)
		switch {
		case errors.Is(err, fs.ErrNotExist) && slices.Equal(dirs, DefaultConfig().PolicyDirs):
			logger.Debug("no team policy directory", "dir", abs)
			continue
		case err != nil:
			return nil, &ConfigError{Setting: "policy_dirs", Source: source, Value: d, Reason: "cannot use the directory: " + err.Error(), Err: err}
		case !info.IsDir():
			return nil, &ConfigError{Setting: "policy_dirs", Source: source, Value: d, Reason: "not a directory"}
		}
		out = append(out, abs)
	}
	return out, nil
}

// policySource is a directory (or file) of team policies and the name its
// files go by in messages and rule locations.
type policySource struct{ path, name string }

// policySources names each policy directory below root by its path from
// the root (".des/policies/team.rego:3: ..."), and any other by its
// absolute path: messages then read the same from every checkout, and a
// PolicyCache compiles the same policies in two checkouts once.
func policySources(root string, dirs []string) []policySource {
	out := make([]policySource, len(dirs))
	for i, d := range dirs {
		out[i] = policySource{path: d, name: d}
		if rel, err := filepath.Rel(root, d); err == nil && filepath.IsLocal(rel) {
			out[i].name = rel
		}
	}
	return out
}

func resolve(root, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(root, p)
}

func resolveAll(root string, ps []string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = resolve(root, p)
	}
	return out
}

// Root returns the absolute project root.
func (e *Engine) Root() string { return e.root }

// Config returns the settings in force.
func (e *Engine) Config() Config {
	c := e.cfg
	c.PolicyDirs = slices.Clone(c.PolicyDirs)
	c.GuardedStepFiles = slices.Clone(c.GuardedStepFiles)
	c.GuardedStateFiles = slices.Clone(c.GuardedStateFiles)
	c.PhaseRequirementsFiles = slices.Clone(c.PhaseRequirementsFiles)
	c.BundleURLs = slices.Clone(c.BundleURLs)
	c.DecisionLogMask = slices.Clone(c.DecisionLogMask)
	c.DecisionLogPushMask = slices.Clone(c.DecisionLogPushMask)
	return c
}

// Audit returns the audit trail the Engine writes to.
func (e *Engine) Audit() *audit.Log { return e.audit }

// Catalogue lists every code the loaded policies can yield.
func (e *Engine) Catalogue(ctx context.Context) ([]policy.Rule, error) {
	pe, err := e.Policy(ctx)
	if err != nil {
		return nil, err
	}
	return pe.Catalogue()
}

// Now returns the Engine clock's current time.
func (e *Engine) Now() time.Time { return e.now() }

// Evaluate evaluates a gate on an input document at the Engine's clock time,
// in process or, with opa_url set, on that OPA server (DecisionPoint).
// Each violation a gate's exception set waived is recorded in the audit trail
// as POLICY_EXCEPTION; a failure to record is returned with the decision.
func (e *Engine) Evaluate(ctx context.Context, gate policy.Gate, input any) (policy.Decision, error) {
	start := time.Now()
	d, err := e.decide(ctx, gate, input, e.now()) // in process, or on opa_url (des_remote.go)
	e.logDecision(ctx, gate, input, d, err, time.Since(start))
	if err != nil {
		return d, err
	}
	if len(d.Waived) == 0 {
		return d, nil
	}
	entries := make([]audit.Entry, len(d.Waived))
	for i, v := range d.Waived {
		entries[i] = audit.Entry{Event: audit.PolicyException, Fields: map[string]any{
			"gate": string(gate), "code": v.Code, "msg": v.Message, "policy": v.Policy,
		}}
	}
	if err := e.audit.Append(ctx, entries...); err != nil {
		return d, fmt.Errorf("des: record policy exceptions: %w", err)
	}
	return d, nil
}

// ToolUseGate returns the tool_use gate for this project: DES's directory, the
// configured policy and audit directories, git's hooks directory, DES's
// per-user state directory and the audit witnesses are protected, and so,
// in part, are Claude Code's project settings (DES's hook entries) and
// git's config (core.hooksPath): des.protected decides on facts the caller
// gives.
func (e *Engine) ToolUseGate() gate.ToolUse {
	protected := append(e.protectedDirs(), ".git/hooks", ".claude/settings.json", ".claude/settings.local.json", ".git/config")
	if e.stateDir != "" {
		protected = append(protected, e.stateDir)
	}
	if e.witnessDir != "" {
		protected = append(protected, e.witnessDir)
	}
	protected = append(protected, e.protect...)
	return gate.ToolUse{Root: e.root, Protected: protected, Audit: e.audit, Self: e.self}
}

// protectedDirs are the directories that never hold a step file and whose
// changes are always outside a step's scope.
func (e *Engine) protectedDirs() []string {
	dirs := append(slices.Concat(e.cfg.PolicyDirs, e.extraPolicy, e.cfg.PhaseRequirementsFiles), e.cfg.AuditDir)
	return dirs
}

// StateDir is DES's per-user state directory for this project (see
// internal/statedir); it may not exist yet.
func (e *Engine) StateDir() string { return e.stateDir }

// CheckToolUse runs the tool_use gate on a tool call about to write files.
// Calls that write none of DES's files are not evaluated (Result.Evaluated
// is false). An error means DES could not decide; the call concerned DES,
// so a caller should fail closed (see gate.Internal).
func (e *Engine) CheckToolUse(ctx context.Context, call gate.ToolCall) (gate.Result, error) {
	return e.ToolUseGate().Check(ctx, e, call)
}

// RunsDir is where DES records the invocations Gate 1 allowed, relative to
// the project root, so that Gate 2 can find a subagent's step. It is a copy
// for people: the gates read the records (Gate 1's runs, Gate 2's verdicts,
// subagent bindings, document writes waiting for PostToolUse) from DES's
// own copy in the project's per-user state directory. Claude Code's
// sandbox lets Bash write RunsDir, and a process a Bash call leaves in the
// background can rewrite a record there after the effect check; it cannot
// write the state directory. So a record in RunsDir that is not in the
// state directory, or differs from it, is not evidence.
const RunsDir = ".des/runs"

// PreInvocation runs Gate 1 on a subagent about to start (or, with
// inv.Tool gate.ToolSkill, a Skill call; see CheckSkill). A prompt without
// nWave DES markers, in a project where no multi-phase workflow state is
// found, where the prompt names no phase of an existing task graph and the
// concurrency limit does not apply (max_concurrent_agents unset, or a
// subagent's own call), gets no opinion (Result.Evaluated false) and costs
// no policy evaluation; routing markers (DES-PHASE, DES-TASK-PHASE) alone
// ask for no nWave validation. When Gate 1 allows a step, DES moves its
// task to IN_PROGRESS and records the invocation; an allowed delegation of
// a task graph phase is recorded too, for the wave sync. An error means
// DES could not decide; when Result.NWave, Result.Workflow or
// Result.Orchestration is set DES was in charge, and a caller should fail
// closed.
func (e *Engine) PreInvocation(ctx context.Context, inv gate.Invocation) (gate.InvocationResult, error) {
	g := gate.PreInvocation{
		Root:      e.root,
		Protected: e.protectedDirs(),
		Audit:     e.audit,
		Timeout:   time.Duration(e.cfg.ValidationTimeoutMS) * time.Millisecond,
		Now:       e.now,
		RunsDir:   filepath.Join(e.root, RunsDir),
		Writes:    e.writes,
		// Read back by Gate 2 from the state directory alone.
		EvidenceDir: statedir.Evidence(e.stateDir),
		Workflow:    e.workflow,
		Graph:       e.taskGraph(),
		Registry:    e.registryFacts(),
	}
	return g.Check(ctx, e, inv)
}

// SessionsDir is the subagent registry (internal/registry), relative to
// the project root: protected like the run records, and written only by DES.
const SessionsDir = ".des/sessions"

// DocumentWriteGate returns the write guard for this project: the guarded
// documents of the settings (guarded_step_files, guarded_state_files).
func (e *Engine) DocumentWriteGate() gate.DocumentWrite {
	return gate.DocumentWrite{
		Root:       e.root,
		StepGlobs:  slices.Clone(e.cfg.GuardedStepFiles),
		StateGlobs: slices.Clone(e.cfg.GuardedStateFiles),
		Audit:      e.audit,
		PendingDir: filepath.Join(statedir.Evidence(e.stateDir), "pending"),
		StateDir:   e.stateDir,
		Now:        e.now,
		Writes:     e.writes,
		Workflow:   e.workflow,
		Graph:      e.taskGraph(),
	}
}

// CheckWrite runs the write guard on a Write, Edit or MultiEdit call before
// it lands. Calls that write no guarded document are not evaluated
// (Result.Evaluated false). An error with a Result that was not evaluated
// means DES could not decide on a guarded document: fail closed.
func (e *Engine) CheckWrite(ctx context.Context, call gate.WriteCall) (gate.Result, error) {
	return e.DocumentWriteGate().Check(ctx, e, call)
}

// ConfirmWrite records the status changes of an allowed write once
// PostToolUse shows that it landed as allowed.
func (e *Engine) ConfirmWrite(ctx context.Context, toolUseID string) (bool, error) {
	return e.DocumentWriteGate().Confirm(ctx, toolUseID)
}

// ConfirmWriteResult is ConfirmWrite, saying why a pending step write was
// not confirmed (the file holds another JSON value than the write allowed),
// for the caller to tell the user and the agent at once.
func (e *Engine) ConfirmWriteResult(ctx context.Context, toolUseID string) (gate.Confirmation, error) {
	return e.DocumentWriteGate().ConfirmResult(ctx, toolUseID)
}

// CheckBash runs the tool_use gate on a Bash command about to run: writes
// to guarded documents (DES-STATE-BASH-WRITE) and to DES's own files
// (DES-PROTECTED-PATH). A command that writes none of them is not
// evaluated. An error means DES could not decide on a command that
// concerned it: fail closed.
func (e *Engine) CheckBash(ctx context.Context, call gate.BashCall) (gate.Result, error) {
	return e.ToolUseGate().CheckBash(ctx, e, e.DocumentWriteGate(), call)
}
