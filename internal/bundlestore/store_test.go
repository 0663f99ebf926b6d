package bundlestore_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode"

	"github.com/deterministic-exec/des/internal/bundlestore"
	"github.com/deterministic-exec/des/internal/opatest"
	"github.com/deterministic-exec/des/internal/testenv"
)

// opaBin is the OPA CLI pinned in go.mod; the tests that need it are
// long tests.
func opaBin(t *testing.T) string {
	t.Helper()
	testenv.Long(t)
	return opatest.Binary(t)
}

const teamRego = `package des.gates.tool_use

# METADATA
# title: No writes to secrets
# custom:
#   code: ORG-NO-SECRETS
#   severity: deny
deny contains {"code": "ORG-NO-SECRETS", "msg": "secrets are off limits"} if {
	contains(input.tool_input.file_path, "secrets")
}
`

const goodManifest = `{"revision": "rev-1", "roots": ["acme", "des/gates/tool_use"]}`

// build runs opa build on a directory of files and returns the bundle.
func build(t *testing.T, files map[string]string, args ...string) []byte {
	t.Helper()
	testenv.Long(t)
	return opatest.Bundle(t, files, args...)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

type keyPair struct {
	priv, pub string // PEM files
	jwk       map[string]any
}

func writeKey(t *testing.T, priv any, pub any) keyPair {
	t.Helper()
	dir := t.TempDir()
	pk, err := x509.MarshalPKCS8PrivateKey(priv)
	must(t, err)
	der, err := x509.MarshalPKIXPublicKey(pub)
	must(t, err)
	kp := keyPair{priv: filepath.Join(dir, "priv.pem"), pub: filepath.Join(dir, "pub.pem")}
	must(t, os.WriteFile(kp.priv, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), 0o600))
	must(t, os.WriteFile(kp.pub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644))
	b64 := base64.RawURLEncoding.EncodeToString
	switch k := pub.(type) {
	case *rsa.PublicKey:
		kp.jwk = map[string]any{"kty": "RSA", "n": b64(k.N.Bytes()), "e": b64([]byte{1, 0, 1})}
	case *ecdsa.PublicKey:
		b, err := k.Bytes()
		must(t, err)
		kp.jwk = map[string]any{"kty": "EC", "crv": "P-256", "x": b64(b[1:33]), "y": b64(b[33:])}
	}
	return kp
}

func rsaKey(t *testing.T) keyPair {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	must(t, err)
	return writeKey(t, k, &k.PublicKey)
}

func ecKey(t *testing.T) keyPair {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	return writeKey(t, k, &k.PublicKey)
}

func pemKeys(t *testing.T, path string) *bundlestore.Keys {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	k, err := bundlestore.KeysFromPEM(b, path)
	must(t, err)
	return k
}

// server serves one bundle with an ETag, honours If-None-Match and wants
// a bearer token.
type server struct {
	*httptest.Server
	body     atomic.Pointer[[]byte]
	gets     atomic.Int32
	notMods  atomic.Int32
	token    string
	lastAuth atomic.Value
}

func serve(t *testing.T, body []byte, token string) *server {
	s := &server{token: token}
	s.body.Store(&body)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.gets.Add(1)
		if s.token != "" && r.Header.Get("Authorization") != "Bearer "+s.token {
			http.Error(w, "no entry", http.StatusUnauthorized)
			return
		}
		b := *s.body.Load()
		sum := sha256.Sum256(b)
		etag := `"` + hex.EncodeToString(sum[:8]) + `"`
		if r.Header.Get("If-None-Match") == etag {
			s.notMods.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", etag)
		w.Write(b)
	}))
	t.Cleanup(s.Close)
	return s
}

func newStore(t *testing.T, keys *bundlestore.Keys, token string) *bundlestore.Store {
	return bundlestore.New(bundlestore.Options{Dir: t.TempDir(), Keys: keys, Token: token, Whole: []string{"des"}, Reserved: []string{"des/config"}})
}

func TestPullRSAThenNotModified(t *testing.T) {
	t.Parallel()
	rk := rsaKey(t)
	raw := build(t, map[string]string{".manifest": goodManifest, "policy.rego": teamRego, "acme/data.json": `{"owners": ["ana"]}`}, "--signing-key", rk.priv)
	srv := serve(t, raw, "s3cret")
	st := newStore(t, pemKeys(t, rk.pub), "s3cret")
	ctx := context.Background()

	m, out, err := st.Pull(ctx, srv.URL+"/org.tar.gz")
	if err != nil || out != bundlestore.Updated {
		t.Fatalf("first pull: %v, %v", out, err)
	}
	if m.Revision != "rev-1" || m.ETag == "" || m.Key != rk.pub || strings.Join(m.Roots, ",") != "acme,des/gates/tool_use" {
		t.Errorf("meta %+v", m)
	}
	m2, out, err := st.Pull(ctx, srv.URL+"/org.tar.gz")
	if err != nil || out != bundlestore.NotModified || srv.notMods.Load() != 1 {
		t.Fatalf("second pull: %v, %v (304s %d)", out, err, srv.notMods.Load())
	}
	if m2.Revision != "rev-1" || !m2.FetchedAt.After(m.FetchedAt) && !m2.FetchedAt.Equal(m.FetchedAt) {
		t.Errorf("after 304: %+v", m2)
	}
	b, err := st.Load(srv.URL + "/org.tar.gz")
	must(t, err)
	// opa build names a module by the path it was given (the temporary
	// directory's), so it is found by its base name.
	var regos []string
	fs.WalkDir(b.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && path.Base(p) == "policy.rego" {
			regos = append(regos, p)
		}
		return nil
	})
	if len(regos) != 1 {
		t.Fatalf("policy.rego in the loaded bundle: %v", regos)
	}
	if rego, err := fs.ReadFile(b.FS, regos[0]); err != nil || string(rego) != teamRego {
		t.Errorf("policy.rego in the loaded bundle: %q, %v", rego, err)
	}
	data, err := fs.ReadFile(b.FS, "data.json")
	if err != nil || !strings.Contains(string(data), `"owners":["ana"]`) {
		t.Errorf("data.json in the loaded bundle: %s, %v", data, err)
	}
	if filepath.Dir(b.Path) != st.Dir(srv.URL+"/org.tar.gz") || !strings.HasPrefix(filepath.Base(filepath.Dir(b.Path)), "org-") {
		t.Errorf("kept at %s", b.Path)
	}
}

func TestPullNeedsToken(t *testing.T) {
	t.Parallel()
	rk := rsaKey(t)
	raw := build(t, map[string]string{".manifest": goodManifest, "policy.rego": teamRego}, "--signing-key", rk.priv)
	srv := serve(t, raw, "s3cret")
	st := newStore(t, pemKeys(t, rk.pub), "wrong")
	_, _, err := st.Pull(context.Background(), srv.URL+"/b.tar.gz")
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), srv.URL+"/b.tar.gz") || !strings.Contains(err.Error(), "bundle_token_env") {
		t.Fatalf("pull with a wrong token: %v", err)
	}
}

func TestPullES256JWKSAndHMAC(t *testing.T) {
	t.Parallel()
	ek := ecKey(t)
	dir := t.TempDir()
	claims := filepath.Join(dir, "claims.json")
	must(t, os.WriteFile(claims, []byte(`{"keyid": "org-2026"}`), 0o644))
	raw := build(t, map[string]string{".manifest": goodManifest, "policy.rego": teamRego},
		"--signing-key", ek.priv, "--signing-alg", "ES256", "--claims-file", claims)
	srv := serve(t, raw, "")

	jwk := ek.jwk
	jwk["kid"] = "org-2026"
	jwks, _ := json.Marshal(map[string]any{"keys": []any{jwk}})
	keys, err := bundlestore.KeysFromJWKS(jwks, "jwks.json")
	must(t, err)
	m, _, err := newStore(t, keys, "").Pull(context.Background(), srv.URL+"/es.tar.gz")
	if err != nil || m.Key != "jwks.json#org-2026" {
		t.Fatalf("ES256 via JWKS: %+v, %v", m, err)
	}

	// The wrong kid: the JWKS has no key for the signature.
	jwk["kid"] = "org-2025"
	jwks, _ = json.Marshal(map[string]any{"keys": []any{jwk}})
	keys, err = bundlestore.KeysFromJWKS(jwks, "jwks.json")
	must(t, err)
	_, _, err = newStore(t, keys, "").Pull(context.Background(), srv.URL+"/es.tar.gz")
	if err == nil || !strings.Contains(err.Error(), "org-2026") || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("JWKS with the wrong kid: %v", err)
	}

	// The same key as a PEM file.
	m, _, err = newStore(t, pemKeys(t, ek.pub), "").Pull(context.Background(), srv.URL+"/es.tar.gz")
	if err != nil || m.Key != ek.pub {
		t.Fatalf("ES256 via PEM: %+v, %v", m, err)
	}

	// HMAC: a secret file, no PEM block.
	secret := filepath.Join(dir, "secret")
	must(t, os.WriteFile(secret, []byte("a shared secret of the organisation"), 0o600))
	raw = build(t, map[string]string{".manifest": goodManifest, "policy.rego": teamRego}, "--signing-key", secret, "--signing-alg", "HS256")
	srv.body.Store(&raw)
	if _, _, err := newStore(t, pemKeys(t, secret), "").Pull(context.Background(), srv.URL+"/hs.tar.gz"); err != nil {
		t.Fatalf("HS256: %v", err)
	}
	octJWKS, _ := json.Marshal(map[string]any{"keys": []any{map[string]any{"kty": "oct", "kid": "k", "k": base64.RawURLEncoding.EncodeToString([]byte("another secret"))}}})
	keys, err = bundlestore.KeysFromJWKS(octJWKS, "jwks.json")
	must(t, err)
	if _, _, err := newStore(t, keys, "").Pull(context.Background(), srv.URL+"/hs.tar.gz"); err == nil {
		t.Fatal("HS256 bundle verified by another secret")
	}
}

// retar rewrites a bundle: edit returns a file's new content, or false to
// drop it; extra files are added at the end.
func retar(t *testing.T, raw []byte, edit func(name string, data []byte) ([]byte, bool), extra map[string]string) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	must(t, err)
	tr := tar.NewReader(zr)
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	tw := tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		must(t, err)
		data, err := io.ReadAll(tr)
		must(t, err)
		if edit != nil {
			var keep bool
			if data, keep = edit(h.Name, data); !keep {
				continue
			}
		}
		h.Size = int64(len(data))
		must(t, tw.WriteHeader(h))
		_, err = tw.Write(data)
		must(t, err)
	}
	for name, body := range extra {
		must(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(body))
		must(t, err)
	}
	must(t, tw.Close())
	must(t, zw.Close())
	return out.Bytes()
}

func TestRefused(t *testing.T) {
	t.Parallel()
	rk, other := rsaKey(t), rsaKey(t)
	signed := build(t, map[string]string{".manifest": goodManifest, "policy.rego": teamRego}, "--signing-key", rk.priv)
	changed := retar(t, signed, func(name string, data []byte) ([]byte, bool) {
		if strings.HasSuffix(name, "policy.rego") {
			return bytes.Replace(data, []byte(`"secrets"`), []byte(`"nothing"`), 1), true
		}
		return data, true
	}, nil)
	for _, tc := range []struct {
		name string
		raw  []byte
		max  int64
		want string
	}{
		{"unsigned", build(t, map[string]string{".manifest": goodManifest, "policy.rego": teamRego}), 0, "missing .signatures.json"},
		{"another key", build(t, map[string]string{".manifest": goodManifest, "policy.rego": teamRego}, "--signing-key", other.priv), 0, "verify"},
		{"changed after signing", changed, 0, "digest mismatch"},
		{"extra file", retar(t, signed, nil, map[string]string{"/extra.rego": "package acme\n\nx := 1\n"}), 0, "not included in bundle signature"},
		{"oversized", signed, 100, "larger than 100 bytes"},
		{"not gzip", []byte("<html>not found</html>"), 0, "not gzip"},
		{"no roots", build(t, map[string]string{"policy.rego": teamRego}, "--signing-key", rk.priv), 0, "declares no roots"},
		{"root des", build(t, map[string]string{".manifest": `{"roots": ["des"]}`, "policy.rego": teamRego}, "--signing-key", rk.priv), 0, `root "des" claims all of "des"`},
		{"root des/config", build(t, map[string]string{".manifest": `{"roots": ["des/config", "des/gates"]}`, "policy.rego": teamRego}, "--signing-key", rk.priv), 0, `overlaps "des/config"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(t, signed, "")
			url := srv.URL + "/org.tar.gz"
			st := bundlestore.New(bundlestore.Options{Dir: t.TempDir(), Keys: pemKeys(t, rk.pub), MaxBytes: tc.max, Whole: []string{"des"}, Reserved: []string{"des/config"}})
			var kept bundlestore.Meta
			if tc.max == 0 {
				// A good copy first: the refused one must leave it.
				var err error
				if kept, _, err = st.Pull(context.Background(), url); err != nil {
					t.Fatal(err)
				}
			}
			srv.body.Store(&tc.raw)
			_, _, err := st.Pull(context.Background(), url)
			var be *bundlestore.Error
			if !errors.As(err, &be) || be.URL != url || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("pull: %v, want a *bundlestore.Error naming %s and %q", err, url, tc.want)
			}
			if tc.max != 0 {
				return
			}
			b, err := st.Load(url)
			if err != nil || b.SHA256 != kept.SHA256 {
				t.Fatalf("the kept copy after a refused pull: %v", err)
			}
		})
	}
}

func TestLoadRefusesTamperedCopy(t *testing.T) {
	t.Parallel()
	rk := rsaKey(t)
	signed := build(t, map[string]string{".manifest": goodManifest, "policy.rego": teamRego}, "--signing-key", rk.priv)
	srv := serve(t, signed, "")
	url := srv.URL + "/org.tar.gz"
	st := newStore(t, pemKeys(t, rk.pub), "")

	_, err := st.Load(url)
	if !errors.Is(err, bundlestore.ErrNotFetched) || !strings.Contains(err.Error(), url) {
		t.Fatalf("load before any pull: %v", err)
	}
	if _, _, err := st.Pull(context.Background(), url); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(st.Dir(url), bundlestore.BundleFile)
	tampered := retar(t, signed, func(name string, data []byte) ([]byte, bool) {
		return bytes.ReplaceAll(data, []byte("secrets"), []byte("nothing")), true
	}, nil)
	must(t, os.WriteFile(p, tampered, 0o644))
	_, err = st.Load(url)
	if err == nil || !strings.Contains(err.Error(), "kept copy") || !strings.Contains(err.Error(), "digest mismatch") || !strings.Contains(err.Error(), url) {
		t.Fatalf("load of a tampered copy: %v", err)
	}
	// A 304 does not vouch for it: the pull fetches the bundle afresh.
	_, out, err := st.Pull(context.Background(), url)
	if err != nil || out != bundlestore.Updated || srv.notMods.Load() != 0 {
		t.Fatalf("pull over a tampered copy: %v, %v (304s %d)", out, err, srv.notMods.Load())
	}
	if _, err := st.Load(url); err != nil {
		t.Fatalf("load after the pull restored it: %v", err)
	}
}

func TestKeysRefused(t *testing.T) {
	t.Parallel()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	if _, err := bundlestore.KeysFromPEM(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), "k.pem"); err == nil || !strings.Contains(err.Error(), "private key") {
		t.Errorf("private key: %v", err)
	}
	for _, tc := range []struct{ jwks, want string }{
		{`{"keys": [{"kty": "RSA", "n": "AQAB", "e": "AQAB"}]}`, `no "kid"`},
		{`{"keys": [{"kty": "EC", "kid": "a", "crv": "P-256", "x": "AA", "y": "AA"}]}`, "EC key needs"},
		{`{"keys": [{"kty": "EC", "kid": "a", "crv": "P-256", "d": "AA"}]}`, "private key"},
		{`{"keys": [{"kty": "RSA", "kid": "a", "use": "enc", "n": "AQAB", "e": "AQAB"}]}`, "no signature key"},
		{`not json`, "not a JSON Web Key Set"},
	} {
		if _, err := bundlestore.KeysFromJWKS([]byte(tc.jwks), "j"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.jwks, err, tc.want)
		}
	}
	_ = fmt.Sprint()
}

// A Memo never vouches for a kept file replaced since it was verified,
// however soon, nor for one verified with other keys.
func TestMemoSeesReplacedCopy(t *testing.T) {
	t.Parallel()
	rk, other := rsaKey(t), rsaKey(t)
	signed := build(t, map[string]string{".manifest": goodManifest, "policy.rego": teamRego}, "--signing-key", rk.priv)
	srv := serve(t, signed, "")
	url := srv.URL + "/org.tar.gz"
	memo := bundlestore.NewMemo()
	dir := t.TempDir()
	st := bundlestore.New(bundlestore.Options{Dir: dir, Keys: pemKeys(t, rk.pub), Memo: memo, Whole: []string{"des"}})
	if _, _, err := st.Pull(context.Background(), url); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(st.Dir(url), bundlestore.BundleFile)
	old := time.Now().Add(-time.Hour) // out of the memo's racy window
	must(t, os.Chtimes(p, old, old))
	for range 2 {
		if _, err := st.Load(url); err != nil {
			t.Fatal(err)
		}
	}
	// Another key: verified afresh, and refused.
	st2 := bundlestore.New(bundlestore.Options{Dir: dir, Keys: pemKeys(t, other.pub), Memo: memo, Whole: []string{"des"}})
	if _, err := st2.Load(url); err == nil {
		t.Fatal("the memo vouched for a bundle under another key")
	}
	// Replaced by a rename, as a pull or an editor does, with the old times.
	tampered := retar(t, signed, func(name string, data []byte) ([]byte, bool) {
		return bytes.ReplaceAll(data, []byte("secrets"), []byte("nothings")), true
	}, nil)
	tmp := p + ".new"
	must(t, os.WriteFile(tmp, tampered, 0o644))
	must(t, os.Chtimes(tmp, old, old))
	must(t, os.Rename(tmp, p))
	if _, err := st.Load(url); err == nil || !strings.Contains(err.Error(), "digest mismatch") {
		t.Fatalf("load of a replaced copy through the memo: %v", err)
	}
}

func TestNameIsSafeAndDistinct(t *testing.T) {
	t.Parallel()
	for url, prefix := range map[string]string{
		"https://example.com/acme.tar.gz":          "acme-",
		"https://example.com/a%20b/c d é.tar.gz?x": "c-d-",
		"https://example.com/../..":                "bundle-",
		"https://example.com/":                     "example.com-",
	} {
		n := bundlestore.Name(url)
		if !strings.HasPrefix(n, prefix) || strings.ContainsAny(n, "/\\ %?é") {
			t.Errorf("Name(%q) = %q, want a safe name starting %q", url, n, prefix)
		}
	}
	if bundlestore.Name("https://a.example/x.tar.gz") == bundlestore.Name("https://b.example/x.tar.gz") {
		t.Error("two URLs share a name")
	}
}

// A bundle server's words reach the developer's terminal (bundle pull, and
// status and version through meta.json's last_error): control characters
// in them (terminal escapes that rewrite the screen, set the clipboard or
// hide a line) are dropped, from an error page and from a refused
// archive's file names alike.
func TestPullFailureIsPrintable(t *testing.T) {
	t.Parallel()
	rk := rsaKey(t)
	signed := build(t, map[string]string{".manifest": goodManifest, "policy.rego": teamRego}, "--signing-key", rk.priv)
	esc := "\x1b[2K\r\x1b]52;c;cHduZWQ=\x07\u009b31m"
	for _, tc := range []struct {
		name string
		page string // an error page, or else an archive
		raw  []byte
	}{
		{"error page", "maintenance " + esc + "all fine", nil},
		{"file name", "", retar(t, signed, nil, map[string]string{"/x" + esc + ".rego": "package acme\n\nx := 1\n"})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(t, signed, "")
			url := srv.URL + "/org.tar.gz"
			st := newStore(t, pemKeys(t, rk.pub), "")
			if _, _, err := st.Pull(context.Background(), url); err != nil {
				t.Fatal(err)
			}
			if tc.page != "" {
				srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					http.Error(w, tc.page, http.StatusServiceUnavailable)
				})
			} else {
				srv.body.Store(&tc.raw)
			}
			_, _, err := st.Pull(context.Background(), url)
			if err == nil {
				t.Fatal("the pull did not fail")
			}
			m, ok := st.Kept(url)
			if !ok || m.LastError == "" {
				t.Fatalf("last_error not kept: %+v", m)
			}
			for what, s := range map[string]string{"the error": err.Error(), "last_error": m.LastError} {
				if i := strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }); i >= 0 {
					t.Errorf("%s holds control character %U: %q", what, []rune(s[i:])[0], s)
				}
			}
		})
	}
}
