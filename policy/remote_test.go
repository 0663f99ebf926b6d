package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	builtin "github.com/deterministic-exec/des/rego"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/deterministic-exec/des/internal/opatest"
	"github.com/deterministic-exec/des/internal/testenv"
	"github.com/deterministic-exec/des/policy"
)

func newRemote(t *testing.T, url string, opts ...policy.RemoteOption) *policy.Remote {
	t.Helper()
	r, err := policy.NewRemote(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestNewRemoteRefusesBadURLs(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "opa:8181", "ftp://opa", "http://", "http://opa?x=1", "http://opa#f"} {
		if _, err := policy.NewRemote(u); err == nil {
			t.Errorf("NewRemote(%q) accepted", u)
		}
	}
	r := newRemote(t, "https://opa.example/org/")
	if r.URL() != "https://opa.example/org" {
		t.Errorf("URL() = %q", r.URL())
	}
	if _, err := r.Eval(t.Context(), "nope", map[string]any{}); !errors.Is(err, policy.ErrUnknownGate) {
		t.Errorf("unknown gate: %v", err)
	}
}

// TestRemoteBuildsTheDecision: what the server answers becomes a Decision
// as the engine builds one: sorted, waived by exception, info kept, numbers
// as the engine gives them; the request is OPA's data API with the input
// as JSON (ast.Values too) and the bearer token.
func TestRemoteBuildsTheDecision(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var gotPath, gotAuth, gotBody string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		gotPath, gotAuth, gotBody = r.URL.RequestURI(), r.Header.Get("Authorization"), string(b)
		mu.Unlock()
		fmt.Fprint(w, `{"decision_id": "x", "result": {
			"deny": [{"code": "B", "msg": "b", "field": "/phases/10"}, {"code": "B", "msg": "b", "field": "/phases/2"}, {"code": "A", "msg": "a", "n": 1.5}],
			"warn": [{"code": "W", "msg": "w", "recovery": ["r"]}],
			"exception": ["A"],
			"info": {"level": "full", "count": 3},
			"helper": true, "builtin_revision": "`+builtin.Revision()+`"}}`)
	}))
	defer srv.Close()
	r := newRemote(t, srv.URL+"/", policy.WithToken(func(ctx context.Context) (string, error) { return "s3cret", nil }))
	in, err := ast.InterfaceToValue(map[string]any{"step": map[string]any{"document": ast.NewObject(ast.Item(ast.StringTerm("k"), ast.IntNumberTerm(1)))}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := r.Eval(t.Context(), policy.PreCommit, map[string]any{"nested": in})
	if err != nil {
		t.Fatal(err)
	}
	want := policy.Decision{
		Gate: policy.PreCommit,
		Deny: []policy.Violation{
			{Code: "B", Message: "b", Severity: policy.Deny, Field: "/phases/2"},
			{Code: "B", Message: "b", Severity: policy.Deny, Field: "/phases/10"},
		},
		Warn:   []policy.Violation{{Code: "W", Message: "w", Severity: policy.Warn, Recovery: []string{"r"}}},
		Waived: []policy.Violation{{Code: "A", Message: "a", Severity: policy.Deny, Details: map[string]any{"n": json.Number("1.5")}}},
		Info:   map[string]any{"level": "full", "count": json.Number("3")},
	}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("decision (-want +got):\n%s", diff)
	}
	mu.Lock()
	defer mu.Unlock()
	if gotPath != "/v1/data/des/gates/pre_commit?strict-builtin-errors=true" || gotAuth != "Bearer s3cret" {
		t.Errorf("request %s with Authorization %q", gotPath, gotAuth)
	}
	if gotBody != `{"input":{"nested":{"step":{"document":{"k":1}}}}}` {
		t.Errorf("body %s", gotBody)
	}
}

// TestRemoteMatchesEngine runs the engine's gate cases through an OPA
// server loaded with the same policies (rego/ and the team fixture), and
// names each violation's policy from the local catalogue.
func TestRemoteMatchesEngine(t *testing.T) {
	t.Parallel()
	testenv.Long(t)
	team := filepath.Join("testdata", "team")
	srv := opatest.Start(t, opatest.Options{}, "../rego", team)
	e := newEngine(t, policy.WithDirs(team))
	r := newRemote(t, srv.URL, policy.WithCatalogue(e))
	cases := []struct {
		g  policy.Gate
		in any
	}{
		{policy.PreCommit, obsoleteStep},
		{policy.PreCommit, map[string]any{"step": map[string]any{"path": "s/01.json", "document": map[string]any{"task_id": "01", "owner": "x"}}}},
		{policy.ToolUse, map[string]any{"tool": "Write", "writes": []any{map[string]any{"path": ".des/config.json", "tool": "Write"}}}},
		{policy.DocumentWrite, map[string]any{}},
		{policy.SubagentStop, map[string]any{}},
		{policy.PreInvocation, map[string]any{"prompt": map[string]any{"validation": "required"}}},
	}
	violations := 0
	for i, c := range cases {
		want, err := e.Eval(t.Context(), c.g, c.in)
		if err != nil {
			t.Fatalf("case %d: engine: %v", i, err)
		}
		got, err := r.Eval(t.Context(), c.g, c.in)
		if err != nil {
			t.Fatalf("case %d: remote: %v", i, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("case %d (%s): engine (-) and remote (+) differ:\n%s", i, c.g, diff)
		}
		violations += len(got.Deny) + len(got.Warn)
	}
	if violations == 0 {
		t.Error("the cases yield no violation: nothing was compared")
	}
}

// TestRemoteTLSAndToken: an https server with a CA of the test's own, that
// lets in only a bearer token.
func TestRemoteTLSAndToken(t *testing.T) {
	t.Parallel()
	testenv.Long(t)
	cert := opatest.NewCA(t)
	authz := filepath.Join(t.TempDir(), "authz.rego")
	if err := os.WriteFile(authz, []byte(opatest.TokenAuthz("s3cret")), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := opatest.Start(t, opatest.Options{TLS: cert, Args: []string{"--authentication=token", "--authorization=basic"}}, "../rego", authz)
	in := map[string]any{"tool": "Write", "writes": []any{map[string]any{"path": ".des/config.json", "tool": "Write"}}}
	token := func(tok string) policy.RemoteOption {
		return policy.WithToken(func(context.Context) (string, error) { return tok, nil })
	}

	d, err := newRemote(t, srv.URL, policy.WithRootCAs(cert.Pool), token("s3cret")).Eval(t.Context(), policy.ToolUse, in)
	if err != nil || !strings.Contains(strings.Join(d.Codes(), " "), "DES-PROTECTED-PATH") {
		t.Fatalf("with the CA and the token: %+v, %v", d, err)
	}
	var re *policy.RemoteError
	_, err = newRemote(t, srv.URL, policy.WithRootCAs(cert.Pool), token("wrong")).Eval(t.Context(), policy.ToolUse, in)
	if !errors.As(err, &re) || re.Status != http.StatusUnauthorized || re.Code != "unauthorized" {
		t.Errorf("a wrong token: %v", err)
	}
	_, err = newRemote(t, srv.URL, token("s3cret")).Eval(t.Context(), policy.ToolUse, in)
	if !errors.As(err, &re) || re.Status != 0 || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the CA: %v", err)
	}
}

// TestRemoteRealServerErrors: a real OPA server without des's policies
// leaves the gate undefined, and a rule that fails on the server is an
// HTTP error carrying OPA's code and message, never an empty allow.
func TestRemoteRealServerErrors(t *testing.T) {
	t.Parallel()
	testenv.Long(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "other.rego"), []byte("package other\n\nx := 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bare := opatest.Start(t, opatest.Options{}, dir)
	_, err := newRemote(t, bare.URL).Eval(t.Context(), policy.PreCommit, map[string]any{})
	if !errors.Is(err, policy.ErrUndefinedGate) || !strings.Contains(err.Error(), "des.gates.pre_commit") {
		t.Errorf("without des's policies: %v", err)
	}

	broken := t.TempDir()
	src := "package des.gates.tool_use\n\ndeny contains {\"code\": \"TEAM-X\", \"msg\": \"x\"} if to_number(input.tool) > 0\n"
	if err := os.WriteFile(filepath.Join(broken, "team.rego"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := opatest.Start(t, opatest.Options{}, "../rego", broken)
	_, err = newRemote(t, srv.URL).Eval(t.Context(), policy.ToolUse, map[string]any{"tool": "Write", "writes": []any{}})
	var re *policy.RemoteError
	if !errors.As(err, &re) || re.Status != http.StatusInternalServerError || re.Code != "internal_error" || !strings.Contains(re.Message, "team.rego") {
		t.Errorf("a built-in error on the server: %v", err)
	}
	// The engine fails on the same input too: the same posture both ways.
	if _, err := newEngine(t, policy.WithDirs(broken)).Eval(t.Context(), policy.ToolUse, map[string]any{"tool": "Write", "writes": []any{}}); err == nil {
		t.Error("the engine decided where the server failed")
	}
}

// A server that holds rules in a gate package but not des's own built-in
// policies, or another release's, gives no decision: an empty deny set
// from it would be an allow des never made.
func TestRemoteRefusesOtherBuiltinPolicies(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"organisation rules only": `{"result": {"deny": []}}`,
		"another release":         `{"result": {"deny": [], "builtin_revision": "0123456789abcdef"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, body) }))
			defer srv.Close()
			d, err := newRemote(t, srv.URL).Eval(t.Context(), policy.ToolUse, map[string]any{})
			var re *policy.RemoteError
			if !errors.Is(err, policy.ErrBuiltinMismatch) || !errors.As(err, &re) || !strings.Contains(err.Error(), "rego/") {
				t.Fatalf("decision %+v, err %v; want ErrBuiltinMismatch naming rego/", d, err)
			}
		})
	}
}
