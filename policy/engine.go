package policy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/util"

	builtin "github.com/deterministic-exec/des/rego"
)

// Option configures an Engine.
type Option func(*options)

type options struct {
	sources   []source
	overrides []override
	logger    *slog.Logger
	builtin   bool
	lazy      bool
}

type override struct {
	path  string
	value any
}

// WithDirs adds directories (or single .rego files) of team policies. Each
// must exist.
func WithDirs(dirs ...string) Option {
	return func(o *options) {
		for _, d := range dirs {
			o.sources = append(o.sources, source{name: d, path: d})
		}
	}
}

// WithDir adds one directory (or .rego file) of team policies, as WithDirs
// does, naming its files in errors and rule locations below name instead of
// dir: for instance the directory's path relative to a project root, so
// that messages read the same from any checkout and the same policies in
// two checkouts compile alike. It must exist.
func WithDir(dir, name string) Option {
	return func(o *options) {
		o.sources = append(o.sources, source{name: name, path: dir})
	}
}

// WithBundles adds OPA bundles: .tar.gz files built by `opa build`, or bundle
// directories. Signatures are not verified.
func WithBundles(paths ...string) Option {
	return func(o *options) {
		for _, p := range paths {
			o.sources = append(o.sources, source{name: p, path: p, bundle: true})
		}
	}
}

// WithFS adds the policies of a file system (for instance an embed.FS of a
// team's own policies), loaded from its root. The name appears in errors.
func WithFS(name string, fsys fs.FS) Option {
	return func(o *options) {
		o.sources = append(o.sources, source{name: name, fsys: fsys, path: "."})
	}
}

// WithLazyCompile defers parsing and compiling to each gate's first
// evaluation, which then parses and compiles only the gate's package and the
// packages its rules refer to. New still reads every source and fails on
// unreadable files or bad data, but a policy that does not parse or compile
// is reported by the first evaluation that needs it, and a broken policy of
// one gate does not stop another. For short-lived processes (a hook) that
// evaluate one gate.
func WithLazyCompile() Option { return func(o *options) { o.lazy = true } }

// WithData sets the document at a dotted path under data, replacing whatever
// the built-in bundle put there; des uses it for data.des.config. A team data
// file that sets a value at or below the path is an error. The value must
// marshal to JSON.
func WithData(path string, value any) Option {
	return func(o *options) { o.overrides = append(o.overrides, override{path, value}) }
}

// WithLogger sets the logger; the default discards.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// WithoutBuiltin leaves out the built-in bundle, for tests of a team's
// policies on their own.
func WithoutBuiltin() Option {
	return func(o *options) { o.builtin = false }
}

// Engine evaluates gates. It is safe for concurrent use.
type Engine struct {
	files  []*regoFile
	caps   *ast.Capabilities
	store  storage.Store
	data   map[string]any
	logger *slog.Logger

	parseMu sync.Mutex // guards parsing files and compiling their modules

	fullOnce sync.Once // the compiler of every module
	full     *compiled
	fullErr  error

	prepared map[Gate]*preparedGate
	lazy     bool
	reserved []string // the paths WithData set, which WithDataAt may replace
}

// compiled is a compiler and the catalogue of its modules.
type compiled struct {
	compiler  *ast.Compiler
	catOnce   sync.Once
	catalogue []Rule
	byCode    map[string]string // code → package, for Violation.Policy
}

type preparedGate struct {
	once  sync.Once
	query rego.PreparedEvalQuery
	comp  *compiled
	err   error
}

// New loads and compiles the policies. Compilation is strict; any parse or
// compile problem is returned as Errors, each with file:line:col.
func New(ctx context.Context, opts ...Option) (*Engine, error) {
	o := options{builtin: true}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	sources := o.sources
	if o.builtin {
		sources = append([]source{{name: "rego", fsys: builtin.FS(), path: "des", prefix: "des", base: true}}, sources...)
	}
	// What WithData sets, data files may not: the caller's value would
	// silently win over the file's.
	reserved := make([][]string, len(o.overrides))
	for i, ov := range o.overrides {
		reserved[i] = strings.Split(ov.path, ".")
	}
	l, err := load(sources, reserved)
	if err != nil {
		return nil, fmt.Errorf("load policies: %w", err)
	}
	for _, ov := range o.overrides {
		v := ov.value
		if err := util.RoundTrip(&v); err != nil {
			return nil, fmt.Errorf("set data.%s: %w", ov.path, err)
		}
		if err := setData(l.data, ov.path, v); err != nil {
			return nil, err
		}
	}

	e := &Engine{
		files:    l.files,
		caps:     Capabilities(),
		store:    inmem.NewFromObjectWithOpts(l.data, inmem.OptRoundTripOnWrite(false)),
		data:     l.data,
		logger:   o.logger,
		prepared: make(map[Gate]*preparedGate, len(Gates())),
		lazy:     o.lazy,
	}
	for _, ov := range o.overrides {
		e.reserved = append(e.reserved, ov.path)
	}
	for _, g := range Gates() {
		e.prepared[g] = &preparedGate{}
	}
	if !o.lazy {
		if _, err := e.compileAll(); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// Prepare prepares every gate's query now rather than at its first
// evaluation, compiling every policy first (also in an engine built
// WithLazyCompile). For long-lived processes that want every error and
// every cost at start.
func (e *Engine) Prepare(ctx context.Context) error {
	if _, err := e.compileAll(); err != nil {
		return err
	}
	for _, g := range Gates() {
		if _, err := e.prepare(ctx, g); err != nil {
			return err
		}
	}
	return nil
}

// WithDataAt returns an Engine that shares e's compiled policies, with the
// document at a dotted path that New's WithData set replaced by value, its
// gates prepared. Compiled policies do not depend on data, so this costs
// preparing the queries, not compiling: for a process that serves projects
// whose policies are the same and whose settings differ. e must not be lazy;
// e itself is unchanged.
func (e *Engine) WithDataAt(ctx context.Context, path string, value any) (*Engine, error) {
	if e.lazy {
		return nil, errors.New("policy: WithDataAt needs an engine compiled in full, not one built WithLazyCompile")
	}
	if !slices.Contains(e.reserved, path) {
		return nil, fmt.Errorf("policy: WithDataAt: data.%s was not set by WithData, so a team data file may set it too", path)
	}
	full, err := e.compileAll()
	if err != nil {
		return nil, err
	}
	if err := util.RoundTrip(&value); err != nil {
		return nil, fmt.Errorf("set data.%s: %w", path, err)
	}
	// The maps along the path are copied, the rest shared: the store only
	// reads them.
	data := maps.Clone(e.data)
	node := data
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := node[p].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("set data.%s: data.%s is not an object", path, p)
		}
		next = maps.Clone(next)
		node[p] = next
		node = next
	}
	node[parts[len(parts)-1]] = value
	d := &Engine{
		files:    e.files,
		caps:     e.caps,
		store:    inmem.NewFromObjectWithOpts(data, inmem.OptRoundTripOnWrite(false)),
		data:     data,
		logger:   e.logger,
		prepared: make(map[Gate]*preparedGate, len(Gates())),
		reserved: e.reserved,
		full:     full,
	}
	d.fullOnce.Do(func() {}) // compiled already
	for _, g := range Gates() {
		d.prepared[g] = &preparedGate{}
	}
	if err := d.Prepare(ctx); err != nil {
		return nil, err
	}
	return d, nil
}

// compileAll compiles every module once (strict).
func (e *Engine) compileAll() (*compiled, error) {
	e.fullOnce.Do(func() {
		e.parseMu.Lock()
		defer e.parseMu.Unlock()
		mods, err := parseAll(e.files)
		if err != nil {
			e.fullErr = fmt.Errorf("parse policies: %w", err)
			return
		}
		e.full, e.fullErr = e.compile(mods)
	})
	return e.full, e.fullErr
}

func (e *Engine) compile(mods map[string]*ast.Module) (*compiled, error) {
	ctx := context.Background()
	txn, err := e.store.NewTransaction(ctx)
	if err != nil {
		return nil, fmt.Errorf("compile policies: %w", err)
	}
	defer e.store.Abort(ctx, txn)
	// A rule at a path a data file sets would hide the data, as OPA
	// refuses too: a team rule `unwaivable := []` in des.exceptions
	// would undo the organisation's list.
	c := ast.NewCompiler().
		WithStrict(true).
		WithCapabilities(e.caps).
		WithEnablePrintStatements(false).
		WithUseTypeCheckAnnotations(true).
		WithPathConflictsCheck(storage.NonEmpty(ctx, e.store, txn))
	if c.Compile(mods); c.Failed() {
		return nil, fmt.Errorf("compile policies: %w", toErrors(c.Errors))
	}
	return &compiled{compiler: c}, nil
}

// compilerFor returns the compiler a gate runs on: the full one when it
// exists (eager engines), else one of the gate's own modules.
func (e *Engine) compilerFor(g Gate) (*compiled, error) {
	if !e.lazy {
		return e.compileAll()
	}
	// Compiling copies the parsed modules, and walking them (closure) can
	// sort their keys in place: both happen under the one lock.
	e.parseMu.Lock()
	defer e.parseMu.Unlock()
	mods, err := closure(e.files, g.Package())
	if err != nil {
		return nil, fmt.Errorf("parse policies of gate %s: %w", g, err)
	}
	return e.compile(mods)
}

// queryFor reads the three sets of a gate. Comprehensions keep the query
// defined when a set has no rules (a gate without exceptions, say).
func queryFor(g Gate) string {
	ref := "data." + g.Package()
	return fmt.Sprintf("deny := [x | some x in %[1]s.deny]; warn := [x | some x in %[1]s.warn]; exception := [x | some x in %[1]s.exception]; info := [x | x := %[1]s.info]", ref)
}

func (e *Engine) prepare(ctx context.Context, g Gate) (*preparedGate, error) {
	p, ok := e.prepared[g]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %v)", ErrUnknownGate, g, Gates())
	}
	p.once.Do(func() {
		if p.comp, p.err = e.compilerFor(g); p.err != nil {
			return
		}
		p.query, p.err = rego.New(
			rego.Query(queryFor(g)),
			rego.Compiler(p.comp.compiler),
			rego.Store(e.store),
			rego.StrictBuiltinErrors(true),
		).PrepareForEval(ctx)
		if p.err != nil {
			p.err = fmt.Errorf("prepare gate %s: %w", g, p.err)
		}
	})
	return p, p.err
}

// EvalOption configures one evaluation.
type EvalOption func(*evalOptions)

type evalOptions struct{ now time.Time }

// At sets the evaluation time that policies read with time.now_ns. Without
// it the engine uses time.Now, which makes the decision depend on the clock.
func At(t time.Time) EvalOption { return func(o *evalOptions) { o.now = t } }

// Eval evaluates gate g on input and returns its decision. input is a Go
// value that marshals to JSON (map[string]any is fastest), or an ast.Value.
// Evaluation stops when ctx is done. An error in a rule (a built-in error, a
// conflict) or a malformed deny, warn or exception is returned as the error,
// never as a violation: the caller applies its fail posture.
func (e *Engine) Eval(ctx context.Context, g Gate, input any, opts ...EvalOption) (Decision, error) {
	eo := evalOptions{}
	for _, opt := range opts {
		opt(&eo)
	}
	if eo.now.IsZero() {
		eo.now = time.Now()
	}
	p, err := e.prepare(ctx, g)
	if err != nil {
		return Decision{}, err
	}
	val, ok := input.(ast.Value)
	if !ok {
		if val, err = ast.InterfaceToValue(input); err != nil {
			return Decision{}, fmt.Errorf("gate %s: input: %w", g, err)
		}
	}
	rs, err := p.query.Eval(ctx, rego.EvalParsedInput(val), rego.EvalTime(eo.now))
	if err != nil {
		return Decision{}, fmt.Errorf("evaluate gate %s: %w", g, err)
	}
	if len(rs) != 1 {
		return Decision{}, fmt.Errorf("evaluate gate %s: %d results, want 1", g, len(rs))
	}
	return decide(p.comp, g, rs[0].Bindings)
}

func decide(c *compiled, g Gate, b rego.Vars) (Decision, error) {
	d := Decision{Gate: g}
	waive := map[string]bool{}
	for _, x := range asList(b["exception"]) {
		code, ok := x.(string)
		if !ok {
			return Decision{}, fmt.Errorf("gate %s: exception %v is not a code string: %w", g, x, ErrMalformedDecision)
		}
		waive[code] = true
	}
	// A violation that names a refused exception ("refused_exception":
	// code) takes that code out of the exception set for this decision:
	// the policy decided the exception does not hold (des.exceptions), so
	// the violation it would waive stands, and no waiver is recorded.
	for _, sev := range []Severity{Deny, Warn} {
		for _, x := range asList(b[string(sev)]) {
			if obj, ok := x.(map[string]any); ok {
				if code, ok := obj["refused_exception"].(string); ok {
					delete(waive, code)
				}
			}
		}
	}
	for _, set := range []struct {
		sev Severity
		dst *[]Violation
	}{{Deny, &d.Deny}, {Warn, &d.Warn}} {
		for _, x := range asList(b[string(set.sev)]) {
			v, err := violation(c, g, set.sev, x)
			if err != nil {
				return Decision{}, err
			}
			// A violation the policy marked "unwaivable": true stays
			// whatever the exception set says: the policy decided that
			// no team rule may waive it (des.exceptions).
			if waive[v.Code] && v.Details["unwaivable"] != true {
				d.Waived = append(d.Waived, v)
				continue
			}
			*set.dst = append(*set.dst, v)
		}
		sortViolations(*set.dst)
	}
	sortViolations(d.Waived)
	if info := asList(b["info"]); len(info) == 1 {
		obj, ok := info[0].(map[string]any)
		if !ok {
			return Decision{}, fmt.Errorf("gate %s: info %v is not an object: %w", g, info[0], ErrMalformedDecision)
		}
		d.Info = obj
	}
	return d, nil
}

func asList(x any) []any {
	l, _ := x.([]any)
	return l
}

func violation(c *compiled, g Gate, sev Severity, x any) (Violation, error) {
	obj, ok := x.(map[string]any)
	if !ok {
		return Violation{}, fmt.Errorf("gate %s: %s element %v is not an object: %w", g, sev, x, ErrMalformedDecision)
	}
	v := Violation{Severity: sev}
	for k, val := range obj {
		var ok bool
		switch k {
		case "code":
			v.Code, ok = val.(string)
		case "msg":
			v.Message, ok = val.(string)
		case "field":
			v.Field, ok = val.(string)
		case "recovery":
			v.Recovery, ok = stringList(val)
		default:
			if v.Details == nil {
				v.Details = map[string]any{}
			}
			v.Details[k], ok = val, true
		}
		if !ok {
			return Violation{}, fmt.Errorf("gate %s: %s element has a %q of the wrong type (%T): %w", g, sev, k, val, ErrMalformedDecision)
		}
	}
	if v.Code == "" || v.Message == "" {
		return Violation{}, fmt.Errorf("gate %s: %s element %v needs a non-empty \"code\" and \"msg\": %w", g, sev, obj, ErrMalformedDecision)
	}
	v.Policy = c.policyOf(v.Code)
	return v, nil
}

func stringList(x any) ([]string, bool) {
	l, ok := x.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, len(l))
	for i, s := range l {
		if out[i], ok = s.(string); !ok {
			return nil, false
		}
	}
	return out, true
}

// Data returns the document at a dotted path under data (for instance
// "des.transitions") as the bundles and overrides defined it, and whether it
// exists. Rules are not evaluated. The value is shared: do not modify it.
func (e *Engine) Data(path string) (any, bool) {
	var node any = e.data
	for _, p := range strings.Split(path, ".") {
		obj, ok := node.(map[string]any)
		if !ok {
			return nil, false
		}
		if node, ok = obj[p]; !ok {
			return nil, false
		}
	}
	return node, true
}
