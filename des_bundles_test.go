package des

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"github.com/deterministic-exec/des/rego"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/internal/bundlestore"
	"github.com/deterministic-exec/des/internal/opatest"
	"github.com/deterministic-exec/des/internal/testenv"
)

// opaBinary is the OPA CLI pinned in go.mod; the tests that need it are
// long tests.
func opaBinary(t *testing.T) string {
	t.Helper()
	testenv.Long(t)
	return opatest.Binary(t)
}

// orgRule is an organisation's tool_use rule: code denies every write to
// path.
func orgRule(code, path string) string {
	return fmt.Sprintf("package des.gates.tool_use\n\ndeny contains {\"code\": %q, \"msg\": \"organisation rule\"} if {\n\tsome w in input.writes\n\tw.path == %q\n}\n", code, path)
}

// signedBundle builds and signs a bundle of files with opa build.
func signedBundle(t *testing.T, key string, files map[string]string) []byte {
	t.Helper()
	testenv.Long(t)
	return opatest.Bundle(t, files, "--signing-key", key)
}

// orgSetup is a project whose settings name one bundle, served with an
// ETag and a bearer token, and the key that signs it.
type orgSetup struct {
	root, priv, url string
	lookup          func(string) (string, bool)
	body            atomic.Pointer[[]byte]
}

func newOrgSetup(t *testing.T) *orgSetup {
	t.Helper()
	s := &orgSetup{root: t.TempDir()}
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pk, _ := x509.MarshalPKCS8PrivateKey(k)
	der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	s.priv = filepath.Join(t.TempDir(), "priv.pem")
	os.WriteFile(s.priv, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), 0o600)
	os.MkdirAll(filepath.Join(s.root, ".des"), 0o755)
	os.WriteFile(filepath.Join(s.root, ".des", "org.pem"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer t0ken" {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		b := *s.body.Load()
		etag := fmt.Sprintf(`"%d-%x"`, len(b), b[len(b)-8:])
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", etag)
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL + "/acme.tar.gz"
	cfg := fmt.Sprintf(`{"bundle_urls": [%q], "bundle_public_key": ".des/org.pem", "bundle_token_env": "DES_ACME_TOKEN"}`, s.url)
	os.WriteFile(filepath.Join(s.root, ".des", "config.json"), []byte(cfg), 0o644)
	s.lookup = cacheEnv(t, map[string]string{"DES_ACME_TOKEN": "t0ken"})
	return s
}

func (s *orgSetup) publish(t *testing.T, revision, rule string) {
	raw := signedBundle(t, s.priv, map[string]string{
		".manifest": fmt.Sprintf(`{"revision": %q, "roots": ["des/gates/tool_use"]}`, revision),
		"org.rego":  rule,
	})
	s.body.Store(&raw)
}

func (s *orgSetup) pull(t *testing.T) []BundlePull {
	t.Helper()
	cfg, err := LoadConfig(s.root, s.lookup)
	if err != nil {
		t.Fatal(err)
	}
	res, err := PullBundles(t.Context(), s.root, cfg, s.lookup, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestOrgBundleDecides(t *testing.T) {
	t.Parallel()
	s := newOrgSetup(t)
	s.publish(t, "r1", orgRule("ORG-ONE", "team.txt"))

	// Never fetched: des does not decide without the organisation's rules.
	_, err := New(t.Context(), WithRoot(s.root), WithEnv(s.lookup))
	var be *BundleError
	if !errors.As(err, &be) || !errors.Is(err, ErrBundleNotFetched) || be.URL != s.url ||
		!strings.Contains(err.Error(), s.url) || !strings.Contains(err.Error(), "des-hook bundle pull") {
		t.Fatalf("New before any pull: %v", err)
	}

	res := s.pull(t)
	if len(res) != 1 || res[0].Outcome != BundleUpdated || res[0].Revision != "r1" || res[0].Key != ".des/org.pem" {
		t.Fatalf("pull: %+v", res)
	}
	if res = s.pull(t); res[0].Outcome != BundleNotModified {
		t.Fatalf("second pull: %+v", res)
	}

	// The organisation's rule joins the built-in gate; the team's too.
	teamPolicy(t, s.root, "team.rego", "TEAM-ONE")
	for _, lazy := range []bool{false, true} {
		opts := []Option{WithRoot(s.root), WithEnv(s.lookup)}
		if lazy {
			opts = append(opts, WithLazyPolicies())
		}
		e, err := New(t.Context(), opts...)
		if err != nil {
			t.Fatal(err)
		}
		if codes := teamCodes(t, e); !slices.Contains(codes, "ORG-ONE") || !slices.Contains(codes, "TEAM-ONE") {
			t.Errorf("lazy %v: codes %v, want ORG-ONE and TEAM-ONE", lazy, codes)
		}
		if b := e.Bundles(); len(b) != 1 || b[0].Revision != "r1" || b[0].URL != s.url || b[0].Stale {
			t.Errorf("Bundles() = %+v", b)
		}
	}

	// A decision log names the organisation's bundle and its revision.
	logged := func(k string) (string, bool) {
		if k == "DES_DECISION_LOG" {
			return "on", true
		}
		return s.lookup(k)
	}
	e, err := New(t.Context(), WithRoot(s.root), WithEnv(logged))
	if err != nil {
		t.Fatal(err)
	}
	teamCodes(t, e)
	evs := loggedEvents(t, s.root)
	if len(evs) == 0 {
		t.Fatal("no decision logged")
	}
	name := e.Bundles()[0].Name
	if got := evs[len(evs)-1].Bundles; got[name].Revision != "r1" || got["des"].Revision != rego.Revision() {
		t.Errorf("logged bundles %v, want %s at r1 and des at des-builtin", got, name)
	}

	// A team exception waives an organisation's code (audited).
	os.WriteFile(filepath.Join(s.root, ".des", "policies", "waive.rego"), []byte("package des.gates.tool_use\n\nexception contains \"ORG-ONE\"\n"), 0o644)
	e, err = New(t.Context(), WithRoot(s.root), WithEnv(s.lookup))
	if err != nil {
		t.Fatal(err)
	}
	if codes := teamCodes(t, e); slices.Contains(codes, "ORG-ONE") {
		t.Errorf("codes %v: the team's exception did not waive ORG-ONE", codes)
	}
}

func TestOrgBundleTamperedCopyRefused(t *testing.T) {
	t.Parallel()
	s := newOrgSetup(t)
	s.publish(t, "r1", orgRule("ORG-ONE", "team.txt"))
	s.pull(t)
	p := filepath.Join(s.root, BundleDir)
	matches, _ := filepath.Glob(filepath.Join(p, "acme-*", "bundle.tar.gz"))
	if len(matches) != 1 {
		t.Fatalf("kept bundles %v", matches)
	}
	// Another bundle, validly signed by someone else, in its place.
	other := newOrgSetup(t)
	raw := signedBundle(t, other.priv, map[string]string{".manifest": `{"roots": ["des/gates/tool_use"]}`, "org.rego": "package des.gates.tool_use\n"})
	os.WriteFile(matches[0], raw, 0o644)
	_, err := New(t.Context(), WithRoot(s.root), WithEnv(s.lookup), WithLazyPolicies())
	var be *BundleError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "kept copy") || !strings.Contains(err.Error(), "des-hook bundle pull") {
		t.Fatalf("New over a replaced kept copy: %v", err)
	}
	st := BundleStatuses(t.Context(), s.root, mustConfig(t, s), s.lookup, time.Now())
	if len(st) != 1 || st[0].Problem == "" || !st[0].Stale {
		t.Errorf("status of a refused copy: %+v", st)
	}
	// A pull restores it.
	if res := s.pull(t); res[0].Outcome != BundleUpdated {
		t.Fatalf("pull over a refused copy: %+v", res)
	}
	if _, err := New(t.Context(), WithRoot(s.root), WithEnv(s.lookup)); err != nil {
		t.Fatal(err)
	}
}

func mustConfig(t *testing.T, s *orgSetup) Config {
	cfg, err := LoadConfig(s.root, s.lookup)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestOrgBundleRepullInvalidatesCache(t *testing.T) {
	t.Parallel()
	s := newOrgSetup(t)
	s.publish(t, "r1", orgRule("ORG-ONE", "team.txt"))
	s.pull(t)
	c := NewPolicyCache(4)
	if codes := teamCodes(t, cachedEngine(t, c, s.root, s.lookup)); !slices.Contains(codes, "ORG-ONE") {
		t.Fatalf("codes %v", codes)
	}
	cachedEngine(t, c, s.root, s.lookup)
	if st := c.Stats(); st.Compiles != 1 || st.Hits != 1 {
		t.Errorf("stats %+v, want one compile and one hit", st)
	}
	s.publish(t, "r2", orgRule("ORG-TWO", "team.txt"))
	if res := s.pull(t); res[0].Outcome != BundleUpdated || res[0].Revision != "r2" {
		t.Fatalf("pull of r2: %+v", res)
	}
	e := cachedEngine(t, c, s.root, s.lookup)
	if codes := teamCodes(t, e); !slices.Contains(codes, "ORG-TWO") || slices.Contains(codes, "ORG-ONE") {
		t.Errorf("after a new revision: codes %v, want ORG-TWO only", codes)
	}
	if b := e.Bundles(); b[0].Revision != "r2" {
		t.Errorf("Bundles() = %+v", b)
	}
}

func TestBundlesDue(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	cfg := DefaultConfig()
	if BundlesDue(root, cfg, time.Now()) {
		t.Error("due without bundle_urls")
	}
	cfg.BundleURLs, cfg.BundlePublicKey = []string{"https://example.com/b.tar.gz"}, "k.pem"
	if !BundlesDue(root, cfg, time.Now()) {
		t.Error("not due though never fetched")
	}
	// Kept, fetched at t0: due once bundle_refresh_minutes have passed.
	t0 := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	dir := filepath.Join(root, BundleDir, bundlestore.Name(cfg.BundleURLs[0]))
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, bundlestore.BundleFile), []byte("kept"), 0o644)
	os.WriteFile(filepath.Join(dir, bundlestore.MetaFile), []byte(`{"url": "https://example.com/b.tar.gz", "fetched_at": "2026-11-25T09:00:00Z"}`), 0o644)
	cfg.BundleRefreshMinutes = 10
	if BundlesDue(root, cfg, t0.Add(9*time.Minute)) {
		t.Error("due 9 minutes after a fetch, with bundle_refresh_minutes 10")
	}
	if !BundlesDue(root, cfg, t0.Add(10*time.Minute)) {
		t.Error("not due 10 minutes after a fetch, with bundle_refresh_minutes 10")
	}
	// A second URL never fetched makes the set due.
	cfg.BundleURLs = append(cfg.BundleURLs, "https://example.com/c.tar.gz")
	if !BundlesDue(root, cfg, t0) {
		t.Error("not due though one bundle was never fetched")
	}
}

// bundle_jwks as an https URL: a pull fetches the JWKS and keeps it, and
// loading (no network) verifies with the kept copy.
func TestOrgBundleJWKSURL(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pk, _ := x509.MarshalPKCS8PrivateKey(k)
	priv := filepath.Join(t.TempDir(), "priv.pem")
	os.WriteFile(priv, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), 0o600)
	claims := filepath.Join(t.TempDir(), "claims.json")
	os.WriteFile(claims, []byte(`{"keyid": "acme-2026"}`), 0o644)
	testenv.Long(t)
	raw := opatest.Bundle(t, map[string]string{
		".manifest": `{"revision": "j1", "roots": ["des/gates/tool_use"]}`,
		"org.rego":  orgRule("ORG-JWKS", "team.txt"),
	}, "--signing-key", priv, "--signing-alg", "ES256", "--claims-file", claims)
	point, _ := k.PublicKey.Bytes()
	b64 := base64.RawURLEncoding.EncodeToString
	jwks, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{"kty": "EC", "kid": "acme-2026", "use": "sig", "crv": "P-256", "x": b64(point[1:33]), "y": b64(point[33:])}}})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/jwks.json" {
			w.Write(jwks)
			return
		}
		w.Write(raw)
	}))
	defer srv.Close()
	cfg := DefaultConfig()
	cfg.BundleURLs, cfg.BundleJWKS = []string{srv.URL + "/org.tar.gz"}, srv.URL+"/jwks.json"
	lookup := cacheEnv(t, nil)
	res, err := PullBundles(t.Context(), root, cfg, lookup, srv.Client())
	if err != nil || len(res) != 1 || res[0].Outcome != BundleUpdated || res[0].Key != srv.URL+"/jwks.json#acme-2026" {
		t.Fatalf("pull: %+v, %v", res, err)
	}
	srv.Close() // loading needs no network
	e, err := New(t.Context(), WithRoot(root), WithEnv(lookup), WithConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if codes := teamCodes(t, e); !slices.Contains(codes, "ORG-JWKS") {
		t.Errorf("codes %v, want ORG-JWKS", codes)
	}
	if st := BundleStatuses(t.Context(), root, cfg, lookup, time.Now()); len(st) != 1 || st[0].Problem != "" || st[0].Revision != "j1" {
		t.Errorf("status %+v", st)
	}
}

// What a team can and cannot do with the organisation's data: add beside
// it, yes; change a value the bundle sets, no (an error naming both files,
// so des stops rather than pick one).
func TestOrgBundleDataTeamCannotChange(t *testing.T) {
	t.Parallel()
	s := newOrgSetup(t)
	raw := signedBundle(t, s.priv, map[string]string{
		".manifest": `{"revision": "d1", "roots": ["des/exceptions", "acme"]}`,
		"data.json": `{"acme": {"max": 1}, "des": {"exceptions": {"unwaivable": ["ORG-ONE"]}}}`,
	})
	s.body.Store(&raw)
	if res := s.pull(t); res[0].Outcome != BundleUpdated {
		t.Fatalf("pull: %+v", res)
	}
	write := func(rel, body string) {
		p := filepath.Join(s.root, ".des", "policies", rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("acme/data.json", `{"min": 2}`)
	e, err := New(t.Context(), WithRoot(s.root), WithEnv(s.lookup))
	if err != nil {
		t.Fatal(err)
	}
	pe := policyOf(t, e)
	if v, _ := pe.Data("acme"); fmt.Sprint(v) != "map[max:1 min:2]" {
		t.Errorf("data.acme = %v", v)
	}
	for rel, body := range map[string]string{"acme/data.json": `{"max": 2}`, "des/exceptions/data.json": `{"unwaivable": []}`} {
		write("acme/data.json", `{"min": 2}`)
		write(rel, body)
		_, err := New(t.Context(), WithRoot(s.root), WithEnv(s.lookup))
		if err == nil || !strings.Contains(err.Error(), "is set here and, to another value, in") || !strings.Contains(err.Error(), ".des/bundles/acme-") {
			t.Errorf("team %s %s: %v, want a conflict naming the bundle", rel, body, err)
		}
		os.Remove(filepath.Join(s.root, ".des", "policies", rel))
	}
}

// The key that verifies the bundles is protected wherever the settings
// put it: whoever replaces it decides which bundles verify.
func TestBundleKeyFileProtected(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	cfg := DefaultConfig()
	cfg.BundleURLs, cfg.BundleJWKS = []string{"https://example.com/b.tar.gz"}, "keys/acme.jwks"
	cfg.BundlePublicKey = "keys/acme.pem"
	// Never fetched: New refuses, yet what it protects is known from the
	// settings; an Engine without bundles shows the same paths.
	cfg2 := cfg
	cfg2.BundleURLs = nil
	e, err := New(t.Context(), WithRoot(root), WithEnv(cacheEnv(t, nil)), WithConfig(cfg2))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"keys/acme.pem", "keys/acme.jwks"} {
		res, err := e.ToolUseGate().Check(t.Context(), e, gate.ToolCall{Tool: "Write", Paths: []string{p}})
		if err != nil || res.Decision.Allowed() || !slices.Contains(res.Decision.Codes(), "DES-PROTECTED-PATH") {
			t.Errorf("a write to %s: %+v, %v", p, res.Decision, err)
		}
	}
	if res, _ := e.ToolUseGate().Check(t.Context(), e, gate.ToolCall{Tool: "Write", Paths: []string{"keys/other.pem"}}); !res.Decision.Allowed() {
		t.Errorf("a write to another file: %+v", res.Decision)
	}
}

// bundle_urls and its key from the environment alone.
func TestBundleSettingsFromEnvironment(t *testing.T) {
	t.Parallel()
	cfg, err := LoadConfig(t.TempDir(), env(map[string]string{"DES_BUNDLE_URLS": "https://example.com/a.tar.gz, https://example.com/b.tar.gz", "DES_BUNDLE_PUBLIC_KEY": "k.pem"}))
	if err != nil || len(cfg.BundleURLs) != 2 || cfg.BundlePublicKey != "k.pem" {
		t.Fatalf("%+v, %v", cfg.BundleURLs, err)
	}
	if _, err := LoadConfig(t.TempDir(), env(map[string]string{"DES_BUNDLE_URLS": "https://example.com/a.tar.gz"})); err == nil {
		t.Error("bundle_urls without a key accepted")
	}
}

// Two bundles may not own one path, as in OPA.
func TestOrgBundlesOverlappingRoots(t *testing.T) {
	t.Parallel()
	s := newOrgSetup(t)
	s.publish(t, "r1", orgRule("ORG-ONE", "team.txt"))
	second := strings.Replace(s.url, "/acme.tar.gz", "/acme-too.tar.gz", 1)
	cfg := fmt.Sprintf(`{"bundle_urls": [%q, %q], "bundle_public_key": ".des/org.pem", "bundle_token_env": "DES_ACME_TOKEN"}`, s.url, second)
	os.WriteFile(filepath.Join(s.root, ".des", "config.json"), []byte(cfg), 0o644)
	for _, p := range s.pull(t) {
		if p.Outcome != BundleUpdated {
			t.Fatalf("pull: %+v", p)
		}
	}
	_, err := New(t.Context(), WithRoot(s.root), WithEnv(s.lookup))
	var be *BundleError
	if !errors.As(err, &be) || be.URL != second || !strings.Contains(err.Error(), `overlaps the root "des/gates/tool_use" of bundle `+s.url) || strings.Contains(err.Error(), "bundle pull") {
		t.Fatalf("New with overlapping bundles: %v", err)
	}
}

// An organisation's bundle makes its code unwaivable: a team's exception
// for it is DES-EXCEPTION-REFUSED, and the code still denies.
func TestOrgBundleUnwaivableCode(t *testing.T) {
	t.Parallel()
	s := newOrgSetup(t)
	raw := signedBundle(t, s.priv, map[string]string{
		".manifest":                `{"revision": "r1", "roots": ["des/gates/tool_use", "des/exceptions"]}`,
		"org.rego":                 orgRule("ORG-ONE", "team.txt"),
		"des/exceptions/data.json": `{"unwaivable": ["ORG-ONE"]}`,
	})
	s.body.Store(&raw)
	if res := s.pull(t); res[0].Outcome != BundleUpdated {
		t.Fatalf("pull: %+v", res)
	}
	teamPolicy(t, s.root, "team.rego", "TEAM-ONE")
	os.WriteFile(filepath.Join(s.root, ".des", "policies", "waive.rego"), []byte("package des.gates.tool_use\n\nexception contains \"ORG-ONE\"\n\nexception contains \"DES-EXCEPTION-REFUSED\"\n\nexception contains \"TEAM-ONE\"\n"), 0o644)
	e, err := New(t.Context(), WithRoot(s.root), WithEnv(s.lookup))
	if err != nil {
		t.Fatal(err)
	}
	codes := teamCodes(t, e)
	if !slices.Contains(codes, "DES-EXCEPTION-REFUSED") || slices.Contains(codes, "TEAM-ONE") {
		t.Errorf("codes %v: want DES-EXCEPTION-REFUSED (not waivable) and TEAM-ONE waived by the team", codes)
	}
}

// A bundle signed with `opa sign` (the signature written into the bundle
// directory, then packed by any tar) verifies as one `opa build` signed;
// a file changed after `opa sign` is refused.
func TestOrgBundleSignedWithOpaSign(t *testing.T) {
	t.Parallel()
	s := newOrgSetup(t)
	dir := t.TempDir()
	files := map[string]string{
		".manifest": `{"revision": "signed-by-opa-sign", "roots": ["des/gates/tool_use"]}`,
		"org.rego":  orgRule("ORG-SIGN", "team.txt"),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(opaBinary(t), "sign", "--signing-key", s.priv, "--bundle", ".")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("opa sign: %v\n%s", err, out)
	}
	pack := func() []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		tw := tar.NewWriter(zw)
		for _, name := range []string{".manifest", "org.rego", ".signatures.json"} {
			body, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
			tw.Write(body)
		}
		tw.Close()
		zw.Close()
		return buf.Bytes()
	}
	raw := pack()
	s.body.Store(&raw)
	if res := s.pull(t); res[0].Outcome != BundleUpdated || res[0].Revision != "signed-by-opa-sign" {
		t.Fatalf("pull of an opa sign bundle: %+v", res)
	}
	e, err := New(t.Context(), WithRoot(s.root), WithEnv(s.lookup))
	if err != nil {
		t.Fatal(err)
	}
	if codes := teamCodes(t, e); !slices.Contains(codes, "ORG-SIGN") {
		t.Errorf("codes %v, want the signed bundle's ORG-SIGN", codes)
	}

	os.WriteFile(filepath.Join(dir, "org.rego"), []byte(orgRule("ORG-SIGN", "other.txt")), 0o644)
	raw = pack()
	s.body.Store(&raw)
	if res := s.pull(t); res[0].Outcome != BundleFailed || !strings.Contains(res[0].Error, s.url) {
		t.Fatalf("pull of a bundle changed after opa sign: %+v", res)
	}
}
