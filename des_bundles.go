package des

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/bundle"

	"github.com/deterministic-exec/des/internal/bundlestore"
	"github.com/deterministic-exec/des/internal/fileio"
)

// BundleDir is where the organisation's bundles (setting bundle_urls) are
// kept, relative to the project root: one directory per URL, holding
// bundle.tar.gz and meta.json, and jwks-<hash of the URL>.json when
// bundle_jwks is a URL.
const BundleDir = ".des/bundles"

// bundleFetchTimeout bounds one pull of one bundle (or of the JWKS).
const bundleFetchTimeout = 2 * time.Minute

// ErrBundleNotFetched is wrapped by the error of an organisation bundle
// that was never fetched.
var ErrBundleNotFetched = bundlestore.ErrNotFetched

// BundleError is an organisation bundle des cannot use: never fetched, or
// its kept copy refused (not signed by the configured key, changed on
// disk). Where des is in charge this fails closed, as a policy that does
// not compile does.
type BundleError struct {
	URL string
	Err error
}

func (e *BundleError) Error() string {
	var se *bundlestore.Error
	if errors.As(e.Err, &se) { // never fetched, or the kept copy refused
		return fmt.Sprintf("des: %v: fetch and verify it with `des-hook bundle pull`", e.Err)
	}
	return fmt.Sprintf("des: %v", e.Err)
}

func (e *BundleError) Unwrap() error { return e.Err }

// BundleStatus describes one organisation bundle.
type BundleStatus struct {
	Name      string    `json:"name"` // its directory under .des/bundles
	URL       string    `json:"url"`
	Revision  string    `json:"revision,omitempty"`
	Roots     []string  `json:"roots,omitempty"`
	FetchedAt time.Time `json:"fetched_at,omitzero"` // the bundle server's last answer
	Key       string    `json:"key,omitempty"`       // the key that verified it: a file, or JWKS#kid
	Stale     bool      `json:"stale"`               // not fetched for bundle_refresh_minutes, or never
	Problem   string    `json:"problem,omitempty"`   // why it is not in use
	// The last pull that failed since the kept copy was fetched (by
	// des-hook bundle pull or the warm server's refresh), and why.
	FailedAt  time.Time `json:"failed_at,omitzero"`
	LastError string    `json:"last_error,omitempty"`
}

// BundlePull is the outcome of fetching one bundle.
type BundlePull struct {
	BundleStatus
	Outcome string `json:"outcome"` // "updated", "not modified" or "error"
	Error   string `json:"error,omitempty"`
}

// Bundle outcomes.
const (
	BundleUpdated     = string(bundlestore.Updated)
	BundleNotModified = string(bundlestore.NotModified)
	BundleFailed      = "error"
)

// bundleStore opens the kept bundles of a project. fetch says whether the
// JWKS of a bundle_jwks URL is fetched (a pull) or its kept copy read.
func bundleStore(ctx context.Context, root string, cfg Config, lookupEnv func(string) (string, bool), client *http.Client, fetch bool) (*bundlestore.Store, error) {
	keys, err := bundleKeys(ctx, root, cfg, lookupEnv, client, fetch)
	if err != nil {
		return nil, err
	}
	token := ""
	if cfg.BundleTokenEnv != "" && lookupEnv != nil {
		token, _ = lookupEnv(cfg.BundleTokenEnv)
	}
	return bundlestore.New(bundlestore.Options{
		Dir: filepath.Join(root, BundleDir), Keys: keys, Client: client, Token: strings.TrimSpace(token),
		// An organisation's bundle extends des's packages (a gate's rules,
		// data.des.exceptions.unwaivable) but never replaces all of them,
		// nor the settings des sets itself.
		Whole: []string{"des"}, Reserved: []string{"des/config"},
	}), nil
}

// bundleKeys reads bundle_public_key or bundle_jwks.
func bundleKeys(ctx context.Context, root string, cfg Config, lookupEnv func(string) (string, bool), client *http.Client, fetch bool) (*bundlestore.Keys, error) {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	if cfg.BundlePublicKey != "" {
		source := settingSource(root, lookupEnv, false, "DES_BUNDLE_PUBLIC_KEY")
		p := resolve(root, cfg.BundlePublicKey)
		b, err := fileio.ReadBounded(p, 1<<20)
		if err != nil {
			return nil, &ConfigError{Setting: "bundle_public_key", Source: source, Value: strconv.Quote(cfg.BundlePublicKey), Reason: "cannot read the key: " + err.Error(), Err: err}
		}
		k, err := bundlestore.KeysFromPEM(b, cfg.BundlePublicKey)
		if err != nil {
			return nil, &ConfigError{Setting: "bundle_public_key", Source: source, Value: strconv.Quote(cfg.BundlePublicKey), Reason: err.Error(), Err: err}
		}
		return k, nil
	}
	src := cfg.BundleJWKS
	source := settingSource(root, lookupEnv, false, "DES_BUNDLE_JWKS")
	var data []byte
	var err error
	switch {
	case isURL(src) && fetch:
		if data, err = fetchJWKS(ctx, client, src); err == nil {
			if _, err = bundlestore.KeysFromJWKS(data, src); err == nil {
				err = writeKept(keptJWKS(root, src), data)
			}
		}
	case isURL(src):
		// The hook never waits on the network: the JWKS the last pull kept.
		data, err = fileio.ReadBounded(keptJWKS(root, src), 1<<20)
		if err != nil {
			err = fmt.Errorf("the copy of the JWKS kept by `des-hook bundle pull`: %w", err)
		}
	default:
		data, err = fileio.ReadBounded(resolve(root, src), 1<<20)
	}
	if err != nil {
		return nil, &ConfigError{Setting: "bundle_jwks", Source: source, Value: strconv.Quote(src), Reason: err.Error(), Err: err}
	}
	k, err := bundlestore.KeysFromJWKS(data, src)
	if err != nil {
		return nil, &ConfigError{Setting: "bundle_jwks", Source: source, Value: strconv.Quote(src), Reason: err.Error(), Err: err}
	}
	return k, nil
}

// keptJWKS is where a pull keeps the JWKS of the bundle_jwks URL url: a
// file per URL, so that a pull under other settings (another bundle_jwks,
// from the environment of whoever runs it) never replaces the keys this
// project's settings trust.
func keptJWKS(root, url string) string {
	sum := sha256.Sum256([]byte(url))
	return filepath.Join(root, BundleDir, "jwks-"+hex.EncodeToString(sum[:4])+".json")
}

// bundleKeyFiles are the key files of bundle_public_key and bundle_jwks,
// and the CA certificates of opa_ca_file: protected like the policies,
// since whoever replaces the key decides which bundles verify, and whoever
// adds a CA which server may answer for opa_url.
func bundleKeyFiles(cfg Config) []string {
	var out []string
	for _, f := range []string{cfg.BundlePublicKey, cfg.BundleJWKS, cfg.OPACAFile} {
		if f != "" && !isURL(f) {
			out = append(out, f)
		}
	}
	return out
}

// isURL says whether bundle_jwks names a URL; the settings refuse http://
// for it, so a URL is fetched over https only.
func isURL(s string) bool { return strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://") }

func writeKept(p string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return fileio.WriteAtomic(p, data)
}

func fetchJWKS(ctx context.Context, client *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.Request.URL.Scheme != "https" {
		// Redirected to http://: keys anyone on the way could have replaced.
		return nil, fmt.Errorf("GET %s: redirected to %s, not https://", url, resp.Request.URL.Redacted())
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20+1))
	if err == nil && len(data) > 1<<20 {
		err = fmt.Errorf("GET %s: larger than 1 MiB", url)
	}
	return data, err
}

func bundleClient(client *http.Client) *http.Client {
	if client != nil {
		return client
	}
	return &http.Client{Timeout: bundleFetchTimeout}
}

// PullBundles fetches every bundle of bundle_urls into .des/bundles, in
// order, and reports each. A bundle refused keeps its previous copy. client
// nil means a client with a two-minute timeout and the system's
// certificates. The error is for what stops every pull (the key cannot be
// read); a bundle's own failure is in its BundlePull.
func PullBundles(ctx context.Context, root string, cfg Config, lookupEnv func(string) (string, bool), client *http.Client) ([]BundlePull, error) {
	if len(cfg.BundleURLs) == 0 {
		return nil, nil
	}
	client = bundleClient(client)
	st, err := bundleStore(ctx, root, cfg, lookupEnv, client, true)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	out := make([]BundlePull, 0, len(cfg.BundleURLs))
	for _, u := range cfg.BundleURLs {
		p := BundlePull{BundleStatus: BundleStatus{Name: bundlestore.Name(u), URL: u}}
		m, outcome, err := st.Pull(ctx, u)
		if err != nil {
			p.Outcome, p.Error = BundleFailed, err.Error()
			// What is still in use, if anything.
			if b, lerr := st.Load(u); lerr == nil {
				p.BundleStatus = statusOf(b.Meta, cfg, now)
			} else {
				p.Stale, p.Problem = true, lerr.Error()
			}
		} else {
			p.BundleStatus, p.Outcome = statusOf(m, cfg, now), string(outcome)
		}
		out = append(out, p)
	}
	return out, nil
}

func statusOf(m bundlestore.Meta, cfg Config, now time.Time) BundleStatus {
	return BundleStatus{
		Name: bundlestore.Name(m.URL), URL: m.URL, Revision: m.Revision, Roots: m.Roots, FetchedAt: m.FetchedAt, Key: m.Key,
		Stale:    now.Sub(m.FetchedAt) >= time.Duration(cfg.BundleRefreshMinutes)*time.Minute,
		FailedAt: m.FailedAt, LastError: m.LastError,
	}
}

// BundleStatuses reports the kept bundles of bundle_urls, each verified
// again, without the network.
func BundleStatuses(ctx context.Context, root string, cfg Config, lookupEnv func(string) (string, bool), now time.Time) []BundleStatus {
	if len(cfg.BundleURLs) == 0 {
		return nil
	}
	out := make([]BundleStatus, 0, len(cfg.BundleURLs))
	st, err := bundleStore(ctx, root, cfg, lookupEnv, nil, false)
	for _, u := range cfg.BundleURLs {
		s := BundleStatus{Name: bundlestore.Name(u), URL: u, Stale: true}
		if err != nil {
			s.Problem = err.Error()
		} else if b, lerr := st.Load(u); lerr != nil {
			s.Problem = lerr.Error() + ": fetch and verify it with `des-hook bundle pull`"
			if m, ok := st.Kept(u); ok {
				// What the metadata says of the refused copy (unverified).
				s.Revision, s.FetchedAt, s.Key = m.Revision, m.FetchedAt, m.Key
				s.FailedAt, s.LastError = m.FailedAt, m.LastError
			}
		} else {
			s = statusOf(b.Meta, cfg, now)
		}
		out = append(out, s)
	}
	return out
}

// BundlesDue reports whether a bundle of bundle_urls was never fetched or
// not for bundle_refresh_minutes, by the kept metadata alone: cheap enough
// to ask on every hook event.
func BundlesDue(root string, cfg Config, now time.Time) bool {
	if len(cfg.BundleURLs) == 0 {
		return false
	}
	st := bundlestore.New(bundlestore.Options{Dir: filepath.Join(root, BundleDir)})
	for _, u := range cfg.BundleURLs {
		m, ok := st.Kept(u)
		if !ok || now.Sub(m.FetchedAt) >= time.Duration(cfg.BundleRefreshMinutes)*time.Minute {
			return true
		}
	}
	return false
}

// orgBundles loads the kept, verified bundles of bundle_urls as policy
// file systems, in the settings' order. A bundle never fetched or refused
// is a *BundleError: the organisation's rules are missing, and des does not
// decide without them.
// With a PolicyCache, what was verified is kept in it (bundlestore.Memo),
// so a warm server does not verify an unchanged bundle per request.
func orgBundles(root string, cfg Config, lookupEnv func(string) (string, bool), now time.Time, cache *PolicyCache) ([]namedFS, []BundleStatus, error) {
	if len(cfg.BundleURLs) == 0 {
		return nil, nil, nil
	}
	st, err := bundleStore(context.Background(), root, cfg, lookupEnv, nil, false)
	if err != nil {
		return nil, nil, err
	}
	if cache != nil {
		st = st.WithMemo(cache.bundles)
	}
	var fss []namedFS
	var stats []BundleStatus
	for _, u := range cfg.BundleURLs {
		b, err := st.Load(u)
		if err != nil {
			return nil, nil, &BundleError{URL: u, Err: err}
		}
		// As OPA does, no two bundles may own one path: which one's data
		// or complete rules would win is left to no one.
		for _, prev := range stats {
			for _, r := range b.Roots {
				for _, pr := range prev.Roots {
					if bundle.RootPathsOverlap(r, pr) {
						return nil, nil, &BundleError{URL: u, Err: fmt.Errorf("bundle %s: its root %q overlaps the root %q of bundle %s; OPA refuses overlapping roots too, so merge the two or give each its own paths", u, r, pr, prev.URL)}
					}
				}
			}
		}
		name := filepath.Join(BundleDir, bundlestore.Name(u))
		fss = append(fss, namedFS{name: name, fsys: b.FS})
		stats = append(stats, statusOf(b.Meta, cfg, now))
	}
	return fss, stats, nil
}

// Bundles reports the organisation bundles the Engine's policies include.
func (e *Engine) Bundles() []BundleStatus {
	out := make([]BundleStatus, len(e.bundles))
	copy(out, e.bundles)
	return out
}

// PolicyDirsNotDeciding lists, as the settings name them, the policy
// directories of cfg that exist under root while opa_url is set: the OPA
// server decides with the policies loaded into it, so their rules decide
// nothing (des still loads them, for its own data tables and the catalogue).
// Nil without opa_url.
func PolicyDirsNotDeciding(root string, cfg Config) []string {
	if cfg.OPAURL == "" {
		return nil
	}
	var out []string
	for _, d := range cfg.PolicyDirs {
		if _, err := os.Stat(resolve(root, d)); err == nil {
			out = append(out, d)
		}
	}
	return out
}

// DecisionPointOf says where decisions are made under the settings cfg:
// Embedded, or the URL of the OPA server of opa_url.
func DecisionPointOf(cfg Config) string {
	if cfg.OPAURL != "" {
		return cfg.OPAURL
	}
	return Embedded
}
