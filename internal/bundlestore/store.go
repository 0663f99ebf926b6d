// Package bundlestore keeps the OPA bundles des fetches from a bundle
// server: it downloads each with If-None-Match (a 304 keeps the copy on
// disk), refuses a bundle that is not signed by one of the configured keys
// (OPA's .signatures.json, verified by OPA's own bundle reader), that claims
// roots it may not, or that is too large, and writes the verified bundle
// and its metadata atomically under one directory per URL. Loading a kept
// bundle verifies its signature again, so a copy edited on disk is refused.
package bundlestore

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing/fstest"
	"time"
	"unicode"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"

	"github.com/deterministic-exec/des/internal/fileio"
)

// DefaultMaxBytes bounds a bundle as downloaded and once unpacked (all its
// files together). Policies and their tables are kilobytes; a bundle this large
// is a mistake or an attack.
const DefaultMaxBytes = 16 << 20

// Names of the files of a kept bundle, in its directory.
const (
	BundleFile = "bundle.tar.gz"
	MetaFile   = "meta.json"
)

// ErrNotFetched is the cause of a Load of a bundle never fetched.
var ErrNotFetched = errors.New("never fetched")

// Error is a bundle refused or not available: which one and why.
type Error struct {
	URL    string
	Reason string
	Err    error
}

func (e *Error) Error() string {
	var s string
	switch {
	case e.Err != nil && e.Reason == "":
		s = fmt.Sprintf("bundle %s: %v", e.URL, e.Err)
	case e.Err != nil:
		s = fmt.Sprintf("bundle %s: %s: %v", e.URL, e.Reason, e.Err)
	default:
		s = fmt.Sprintf("bundle %s: %s", e.URL, e.Reason)
	}
	return printable(s)
}

// printable drops the control characters of s: a bundle server's error
// page and an archive's file names reach the developer's terminal (bundle
// pull, status), where an escape sequence could rewrite what is shown.
func printable(s string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' || unicode.IsPrint(r) {
			return r
		}
		if unicode.IsSpace(r) {
			return ' '
		}
		return -1
	}, s)
}

// maxLastError bounds last_error in meta.json (an archive's file name in
// an error can be long; the metadata is read bounded).
const maxLastError = 1000

func (e *Error) Unwrap() error { return e.Err }

// Meta is what is kept beside a bundle.
type Meta struct {
	URL       string    `json:"url"`
	ETag      string    `json:"etag,omitempty"`
	Revision  string    `json:"revision"`
	Roots     []string  `json:"roots"`
	FetchedAt time.Time `json:"fetched_at"` // the last answer of the server: a new bundle or 304
	Key       string    `json:"key"`        // which key verified it
	SHA256    string    `json:"sha256"`     // of bundle.tar.gz
	// The last pull that failed since the kept copy was fetched: when, and
	// why (the kept copy stays in use). Cleared by a pull that succeeds.
	FailedAt  time.Time `json:"failed_at,omitzero"`
	LastError string    `json:"last_error,omitempty"`
}

// Outcome of a pull.
type Outcome string

const (
	Updated     Outcome = "updated"
	NotModified Outcome = "not modified"
)

// Options configure a Store.
type Options struct {
	Dir      string       // where bundles are kept (.des/bundles): one directory per URL
	Keys     *Keys        // verify every bundle; required
	Client   *http.Client // http.DefaultClient when nil
	Token    string       // a bearer token sent with every request, when set
	MaxBytes int64        // DefaultMaxBytes when 0
	Now      func() time.Time
	// Reserved are root paths ("des", "des/config") an organisation's
	// bundle may not declare as a root nor contain; the bundle may declare
	// roots below them ("des/gates/tool_use") unless Reserved holds those
	// too.
	Reserved []string
	// Whole are root paths that a bundle root may not equal nor contain,
	// while roots below them are allowed.
	Whole []string
	// Memo, when set, keeps what Load verified, for a long-lived process
	// that loads the same kept bundles again and again.
	Memo *Memo
}

// Memo keeps verified bundles between Loads: a kept file that is the same
// file (same inode, size and modification time, not changed within the
// last seconds) verified by the same keys is not read and verified again.
// Pulls replace a kept bundle by renaming a new file over it, so a new
// bundle is always a new file. It is safe for concurrent use.
type Memo struct {
	mu sync.Mutex
	m  map[string]memoEntry // kept path → what was verified
}

type memoEntry struct {
	fi   fs.FileInfo
	keys [32]byte
	v    verified
}

// NewMemo returns an empty Memo.
func NewMemo() *Memo { return &Memo{m: map[string]memoEntry{}} }

// memoRacy is how recently a file must have changed for the memo not to
// vouch for it: file times tick coarsely.
const memoRacy = 2 * time.Second

func (m *Memo) get(p string, keys [32]byte) (verified, bool) {
	if m == nil {
		return verified{}, false
	}
	fi, err := os.Stat(p)
	if err != nil {
		return verified{}, false
	}
	m.mu.Lock()
	e, ok := m.m[p]
	m.mu.Unlock()
	if !ok || e.keys != keys || !os.SameFile(e.fi, fi) || e.fi.Size() != fi.Size() || !e.fi.ModTime().Equal(fi.ModTime()) ||
		time.Since(fi.ModTime()) < memoRacy {
		return verified{}, false
	}
	return e.v, true
}

// put records v for the file at p as it is now, if it is the file that was
// read: stat before the read and after must agree.
func (m *Memo) put(p string, before fs.FileInfo, keys [32]byte, v verified) {
	if m == nil || before == nil {
		return
	}
	after, err := os.Stat(p)
	if err != nil || !os.SameFile(before, after) || before.Size() != after.Size() || !before.ModTime().Equal(after.ModTime()) {
		return
	}
	m.mu.Lock()
	m.m[p] = memoEntry{fi: after, keys: keys, v: v}
	m.mu.Unlock()
}

// Store keeps bundles. It is safe for concurrent use; two processes
// pulling one bundle at once each write a complete, verified copy.
type Store struct{ o Options }

// New returns a Store.
func New(o Options) *Store {
	if o.Client == nil {
		o.Client = http.DefaultClient
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Store{o: o}
}

// WithMemo returns a Store like s that keeps what Load verified in m.
func (s *Store) WithMemo(m *Memo) *Store {
	o := s.o
	o.Memo = m
	return &Store{o: o}
}

// Dir is the directory that keeps the bundle of url.
func (s *Store) Dir(url string) string { return filepath.Join(s.o.Dir, Name(url)) }

// safeName replaces each run of characters other than ASCII letters,
// digits, '.', '_' and '-' with one '-' (by hand: a regexp compiled at
// init would cost every hook process).
func safeName(s string) string {
	var b strings.Builder
	run := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-' {
			b.WriteByte(c)
			run = false
		} else if !run {
			b.WriteByte('-')
			run = true
		}
	}
	return b.String()
}

// Name is the directory name of a bundle URL: the last path element
// readable, then a hash of the whole URL, so two URLs never share one.
func Name(url string) string {
	base := url
	if i := strings.IndexAny(base, "?#"); i >= 0 {
		base = base[:i]
	}
	base = strings.TrimSuffix(path.Base(strings.TrimRight(base, "/")), ".tar.gz")
	base = strings.Trim(safeName(base), "-.")
	if len(base) > 40 {
		base = base[:40]
	}
	if base == "" {
		base = "bundle"
	}
	sum := sha256.Sum256([]byte(url))
	return base + "-" + hex.EncodeToString(sum[:4])
}

// Pull fetches the bundle at url, sending the kept copy's ETag. A new
// bundle that verifies replaces the kept one; anything refused leaves the
// kept copy as it was (its fetched_at too), records the failure in its
// metadata (failed_at, last_error) and is an *Error naming url.
func (s *Store) Pull(ctx context.Context, url string) (Meta, Outcome, error) {
	m, o, err := s.pull(ctx, url)
	if err != nil {
		dir := s.Dir(url)
		if kept, kerr := s.readMeta(dir); kerr == nil {
			msg := err.Error()
			if len(msg) > maxLastError {
				msg = strings.ToValidUTF8(msg[:maxLastError], "") + "..."
			}
			kept.FailedAt, kept.LastError = s.o.Now().UTC(), msg
			_ = writeJSON(filepath.Join(dir, MetaFile), kept) // a report: the pull's error is what counts
		}
	}
	return m, o, err
}

func (s *Store) pull(ctx context.Context, url string) (Meta, Outcome, error) {
	fail := func(reason string, err error) (Meta, Outcome, error) {
		return Meta{}, "", &Error{URL: url, Reason: reason, Err: err}
	}
	if s.o.Keys == nil {
		return fail("no verification key", nil)
	}
	dir := s.Dir(url)
	kept, keptErr := s.readMeta(dir)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fail("bad URL", err)
	}
	if s.o.Token != "" {
		req.Header.Set("Authorization", "Bearer "+s.o.Token)
	}
	// The ETag is sent only for a kept copy that verifies: a 304 must
	// never vouch for a copy changed on disk, which is fetched afresh.
	var current *Bundle
	if keptErr == nil && kept.ETag != "" {
		if b, err := s.Load(url); err == nil {
			current = b
			req.Header.Set("If-None-Match", kept.ETag)
		}
	}
	resp, err := s.o.Client.Do(req)
	if err != nil {
		return fail("fetch", err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotModified && current != nil:
		kept.FetchedAt = s.o.Now().UTC()
		kept.FailedAt, kept.LastError = time.Time{}, ""
		if err := writeJSON(filepath.Join(dir, MetaFile), kept); err != nil {
			return fail("keep", err)
		}
		current.Meta.FetchedAt = kept.FetchedAt
		return current.Meta, NotModified, nil
	case resp.StatusCode != http.StatusOK:
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		reason := "the server answered " + resp.Status
		if t := strings.TrimSpace(string(msg)); t != "" {
			reason += ": " + strings.Join(strings.Fields(t), " ")
		}
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			reason += " (is the bearer token in the variable bundle_token_env names set and valid?)"
		}
		return fail(reason, nil)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, s.o.MaxBytes+1))
	if err != nil {
		return fail("fetch", err)
	}
	if int64(len(raw)) > s.o.MaxBytes {
		return fail(fmt.Sprintf("larger than %d bytes", s.o.MaxBytes), fileio.ErrTooLarge)
	}
	v, err := s.verify(raw)
	if err != nil {
		return Meta{}, "", &Error{URL: url, Reason: "refused", Err: err}
	}
	m := Meta{
		URL: url, ETag: resp.Header.Get("ETag"), Revision: v.revision, Roots: v.roots,
		FetchedAt: s.o.Now().UTC(), Key: v.key, SHA256: v.sha,
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail("keep", err)
	}
	// The bundle first: a meta.json naming an ETag is never beside an
	// older bundle (Load takes revision and key from the bundle itself).
	if err := fileio.WriteAtomic(filepath.Join(dir, BundleFile), raw); err != nil {
		return fail("keep", err)
	}
	if err := writeJSON(filepath.Join(dir, MetaFile), m); err != nil {
		return fail("keep", err)
	}
	return m, Updated, nil
}

func writeJSON(p string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return fileio.WriteAtomic(p, append(b, '\n'))
}

func (s *Store) readMeta(dir string) (Meta, error) {
	var m Meta
	b, err := fileio.ReadBounded(filepath.Join(dir, MetaFile), 1<<20)
	if err != nil {
		return m, err
	}
	return m, json.Unmarshal(b, &m)
}

// Bundle is a kept bundle, verified.
type Bundle struct {
	Meta
	// Path is the kept bundle.tar.gz.
	Path string
	// FS holds the bundle's policy files (*.rego, tests included) and its
	// data as one data.json at the top: exactly what was verified, so that
	// nothing read later from disk can differ.
	FS fs.FS
}

// Load reads and verifies the kept copy of url: an *Error wrapping
// ErrNotFetched when there is none.
func (s *Store) Load(url string) (*Bundle, error) {
	dir := s.Dir(url)
	p := filepath.Join(dir, BundleFile)
	if s.o.Keys != nil {
		if v, ok := s.o.Memo.get(p, s.o.Keys.sum); ok {
			return s.loaded(url, dir, p, v), nil
		}
	}
	before, _ := os.Stat(p)
	raw, err := fileio.ReadBounded(p, s.o.MaxBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &Error{URL: url, Err: ErrNotFetched}
	}
	if err != nil {
		return nil, &Error{URL: url, Reason: "read the kept copy " + p, Err: err}
	}
	if s.o.Keys == nil {
		return nil, &Error{URL: url, Reason: "no verification key"}
	}
	v, err := s.verify(raw)
	if err != nil {
		return nil, &Error{URL: url, Reason: "the kept copy " + p + " is refused", Err: err}
	}
	s.o.Memo.put(p, before, s.o.Keys.sum, v)
	return s.loaded(url, dir, p, v), nil
}

func (s *Store) loaded(url, dir, p string, v verified) *Bundle {
	m, _ := s.readMeta(dir) // URL, ETag and fetched_at only: the rest comes from the bundle
	m.URL, m.Revision, m.Roots, m.Key, m.SHA256 = url, v.revision, v.roots, v.key, v.sha
	return &Bundle{Meta: m, Path: p, FS: v.fsys}
}

// Kept returns the metadata of the kept copy of url without verifying it
// (for a quick look: how old it is).
func (s *Store) Kept(url string) (Meta, bool) {
	m, err := s.readMeta(s.Dir(url))
	if err != nil {
		return Meta{}, false
	}
	if _, err := os.Stat(filepath.Join(s.Dir(url), BundleFile)); err != nil {
		return Meta{}, false
	}
	return m, true
}

type verified struct {
	revision string
	roots    []string
	key      string
	sha      string
	fsys     fs.FS
}

// verify reads raw with OPA's bundle reader, which checks the signature
// and every file's digest (a file missing, added or changed is refused) and
// that the modules and data lie under the manifest's roots; then the roots
// themselves are checked.
func (s *Store) verify(raw []byte) (verified, error) {
	if len(raw) < 2 || raw[0] != 0x1f || raw[1] != 0x8b {
		return verified{}, errors.New("not a bundle: not gzip data (a bundle is the .tar.gz `opa build` writes)")
	}
	if err := checkUnpacked(raw, s.o.MaxBytes); err != nil {
		return verified{}, err
	}
	b, err := bundle.NewReader(bytes.NewReader(raw)).
		WithBundleVerificationConfig(s.o.Keys.vc).
		WithSizeLimitBytes(s.o.MaxBytes).
		WithRegoVersion(ast.RegoV1).
		WithProcessAnnotations(true).
		Read()
	if err != nil {
		return verified{}, fmt.Errorf("not a valid signed bundle: %w", err)
	}
	if b.Signatures.Signatures == nil || len(b.Signatures.Signatures) == 0 {
		return verified{}, errors.New("not signed (no .signatures.json)")
	}
	if len(b.WasmModules) > 0 || len(b.PlanModules) > 0 {
		return verified{}, errors.New("holds Wasm or plan modules, which des does not run")
	}
	roots := slices.Clone(*b.Manifest.Roots)
	if err := s.checkRoots(roots); err != nil {
		return verified{}, err
	}
	files := fstest.MapFS{}
	for _, m := range b.Modules {
		name := strings.TrimPrefix(path.Clean("/"+filepath.ToSlash(m.Path)), "/")
		files[name] = &fstest.MapFile{Data: m.Raw, Mode: 0o444}
	}
	if len(b.Data) > 0 {
		data, err := json.Marshal(b.Data)
		if err != nil {
			return verified{}, err
		}
		files["data.json"] = &fstest.MapFile{Data: data, Mode: 0o444}
	}
	sum := sha256.Sum256(raw)
	return verified{
		revision: b.Manifest.Revision, roots: roots, key: s.o.Keys.which(b.Signatures.Signatures[0]),
		sha: hex.EncodeToString(sum[:]), fsys: files,
	}, nil
}

// MaxFiles bounds the entries of a bundle's archive.
const MaxFiles = 10000

// checkUnpacked bounds what the archive unpacks to, in total and in
// entries, reading it as a stream: OPA's reader holds every file in memory
// before it checks the signature, bounding each file alone, so a few MiB of
// gzip from anyone on the way could unpack to gigabytes.
func checkUnpacked(raw []byte, maxBytes int64) error {
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("not a valid signed bundle: %w", err)
	}
	tr := tar.NewReader(zr)
	var total int64
	for n := 1; ; n++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("not a valid signed bundle: %w", err)
		}
		if n > MaxFiles {
			return fmt.Errorf("its archive holds more than %d entries", MaxFiles)
		}
		if total += max(h.Size, 0); total > maxBytes {
			return fmt.Errorf("unpacked, larger than %d bytes: %w", maxBytes, fileio.ErrTooLarge)
		}
	}
}

// checkRoots refuses a bundle that declares no roots (OPA's default, every
// path under data) or a root that is, contains or lies in a reserved path.
func (s *Store) checkRoots(roots []string) error {
	if len(roots) == 0 || slices.Contains(roots, "") {
		return errors.New(`its .manifest declares no roots, which claims all of data, des's own policies included: declare the roots it owns, e.g. {"roots": ["acme", "des/gates/tool_use"]}`)
	}
	for _, r := range roots {
		for _, w := range s.o.Whole {
			if bundle.RootPathsContain([]string{r}, w) {
				return fmt.Errorf("its root %q claims all of %q, des's own: declare roots below it, e.g. %q", r, w, w+"/gates/tool_use")
			}
		}
		for _, res := range s.o.Reserved {
			if bundle.RootPathsOverlap(r, res) {
				return fmt.Errorf("its root %q overlaps %q, which des sets itself", r, res)
			}
		}
	}
	return nil
}

// which names the key that verified a token: the key id it named, or the
// single PEM key's file.
func (k *Keys) which(token string) string {
	if l, ok := k.label[pemKeyID]; ok {
		return l
	}
	kid := tokenKeyID(token)
	if l, ok := k.label[kid]; ok {
		return l
	}
	return kid
}

// tokenKeyID reads the kid of a JWS header, or the keyid claim OPA's
// signer also writes; the signature was verified already.
func tokenKeyID(token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return ""
	}
	var hdr, claims struct {
		Kid   string `json:"kid"`
		KeyID string `json:"keyid"`
	}
	if b, err := base64.RawURLEncoding.DecodeString(parts[0]); err == nil && json.Unmarshal(b, &hdr) == nil && hdr.Kid != "" {
		return hdr.Kid
	}
	if b, err := base64.RawURLEncoding.DecodeString(parts[1]); err == nil && json.Unmarshal(b, &claims) == nil {
		return claims.KeyID
	}
	return ""
}
