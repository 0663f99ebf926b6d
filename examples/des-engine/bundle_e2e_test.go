package main

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/opatest"
	"github.com/deterministic-exec/des/internal/testenv"
)

// opaCLIPath is the OPA CLI pinned in go.mod; the tests that need it are
// long tests.
func opaCLIPath(t *testing.T) string {
	t.Helper()
	testenv.Long(t)
	return opatest.Binary(t)
}

// acmeRule is the organisation's rule: the workflow state is frozen.
const acmeRule = `package des.gates.document_write

# METADATA
# title: The workflow state is frozen
# custom:
#   code: ACME-STATE-FROZEN
#   severity: deny
deny contains {"code": "ACME-STATE-FROZEN", "msg": "the organisation froze .des/state.json"} if {
	some w in input.writes
	w.path == ".des/state.json"
}
`

// opaBuild builds a bundle of files with opa build, signed with key when
// it is not "".
func opaBuild(t *testing.T, key string, files map[string]string) []byte {
	t.Helper()
	testenv.Long(t)
	if key == "" {
		return opatest.Bundle(t, files)
	}
	return opatest.Bundle(t, files, "--signing-key", key)
}

// An organisation's bundle, end to end through the built binaries: des
// refuses to decide before it is fetched, `bundle pull` fetches it (or the
// warm server did already), its rule denies, status and version show it, a
// kept copy changed on disk is refused, and a bundle the server publishes
// unsigned leaves the kept one in use.
func TestE2EOrganisationBundle(t *testing.T) {
	t.Parallel()
	opaCLIPath(t)
	root := t.TempDir()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pk, _ := x509.MarshalPKCS8PrivateKey(k)
	der, _ := x509.MarshalPKIXPublicKey(&k.PublicKey)
	priv := filepath.Join(t.TempDir(), "signing.pem")
	if err := os.WriteFile(priv, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), 0o600); err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, ".des/acme.pem", string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})))

	var body atomic.Pointer[[]byte]
	publish := func(raw []byte) { body.Store(&raw) }
	publish(opaBuild(t, priv, map[string]string{".manifest": `{"revision": "acme-1", "roots": ["des/gates/document_write"]}`, "acme.rego": acmeRule}))
	var gets atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gets.Add(1)
		if r.Header.Get("Authorization") != "Bearer acme-token" {
			http.Error(w, "unauthorised", http.StatusUnauthorized)
			return
		}
		b := *body.Load()
		etag := fmt.Sprintf(`"%d-%x"`, len(b), b[len(b)-16:])
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", etag)
		w.Write(b)
	}))
	defer srv.Close()
	url := srv.URL + "/bundles/acme.tar.gz"
	writeFile(t, root, ".des/config.json", fmt.Sprintf(`{"bundle_urls": [%q], "bundle_public_key": ".des/acme.pem"}`, url))
	env := []string{"DES_BUNDLE_TOKEN=acme-token"}
	sub := func(args ...string) hookRun {
		return runSub(t, root, "", append([]string{"CLAUDE_PROJECT_DIR=" + root}, env...), args...)
	}
	state := writeEvent(root, "Write", ".des/state.json")

	// Never fetched: no decision without the organisation's rules.
	reason := denyReason(t, runHookProcess(t, root, env, writeEvent(root, "Write", ".des/policies/x.rego")))
	if !strings.HasPrefix(reason, "[DES-INTERNAL] ") || !strings.Contains(reason, url) || !strings.Contains(reason, "des-hook bundle pull") {
		t.Fatalf("before any pull: %q, want DES-INTERNAL naming the bundle and the fix", reason)
	}
	// The warm server may have fetched it in the background already.
	if r := sub("status"); !strings.Contains(r.stdout, url) || (!strings.Contains(r.stdout, "NOT IN USE") || !strings.Contains(r.stdout, "never")) &&
		(testDecisionServer != "auto" || !strings.Contains(r.stdout, "acme-1")) {
		t.Errorf("status before any pull:\n%s%s", r.stdout, r.stderr)
	}
	if testDecisionServer == "auto" {
		// The warm server fetches it in the background. (The first event
		// may have been decided while the server started.)
		deadline := time.Now().Add(15 * time.Second)
		for {
			if m, _ := filepath.Glob(filepath.Join(root, ".des/bundles/acme-*/bundle.tar.gz")); len(m) == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the decision server did not fetch the bundle (%d requests)", gets.Load())
			}
			runHookProcess(t, root, env, writeEvent(root, "Write", "src/main.go"))
			time.Sleep(100 * time.Millisecond)
		}
	}

	r := sub("bundle", "pull", "--json")
	var pulled struct {
		Bundles []struct {
			URL, Revision, Outcome, Key string
		} `json:"bundles"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &pulled); err != nil || r.code != 0 || len(pulled.Bundles) != 1 {
		t.Fatalf("bundle pull --json = %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if b := pulled.Bundles[0]; b.URL != url || b.Revision != "acme-1" || b.Key != ".des/acme.pem" ||
		(b.Outcome != "updated" && b.Outcome != "not modified") {
		t.Errorf("bundle pull: %+v", b)
	}
	if r := sub("bundle", "pull"); r.code != 0 || strings.TrimSpace(r.stdout) != url+"  revision acme-1  not modified" {
		t.Errorf("second bundle pull = %d %q %s", r.code, r.stdout, r.stderr)
	}

	if reason := denyReason(t, runHookProcess(t, root, env, state)); !strings.HasPrefix(reason, "[ACME-STATE-FROZEN] ") {
		t.Fatalf("write the bundle's rule denies: %q", reason)
	}
	if reason := denyReason(t, runHookProcess(t, root, env, writeEvent(root, "Write", "src/main.go"))); reason != "" {
		t.Errorf("unrelated write: %q", reason)
	}
	for _, cmd := range []string{"status", "version"} {
		r := sub(cmd)
		for _, want := range []string{"decisions: embedded", url, "acme-1", ".des/acme.pem", "active"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("%s lacks %q:\n%s%s", cmd, want, r.stdout, r.stderr)
			}
		}
	}
	// Bundles that verify but policies that do not load with them: the pull
	// says so and exits 1.
	writeFile(t, root, ".des/policies/broken.rego", "package des.gates.tool_use\n\ndeny contains x if {\n")
	if r := sub("bundle", "pull"); r.code != 1 || !strings.Contains(r.stderr, "do not load") || !strings.Contains(r.stderr, "broken.rego") {
		t.Errorf("pull with policies that do not load: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	os.Remove(filepath.Join(root, ".des/policies/broken.rego"))

	// With an OPA server deciding, the kept bundle is said not to decide.
	r = runSub(t, root, "", append([]string{"CLAUDE_PROJECT_DIR=" + root, "DES_OPA_URL=http://127.0.0.1:1"}, env...), "status")
	if !strings.Contains(r.stdout, "decisions: http://127.0.0.1:1") || !strings.Contains(r.stdout, "kept, not deciding: decisions on opa_url") {
		t.Errorf("status with opa_url:\n%s%s", r.stdout, r.stderr)
	}
	r = sub("version", "--json")
	var ver struct {
		DecisionPoint string `json:"decision_point"`
		Bundles       []struct {
			URL       string    `json:"url"`
			Revision  string    `json:"revision"`
			FetchedAt time.Time `json:"fetched_at"`
			Key       string    `json:"key"`
		} `json:"bundles"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &ver); err != nil || ver.DecisionPoint != "embedded" || len(ver.Bundles) != 1 ||
		ver.Bundles[0].Revision != "acme-1" || ver.Bundles[0].FetchedAt.IsZero() || ver.Bundles[0].Key != ".des/acme.pem" {
		t.Errorf("version --json = %v\n%s", err, r.stdout)
	}

	// The kept copy replaced on disk by a bundle signed with another key.
	kept, _ := filepath.Glob(filepath.Join(root, ".des/bundles/acme-*/bundle.tar.gz"))
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	opk, _ := x509.MarshalPKCS8PrivateKey(other)
	otherPriv := filepath.Join(t.TempDir(), "other.pem")
	os.WriteFile(otherPriv, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: opk}), 0o600)
	if err := os.WriteFile(kept[0], opaBuild(t, otherPriv, map[string]string{".manifest": `{"revision": "forged", "roots": ["des/gates/document_write"]}`, "acme.rego": "package des.gates.document_write\n"}), 0o644); err != nil {
		t.Fatal(err)
	}
	reason = denyReason(t, runHookProcess(t, root, env, state))
	if !strings.HasPrefix(reason, "[DES-INTERNAL] ") || !strings.Contains(reason, url) || !strings.Contains(reason, "kept copy") || !strings.Contains(reason, "des-hook bundle pull") {
		t.Fatalf("a forged kept copy: %q", reason)
	}
	if r := sub("bundle", "pull"); r.code != 0 || !strings.Contains(r.stdout, "acme-1  updated") {
		t.Fatalf("bundle pull over a forged copy = %d %q %s", r.code, r.stdout, r.stderr)
	}

	// The server publishes an unsigned bundle: refused, the kept one stays.
	publish(opaBuild(t, "", map[string]string{".manifest": `{"revision": "acme-2", "roots": ["des/gates/document_write"]}`, "acme.rego": "package des.gates.document_write\n"}))
	r = sub("bundle", "pull")
	if r.code != 1 || !strings.Contains(r.stdout, url) || !strings.Contains(r.stdout, "missing .signatures.json") || !strings.Contains(r.stdout, "still in use: revision acme-1") {
		t.Errorf("bundle pull of an unsigned bundle = %d %q %s", r.code, r.stdout, r.stderr)
	}
	if reason := denyReason(t, runHookProcess(t, root, env, state)); !strings.HasPrefix(reason, "[ACME-STATE-FROZEN] ") {
		t.Errorf("after a refused pull: %q, want the kept bundle's rule", reason)
	}
	// status says the kept copy is in use and the last pull failed, and why.
	if r := sub("status"); !strings.Contains(r.stdout, "acme-1") || !strings.Contains(r.stdout, "last pull failed") || !strings.Contains(r.stdout, "missing .signatures.json") {
		t.Errorf("status after a refused pull:\n%s%s", r.stdout, r.stderr)
	}
}
