package des

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/internal/opatest"
	"github.com/deterministic-exec/des/internal/testenv"
)

// A team rule at a path an organisation's bundle sets as data would hide
// the data (OPA evaluates the rule and never reads the document under
// it): `unwaivable := []` would undo the organisation's list and waive its
// code, `settings_pinned := {}` its pinning. OPA refuses such a rule when
// it loads policies beside data; so does des, naming the rule's file.
func TestAttackTeamRuleShadowsOrgData(t *testing.T) {
	t.Parallel()
	s := newOrgSetup(t)
	raw := signedBundle(t, s.priv, map[string]string{
		".manifest":                     `{"revision": "r1", "roots": ["des/gates/tool_use", "des/exceptions", "des/settings_pinned"]}`,
		"org.rego":                      orgRule("ORG-ONE", "team.txt"),
		"des/exceptions/data.json":      `{"unwaivable": ["ORG-ONE"]}`,
		"des/settings_pinned/data.json": `{"delegation_mode": "strict"}`,
	})
	s.body.Store(&raw)
	if res := s.pull(t); res[0].Outcome != BundleUpdated {
		t.Fatalf("pull: %+v", res)
	}
	dir := filepath.Join(s.root, ".des", "policies")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "waive.rego"), []byte("package des.gates.tool_use\n\nexception contains \"ORG-ONE\"\n"), 0o644)
	if _, err := New(t.Context(), WithRoot(s.root), WithEnv(s.lookup)); err != nil {
		t.Fatalf("the team's exception alone: %v", err) // refused in the decision, not at load
	}
	for src, path := range map[string]string{
		"package des.exceptions\n\nunwaivable := []\n":                "des/exceptions/unwaivable",
		"package des.exceptions.unwaivable\n\nx := 1\n":               "des/exceptions/unwaivable/x",
		"package des\n\nsettings_pinned := {}\n":                      "des/settings_pinned",
		"package des.settings_pinned\n\ndelegation_mode := \"off\"\n": "des/settings_pinned/delegation_mode",
	} {
		os.WriteFile(filepath.Join(dir, "shadow.rego"), []byte(src), 0o644)
		e, err := New(t.Context(), WithRoot(s.root), WithEnv(s.lookup))
		if err == nil {
			t.Errorf("team rule %q: loaded; deny %v", src, teamCodes(t, e))
			continue
		}
		if !strings.Contains(err.Error(), "conflicting rule for data path "+path) || !strings.Contains(err.Error(), "shadow.rego:") {
			t.Errorf("team rule %q: %v, want a conflict at %s naming shadow.rego", src, err, path)
		}
	}
}

// The JWKS of bundle_jwks decides which bundles verify: fetched over
// http://, or over https:// redirected to http://, anyone on the network
// path could hand over their own keys, then bundles they signed.
func TestAttackBundleJWKSOverHTTP(t *testing.T) {
	t.Parallel()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	point, _ := k.PublicKey.Bytes()
	b64 := base64.RawURLEncoding.EncodeToString
	jwks, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{"kty": "EC", "kid": "mallory", "use": "sig", "crv": "P-256", "x": b64(point[1:33]), "y": b64(point[33:])}}})
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(jwks) }))
	defer plain.Close()

	root := t.TempDir()
	writeConfig(t, root, `{"bundle_urls": ["https://bundles.example.com/org.tar.gz"], "bundle_jwks": "`+plain.URL+`/jwks.json"}`)
	if _, err := LoadConfig(root, env(nil)); err == nil || !strings.Contains(err.Error(), "bundle_jwks") || !strings.Contains(err.Error(), "https://") {
		t.Errorf("bundle_jwks over http://: %v, want refused", err)
	}

	tlsSrv := httptest.NewTLSServer(http.RedirectHandler(plain.URL+"/jwks.json", http.StatusFound))
	defer tlsSrv.Close()
	cfg := DefaultConfig()
	cfg.BundleURLs, cfg.BundleJWKS = []string{tlsSrv.URL + "/org.tar.gz"}, tlsSrv.URL+"/jwks.json"
	_, err = PullBundles(t.Context(), root, cfg, cacheEnv(t, nil), tlsSrv.Client())
	if err == nil || !strings.Contains(err.Error(), "not https://") {
		t.Errorf("a JWKS redirected to http://: %v, want refused", err)
	}
	if _, err := os.Stat(keptJWKS(root, tlsSrv.URL+"/jwks.json")); err == nil {
		t.Error("the JWKS fetched over http:// was kept")
	}
}

// In process, the settings in force are the project's (data.des.config):
// input.des_config, which des.settings lays over them for an OPA server,
// must not relax them when a gate input carries it, whoever built the
// input (Engine.Evaluate is the API a caller hands its own facts to).
func TestAttackEmbeddedInputCannotCarrySettings(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeConfig(t, root, `{"max_concurrent_agents": 2}`)
	e, err := New(t.Context(), WithRoot(root), WithEnv(cacheEnv(t, nil)))
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]any{
		"tool": "Agent", "main_thread": true, "registry": map[string]any{"running": 2, "agents": []any{}},
		"des_config": map[string]any{"max_concurrent_agents": 0},
	}
	d, err := e.Evaluate(t.Context(), "pre_invocation", in)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(d.Codes(), "DES-CONCURRENCY-LIMIT") {
		t.Errorf("input.des_config lifted the project's limit: deny %v", d.Codes())
	}
	if _, ok := in["des_config"]; !ok {
		t.Error("the caller's input was changed")
	}
}

// A pull under other settings (whoever runs `des-hook bundle pull`, or
// asks the warm server to refresh, chooses DES_BUNDLE_JWKS from their own
// environment) fetched its JWKS over the one kept for the project's
// bundle_jwks URL: the project's next hook event verified the kept bundles
// with those keys, refused them, and des stopped deciding. Each URL keeps
// its own JWKS.
func TestAttackJWKSOfOtherSettingsKeptApart(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	jwksOf := func(kid string) ([]byte, string) {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		pk, _ := x509.MarshalPKCS8PrivateKey(k)
		priv := filepath.Join(t.TempDir(), "priv.pem")
		os.WriteFile(priv, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), 0o600)
		point, _ := k.PublicKey.Bytes()
		b64 := base64.RawURLEncoding.EncodeToString
		j, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{"kty": "EC", "kid": kid, "use": "sig", "crv": "P-256", "x": b64(point[1:33]), "y": b64(point[33:])}}})
		return j, priv
	}
	orgJWKS, orgPriv := jwksOf("acme")
	otherJWKS, _ := jwksOf("mallory")
	claims := filepath.Join(t.TempDir(), "claims.json")
	os.WriteFile(claims, []byte(`{"keyid": "acme"}`), 0o644)
	testenv.Long(t)
	raw := opatest.Bundle(t, map[string]string{
		".manifest": `{"revision": "j1", "roots": ["des/gates/tool_use"]}`,
		"org.rego":  orgRule("ORG-JWKS", "team.txt"),
	}, "--signing-key", orgPriv, "--signing-alg", "ES256", "--claims-file", claims)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/jwks.json":
			w.Write(orgJWKS)
		case "/other-jwks.json":
			w.Write(otherJWKS)
		default:
			w.Write(raw)
		}
	}))
	defer srv.Close()
	cfg := DefaultConfig()
	cfg.BundleURLs, cfg.BundleJWKS = []string{srv.URL + "/org.tar.gz"}, srv.URL+"/jwks.json"
	lookup := cacheEnv(t, nil)
	if res, err := PullBundles(t.Context(), root, cfg, lookup, srv.Client()); err != nil || res[0].Outcome != BundleUpdated {
		t.Fatalf("pull: %+v, %v", res, err)
	}
	other := cfg
	other.BundleJWKS = srv.URL + "/other-jwks.json"
	if res, err := PullBundles(t.Context(), root, other, lookup, srv.Client()); err != nil || res[0].Outcome != BundleFailed {
		t.Fatalf("pull under other keys: %+v, %v; want the bundle refused", res, err)
	}
	e, err := New(t.Context(), WithRoot(root), WithEnv(lookup), WithConfig(cfg))
	if err != nil {
		t.Fatalf("the project's settings after a pull under other keys: %v", err)
	}
	if codes := teamCodes(t, e); !slices.Contains(codes, "ORG-JWKS") {
		t.Errorf("codes %v, want ORG-JWKS", codes)
	}
}

// opa_ca_file decides which server may answer for opa_url: a CA an agent
// adds to it lets anyone on the way decide for des. It is protected like
// the bundle keys.
func TestAttackOPACAFileProtected(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	cfg := DefaultConfig()
	cfg.OPACAFile = "certs/opa-ca.pem"
	e, err := New(t.Context(), WithRoot(root), WithEnv(cacheEnv(t, nil)), WithConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.ToolUseGate().Check(t.Context(), e, gate.ToolCall{Tool: "Write", Paths: []string{"certs/opa-ca.pem"}})
	if err != nil || res.Decision.Allowed() || !slices.Contains(res.Decision.Codes(), "DES-PROTECTED-PATH") {
		t.Errorf("a write to opa_ca_file: %+v, %v", res.Decision, err)
	}
}

// A URL setting that carries credentials is refused; the refusal, which
// reaches stderr, the status line and a DES-INTERNAL reason the agent
// reads, must not repeat them.
func TestAttackURLCredentialsNotEchoed(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"DES_OPA_URL", "DES_DECISION_LOG_URL", "DES_BUNDLE_URLS"} {
		for _, u := range []string{"https://des:s3cret-pw@opa.example.com/x", "https://s3cret-pw@opa.example.com/x"} {
			vars := map[string]string{name: u, "DES_BUNDLE_PUBLIC_KEY": "k.pem"}
			_, err := LoadConfig(t.TempDir(), env(vars))
			if err == nil || !strings.Contains(err.Error(), "credentials") || !strings.Contains(err.Error(), "opa.example.com/x") {
				t.Errorf("%s=%s: %v, want refused naming the URL", name, u, err)
				continue
			}
			if strings.Contains(err.Error(), "s3cret-pw") {
				t.Errorf("%s: the error repeats the secret: %v", name, err)
			}
		}
	}
}
