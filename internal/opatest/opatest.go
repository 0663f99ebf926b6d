// Package opatest starts real OPA servers for des's tests: the OPA CLI
// pinned in go.mod (`go tool -n opa`), on a free loopback port, stopped when
// the test ends. Tests that use it are long tests (testenv.Long): the first
// use builds the OPA binary into the build cache.
package opatest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/testenv"
)

// binary is built once per test process: `go tool -n opa` builds it.
var binary = sync.OnceValues(func() (string, error) {
	out, err := exec.Command("go", "tool", "-n", "opa").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return "", fmt.Errorf("go tool -n opa (run from inside the des module): %w", err)
	}
	return strings.TrimSpace(string(out)), nil
})

// Binary returns the path of the OPA CLI pinned in go.mod. It skips t
// unless the long tests run (testenv.Long): building the CLI costs a
// newcomer's first `go test ./...` about a minute of CPU.
func Binary(t testing.TB) string {
	t.Helper()
	testenv.Long(t)
	p, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Bundle writes files (slash-separated names, under one bundle directory)
// and builds them with `opa build --bundle DIR` and args (a signing key, its
// algorithm, claims...), returning the .tar.gz.
func Bundle(t testing.TB, files map[string]string, args ...string) []byte {
	t.Helper()
	src, out := t.TempDir(), filepath.Join(t.TempDir(), "bundle.tar.gz")
	for name, body := range files {
		p := filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := exec.Command(Binary(t), append([]string{"build", "--bundle", src, "-o", out}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("opa build: %v\n%s", err, b)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// Server is a running `opa run --server`.
type Server struct {
	URL string // http://127.0.0.1:port, or https:// with TLS
	out *bytes.Buffer
	mu  *sync.Mutex
}

// Log returns what the server printed so far.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// Options configure Start.
type Options struct {
	// Args are extra flags for `opa run --server`, before the paths.
	Args []string
	// TLS, when set, serves https with this certificate (see NewCA).
	TLS *Cert
}

// Start runs `opa run --server --addr 127.0.0.1:<free port> <paths>` and
// waits for it to answer /health. The server is killed when t ends.
func Start(t testing.TB, o Options, paths ...string) *Server {
	t.Helper()
	bin := Binary(t)
	var last error
	for range 3 { // the free port may be taken between finding and binding it
		s, err := start(t, bin, o, paths)
		if err == nil {
			return s
		}
		last = err
	}
	t.Fatalf("start OPA server: %v", last)
	return nil
}

func start(t testing.TB, bin string, o Options, paths []string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	args := []string{"run", "--server", "--addr", addr, "--log-level", "error", "--disable-telemetry"}
	scheme := "http"
	client := &http.Client{Timeout: time.Second}
	if o.TLS != nil {
		scheme = "https"
		args = append(args, "--tls-cert-file", o.TLS.CertFile, "--tls-private-key-file", o.TLS.KeyFile)
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: o.TLS.Pool}}
	}
	args = append(append(args, o.Args...), paths...)
	s := &Server{URL: scheme + "://" + addr, out: &bytes.Buffer{}, mu: &sync.Mutex{}}
	cmd := exec.Command(bin, args...)
	w := &lockedWriter{s.mu, s.out}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-exited:
			exited <- err
			return nil, fmt.Errorf("opa %s exited: %v\n%s", strings.Join(args, " "), err, s.Log())
		default:
		}
		if resp, err := client.Get(s.URL + "/health"); err == nil {
			resp.Body.Close()
			// A server with authorization on may refuse /health: it answers.
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
				t.Cleanup(stop)
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("opa %s: no answer on /health within 60s\n%s", strings.Join(args, " "), s.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func freePort() (int, error) {
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Cert is a server certificate for 127.0.0.1 signed by a CA made for the
// test, in files.
type Cert struct {
	CAFile   string // the CA certificate, PEM: what a client trusts
	CertFile string
	KeyFile  string
	Pool     *x509.CertPool // holds the CA
}

// NewCA makes a CA and a certificate for 127.0.0.1 and localhost signed by
// it, written under t.TempDir().
func NewCA(t testing.TB) *Cert {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "des test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	c := &Cert{
		CAFile:   filepath.Join(dir, "ca.pem"),
		CertFile: filepath.Join(dir, "cert.pem"),
		KeyFile:  filepath.Join(dir, "key.pem"),
		Pool:     x509.NewCertPool(),
	}
	c.Pool.AddCert(ca)
	for _, f := range []struct {
		path, typ string
		der       []byte
	}{{c.CAFile, "CERTIFICATE", caDER}, {c.CertFile, "CERTIFICATE", der}, {c.KeyFile, "EC PRIVATE KEY", keyDER}} {
		if err := os.WriteFile(f.path, pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// TokenAuthz is a system.authz policy for `opa run --server
// --authentication=token --authorization=basic` that lets in only requests
// bearing token. Write it to a file and load it with the other paths.
func TokenAuthz(token string) string {
	return fmt.Sprintf(`package system.authz

default allow := false

allow if input.identity == %q

# The health check answers anyone, so that a test sees the server up.
allow if input.path == ["health"]
`, token)
}
