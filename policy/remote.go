package policy

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"

	builtin "github.com/deterministic-exec/des/rego"
	"github.com/open-policy-agent/opa/v1/rego"
)

// Evaluator decides gates: an [Engine] in process, or a [Remote] OPA server.
type Evaluator interface {
	Eval(ctx context.Context, g Gate, input any, opts ...EvalOption) (Decision, error)
}

var (
	_ Evaluator = (*Engine)(nil)
	_ Evaluator = (*Remote)(nil)
)

// ErrUndefinedGate is wrapped by [Remote.Eval] when the OPA server has no
// document for the gate: des's policies are not loaded into it.
var ErrUndefinedGate = errors.New("gate undefined on the OPA server")

// ErrBuiltinMismatch is wrapped by [Remote.Eval] when the OPA server does not
// run this des's built-in policies: the gate reports no builtin_revision
// (the organisation's rules loaded without des's), or another revision
// (another des release's). The facts a des gathers are what its own
// policies read, so a decision made on other policies is none.
var ErrBuiltinMismatch = errors.New("the OPA server does not run this des's built-in policies")

// RemoteError is what [Remote.Eval] returns when it gets no decision: the
// server could not be reached or did not answer in time, answered with an
// HTTP error, or answered something that is not a decision. Err is the
// cause (a net or context error, [ErrUndefinedGate], [ErrMalformedDecision],
// a JSON error).
type RemoteError struct {
	URL     string // the request URL, without query
	Gate    Gate
	Status  int    // the HTTP status; 0 when there was no response
	Code    string // OPA's error code from its JSON error body, e.g. "internal_error"
	Message string // OPA's error message
	Err     error
}

func (e *RemoteError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "OPA server: POST %s", e.URL)
	if e.Status != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.Status)
	}
	if e.Code != "" || e.Message != "" {
		fmt.Fprintf(&b, ": %s", strings.TrimPrefix(e.Code+": "+e.Message, ": "))
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

func (e *RemoteError) Unwrap() error { return e.Err }

// RemoteOption configures a Remote.
type RemoteOption func(*remoteOptions)

type remoteOptions struct {
	client   *http.Client
	roots    *x509.CertPool
	token    func(context.Context) (string, error)
	timeout  time.Duration
	logger   *slog.Logger
	policyOf func(code string) string
}

// WithHTTPClient sends the requests with c (its transport, proxy and
// redirects); WithRootCAs is then ignored.
func WithHTTPClient(c *http.Client) RemoteOption { return func(o *remoteOptions) { o.client = c } }

// WithRootCAs trusts exactly the certificates of pool for an https server
// (give it the system pool with a private CA added).
func WithRootCAs(pool *x509.CertPool) RemoteOption { return func(o *remoteOptions) { o.roots = pool } }

// WithToken sends the token that source returns as "Authorization: Bearer",
// asking for it at each request so that a rotated token is used; an empty
// token sends no header.
func WithToken(source func(context.Context) (string, error)) RemoteOption {
	return func(o *remoteOptions) { o.token = source }
}

// WithTimeout bounds each request (2s by default); the caller's context
// bounds it too.
func WithTimeout(d time.Duration) RemoteOption { return func(o *remoteOptions) { o.timeout = d } }

// WithRemoteLogger sets the logger; the default discards.
func WithRemoteLogger(l *slog.Logger) RemoteOption { return func(o *remoteOptions) { o.logger = l } }

// WithCatalogue names [Violation.Policy] from the catalogue of a local
// engine (e's policies, which should be the server's). Without it Policy is
// empty. e compiles every policy on the first decision that has a
// violation, also when built WithLazyCompile.
func WithCatalogue(e *Engine) RemoteOption {
	return func(o *remoteOptions) {
		o.policyOf = func(code string) string {
			c, err := e.compileAll()
			if err != nil {
				return ""
			}
			return c.policyOf(code)
		}
	}
}

// Remote asks an OPA server for each gate decision through OPA's REST data
// API: POST <base>/v1/data/des/gates/<gate> with {"input": ...}. The server
// must have des's policies loaded (`opa run --server rego/ <team dirs>`).
// It is safe for concurrent use.
//
// The decision is built as [Engine.Eval] builds it (same sorting, waivers,
// shape checks), from the server's policies and data, with its built-in
// errors strict. Evaluation happens at the server's clock: the [At] option
// is ignored. Anything short of a decision is a *[RemoteError].
type Remote struct {
	base     string
	client   *http.Client // WithHTTPClient's, redirects not followed
	token    func(context.Context) (string, error)
	timeout  time.Duration
	logger   *slog.Logger
	policyOf func(string) string
}

// NewRemote returns an evaluator for the OPA server at baseURL (http or
// https, for instance "https://opa.example.com:8181"; a path prefix is
// kept). It sends nothing until the first Eval.
func NewRemote(baseURL string, opts ...RemoteOption) (*Remote, error) {
	u, err := url.Parse(baseURL)
	switch {
	case err != nil:
		return nil, fmt.Errorf("policy: OPA server URL %q: %w", baseURL, err)
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		return nil, fmt.Errorf("policy: OPA server URL %q: want http:// or https:// and a host", baseURL)
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("policy: OPA server URL %q: want no query or fragment; the gate path is appended", baseURL)
	}
	o := remoteOptions{timeout: 2 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		if o.roots != nil {
			tr.TLSClientConfig = &tls.Config{RootCAs: o.roots, MinVersion: tls.VersionTLS12}
		}
		o.client = &http.Client{Transport: tr}
	}
	// Redirects are answered, not followed: followed, a 301 or 302 turns
	// the POST into a GET without the input, which OPA answers with the
	// gate evaluated on no input: no deny, an allow.
	noRedirect := *o.client
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Remote{
		base:     strings.TrimRight(u.String(), "/"),
		client:   &noRedirect,
		token:    o.token,
		timeout:  o.timeout,
		logger:   o.logger,
		policyOf: o.policyOf,
	}, nil
}

// URL returns the server's base URL.
func (r *Remote) URL() string { return r.base }

// maxResponse bounds what a decision may weigh: a server answering more is
// not answering a gate.
const maxResponse = 16 << 20

// Eval asks the server for gate g's decision on input, a Go value that
// marshals to JSON or an ast.Value.
func (r *Remote) Eval(ctx context.Context, g Gate, input any, _ ...EvalOption) (Decision, error) {
	if !slices.Contains(Gates(), g) {
		return Decision{}, fmt.Errorf("%w %q (known: %v)", ErrUnknownGate, g, Gates())
	}
	endpoint := r.base + "/v1/data/des/gates/" + string(g)
	fail := func(err error) (Decision, error) {
		return Decision{}, &RemoteError{URL: endpoint, Gate: g, Err: err}
	}
	// Through OPA's values first: an input may hold ast.Values (Go builds
	// step documents so), which encoding/json would write as OPA's AST.
	val, ok := input.(ast.Value)
	if !ok {
		var err error
		if val, err = ast.InterfaceToValue(input); err != nil {
			return Decision{}, fmt.Errorf("gate %s: input: %w", g, err)
		}
	}
	doc, err := ast.JSON(val)
	if err != nil {
		return Decision{}, fmt.Errorf("gate %s: input: %w", g, err)
	}
	body, err := json.Marshal(map[string]any{"input": doc})
	if err != nil {
		return Decision{}, fmt.Errorf("gate %s: input: %w", g, err)
	}
	parent := ctx
	if r.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.timeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+"?strict-builtin-errors=true", bytes.NewReader(body))
	if err != nil {
		return fail(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if r.token != nil {
		tok, err := r.token(ctx)
		if err != nil {
			return fail(fmt.Errorf("bearer token: %w", err))
		}
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
	}
	start := time.Now()
	resp, err := r.client.Do(req)
	if err != nil {
		switch {
		case parent.Err() != nil:
			err = fmt.Errorf("the caller stopped waiting: %w", err)
		case ctx.Err() != nil:
			err = fmt.Errorf("no answer within %v: %w", r.timeout, err)
		}
		return fail(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return fail(fmt.Errorf("read the answer: %w", err))
	}
	if len(raw) > maxResponse {
		return fail(fmt.Errorf("answer over %d bytes", maxResponse))
	}
	r.logger.Debug("policy: remote decision", "gate", g, "url", endpoint, "status", resp.StatusCode, "duration", time.Since(start))
	if resp.StatusCode/100 == 3 {
		where := "elsewhere"
		if loc, err := resp.Location(); err == nil {
			where = "to " + loc.Redacted()
		}
		return Decision{}, &RemoteError{URL: endpoint, Gate: g, Status: resp.StatusCode, Message: "the server redirects " + where + "; set the OPA server's own URL"}
	}
	if resp.StatusCode != http.StatusOK {
		re := &RemoteError{URL: endpoint, Gate: g, Status: resp.StatusCode}
		var oe struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Errors  []struct {
				Code     string `json:"code"`
				Message  string `json:"message"`
				Location *struct {
					File string `json:"file"`
					Row  int    `json:"row"`
				} `json:"location"`
			} `json:"errors"`
		}
		if json.Unmarshal(raw, &oe) == nil && (oe.Code != "" || oe.Message != "") {
			re.Code, re.Message = oe.Code, oe.Message
			for _, e := range oe.Errors {
				where := ""
				if e.Location != nil {
					where = fmt.Sprintf("%s:%d: ", e.Location.File, e.Location.Row)
				}
				re.Message += fmt.Sprintf("; %s%s: %s", where, e.Code, e.Message)
			}
		} else {
			re.Message = strings.TrimSpace(string(raw[:min(len(raw), 200)]))
		}
		return Decision{}, re
	}
	var dr struct {
		DecisionID string          `json:"decision_id"`
		Result     json.RawMessage `json:"result"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // as the engine's bindings hold numbers
	if err := dec.Decode(&dr); err != nil {
		return fail(fmt.Errorf("the answer is not OPA's JSON: %w", err))
	}
	if len(dr.Result) == 0 {
		return fail(fmt.Errorf("%w: no package %s on the server: load des's policies into it (opa run --server rego/ <team policies>, or the bundle opa build rego/ makes)", ErrUndefinedGate, g.Package()))
	}
	var result any
	dec = json.NewDecoder(bytes.NewReader(dr.Result))
	dec.UseNumber()
	if err := dec.Decode(&result); err != nil {
		return fail(err)
	}
	b, err := bindings(g, result)
	if err != nil {
		return fail(err)
	}
	// decide names each violation's policy from a catalogue; this one is
	// empty, and the names come from the local one after.
	none := &compiled{}
	none.catOnce.Do(func() {})
	d, err := decide(none, g, b)
	if err != nil {
		return fail(err)
	}
	if err := checkBuiltin(g, result); err != nil {
		return fail(err)
	}
	if r.policyOf != nil {
		for _, vs := range [][]Violation{d.Deny, d.Warn, d.Waived} {
			for i := range vs {
				vs[i].Policy = r.policyOf(vs[i].Code)
			}
		}
	}
	return d, nil
}

// checkBuiltin checks that the gate's document carries builtin_revision,
// the revision of the built-in policies the server runs, and that it is
// this des's (rego.Revision).
func checkBuiltin(g Gate, doc any) error {
	obj, _ := doc.(map[string]any)
	got, _ := obj["builtin_revision"].(string)
	want := builtin.Revision()
	switch {
	case got == "":
		return fmt.Errorf("%w: %s has no builtin_revision, so the server holds rules in the package but not des's own: load this des release's rego/ beside the organisation's policies (opa run --server rego/ <policies>, or one bundle from opa build rego/ <policies>)", ErrBuiltinMismatch, g.Package())
	case got != want:
		return fmt.Errorf("%w: it runs des's built-in policies at revision %.12s, this des's are %.12s (des-hook version shows it): load this des release's rego/ into the server, or run the release the server has", ErrBuiltinMismatch, got, want)
	}
	return nil
}

// bindings turns the gate's document (its package, every rule evaluated) into
// what the engine's query binds: each set as a list, info as a list of one.
func bindings(g Gate, doc any) (rego.Vars, error) {
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("gate %s: the document of %s is %T, not an object: %w", g, g.Package(), doc, ErrMalformedDecision)
	}
	b := rego.Vars{}
	for _, k := range []string{"deny", "warn", "exception"} {
		switch v := obj[k].(type) {
		case nil:
			b[k] = []any{}
		case []any: // a set, as OPA writes one in JSON
			b[k] = v
		default:
			return nil, fmt.Errorf("gate %s: %s is %T, not a set: %w", g, k, v, ErrMalformedDecision)
		}
	}
	b["info"] = []any{}
	if info, ok := obj["info"]; ok {
		b["info"] = []any{info}
	}
	return b, nil
}
