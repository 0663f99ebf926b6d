package des_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/internal/opatest"
	"github.com/deterministic-exec/des/internal/testenv"
	"github.com/deterministic-exec/des/policy"
)

// The token des sends to opa_url sits in a DES_ variable of the
// developer's environment, which an agent's Bash reads as easily as the
// hook does. The system.authz policy the documentation gives must let that
// token ask for gate decisions and nothing else: with it an agent must not
// rewrite the organisation's data (data.des.exceptions.unwaivable) or
// policies on the shared server, nor read the server's whole data.
func TestAttackRemoteDocumentedAuthzGatesOnly(t *testing.T) {
	t.Parallel()
	testenv.Long(t)
	doc, err := os.ReadFile("docs/organisation.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)```rego\n(package system\\.authz\n.*?)```").FindSubmatch(doc)
	if block == nil {
		t.Fatal("docs/organisation.md has no ```rego block of package system.authz")
	}
	const token = "s3cret-for-des"
	// The server reads the token from its environment; the test's server
	// gets it written in.
	authz := strings.Replace(string(block[1]), "opa.runtime().env.DES_CLIENT_TOKEN", `"`+token+`"`, 1)
	if authz == string(block[1]) {
		t.Fatal("the documented system.authz policy no longer reads opa.runtime().env.DES_CLIENT_TOKEN")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "authz.rego"), []byte(authz), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := opatest.Start(t, opatest.Options{Args: []string{"--authentication=token", "--authorization=basic"}}, "rego", dir)
	do := func(method, path, body string) int {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := do("POST", "/v1/data/des/gates/tool_use?strict-builtin-errors=true", `{"input": {"tool": "Write", "writes": []}}`); code != http.StatusOK {
		t.Fatalf("a gate decision with the token: HTTP %d, want 200", code)
	}
	for _, r := range []struct{ method, path, body string }{
		{"PUT", "/v1/data/des/exceptions/unwaivable", `[]`},
		{"PATCH", "/v1/data/des", `[{"op": "add", "path": "/settings_pinned", "value": {}}]`},
		{"PUT", "/v1/policies/evil", "package des.gates.tool_use\n\nexception contains \"ORG-ONE\"\n"},
		{"DELETE", "/v1/policies/rego/des/protected/protected.rego", ""},
		{"GET", "/v1/data", ""},
		{"POST", "/v1/data/des/config", `{}`},
		{"POST", "/v1/query", `{"query": "data"}`},
	} {
		if code := do(r.method, r.path, r.body); code != http.StatusUnauthorized && code != http.StatusForbidden {
			t.Errorf("%s %s with des's token: HTTP %d, want it refused", r.method, r.path, code)
		}
	}
}

// An OPA server without des's policies answers a gate with an empty
// document when the package exists some other way (a team's exceptions, a
// data file, a proxy answering {"result": {}}): no deny is not an allow
// then. des fails closed, naming the missing policies, as for a server that
// has no such package at all.
func TestAttackRemoteEmptyAnswerIsNoAllow(t *testing.T) {
	t.Parallel()
	testenv.Long(t)
	ctx := t.Context()
	root, env := remoteProject(t)
	teamOnly := t.TempDir()
	if err := os.WriteFile(filepath.Join(teamOnly, "waive.rego"), []byte("package des.gates.tool_use\n\nexception contains \"DES-PROTECTED-PATH\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := opatest.Start(t, opatest.Options{}, teamOnly)
	empty := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"result": {}}`) }))
	t.Cleanup(empty.Close)
	for name, url := range map[string]string{"an OPA server with a team's exceptions only": srv.URL, `{"result": {}}`: empty.URL} {
		e := map[string]string{"DES_OPA_URL": url}
		for k, v := range env {
			e[k] = v
		}
		eng, err := des.New(ctx, des.WithRoot(root), des.WithEnv(envOf(e)))
		if err != nil {
			t.Fatal(err)
		}
		d, err := eng.Evaluate(ctx, policy.ToolUse, map[string]any{"tool": "Write", "writes": []any{map[string]any{"path": ".des/config.json", "tool": "Write"}}})
		if err == nil {
			t.Errorf("%s: decided %+v, want no decision", name, d)
			continue
		}
		if !errors.Is(err, policy.ErrBuiltinMismatch) || !strings.Contains(err.Error(), "rego/") {
			t.Errorf("%s: %v, want ErrBuiltinMismatch naming des's rego/", name, err)
		}
	}
}

// opa_url behind a redirect (http:// to https://, a path moved): followed,
// a 301 or 302 turns des's POST into a GET without the input, which OPA
// answers with the gate evaluated on no input at all: no deny, an allow of
// a write to .des/config.json. A redirect is no decision: des fails closed
// naming where the server points.
func TestAttackRemoteRedirectIsNoDecision(t *testing.T) {
	t.Parallel()
	testenv.Long(t)
	ctx := t.Context()
	root, env := remoteProject(t)
	srv := opatest.Start(t, opatest.Options{}, "rego")
	in := map[string]any{"tool": "Write", "writes": []any{map[string]any{"path": ".des/config.json", "tool": "Write"}}}
	for _, status := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect} {
		front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, srv.URL+r.URL.RequestURI(), status)
		}))
		t.Cleanup(front.Close)
		e := map[string]string{"DES_OPA_URL": front.URL}
		for k, v := range env {
			e[k] = v
		}
		eng, err := des.New(ctx, des.WithRoot(root), des.WithEnv(envOf(e)))
		if err != nil {
			t.Fatal(err)
		}
		d, err := eng.Evaluate(ctx, policy.ToolUse, in)
		if err == nil {
			t.Errorf("HTTP %d to the OPA server: decided %v, want no decision", status, d.Codes())
			continue
		}
		if !strings.Contains(err.Error(), fmt.Sprint(status)) || !strings.Contains(err.Error(), srv.URL) {
			t.Errorf("HTTP %d: %v, want the status and where it points", status, err)
		}
	}
}
