package des

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"time"

	"github.com/deterministic-exec/des/policy"
)

// Embedded is what DecisionPoint says when the policies run in process.
const Embedded = "embedded"

// DecisionPoint says where gate decisions are made: Embedded, or the URL of
// the OPA server that makes them (the setting opa_url).
func (e *Engine) DecisionPoint() string {
	if e.remote != nil {
		return e.remote.URL()
	}
	return Embedded
}

// settingsKey is where a remote decision's input carries the project's
// settings: an OPA server has its own data.des.config, and des.settings
// lays these over it. No gate input has the key.
const settingsKey = "des_config"

// newRemote builds the evaluator of opa_url, nil when it is unset: the
// token is read from the variable opa_token_env names at each request, and
// an https server is trusted on the system's roots plus opa_ca_file.
func newRemote(root string, cfg Config, lookupEnv func(string) (string, bool), fromOption bool, logger *slog.Logger) (*policy.Remote, error) {
	if cfg.OPAURL == "" {
		return nil, nil
	}
	opts := []policy.RemoteOption{
		policy.WithTimeout(time.Duration(cfg.OPATimeoutMS) * time.Millisecond),
		policy.WithRemoteLogger(logger),
		policy.WithToken(func(context.Context) (string, error) {
			tok, _ := lookupEnv(cfg.OPATokenEnv)
			return tok, nil
		}),
	}
	// An Engine lives for one hook event (in the warm server too): a
	// connection kept for the next request would idle until it timed out.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableKeepAlives = true
	if cfg.OPACAFile != "" {
		pem, err := os.ReadFile(resolve(root, cfg.OPACAFile))
		if err != nil {
			return nil, &ConfigError{Setting: "opa_ca_file", Source: settingSource(root, lookupEnv, fromOption, "DES_OPA_CA_FILE"), Value: cfg.OPACAFile, Reason: "cannot read the CA certificates: " + err.Error(), Err: err}
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool() // no system roots here: the named CA alone
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, &ConfigError{Setting: "opa_ca_file", Source: settingSource(root, lookupEnv, fromOption, "DES_OPA_CA_FILE"), Value: cfg.OPACAFile, Reason: "holds no PEM certificate (want -----BEGIN CERTIFICATE----- blocks)"}
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	opts = append(opts, policy.WithHTTPClient(&http.Client{Transport: tr}))
	r, err := policy.NewRemote(cfg.OPAURL, opts...)
	if err != nil {
		return nil, &ConfigError{Setting: "opa_url", Source: settingSource(root, lookupEnv, fromOption, "DES_OPA_URL"), Value: cfg.OPAURL, Reason: err.Error(), Err: err}
	}
	return r, nil
}

// decide evaluates a gate where the settings say: in process, or on the
// OPA server of opa_url with the project's settings in the input.
func (e *Engine) decide(ctx context.Context, g policy.Gate, input any, at time.Time) (policy.Decision, error) {
	if e.remote == nil {
		pe, err := e.Policy(ctx)
		if err != nil {
			return policy.Decision{}, err
		}
		// In process the settings are data.des.config alone: a gate input
		// that carried input.des_config (built from a document an agent
		// wrote, say) would lay the agent's settings over the project's.
		if in, ok := input.(map[string]any); ok {
			if _, has := in[settingsKey]; has {
				in = maps.Clone(in)
				delete(in, settingsKey)
				input = in
			}
		}
		return pe.Eval(ctx, g, input, policy.At(at))
	}
	in, ok := input.(map[string]any)
	if !ok {
		return policy.Decision{}, fmt.Errorf("des: gate %s: an input for opa_url must be a JSON object (map[string]any), not %T", g, input)
	}
	in = maps.Clone(in)
	in[settingsKey] = e.policyData
	d, err := e.remote.Eval(ctx, g, in)
	if err != nil {
		return d, remoteFailure(e.cfg, err)
	}
	// The server's decision names no policy: the waivers recorded in the
	// audit trail get theirs from the local catalogue, when it compiles.
	if len(d.Waived) > 0 {
		if pe, err := e.Policy(ctx); err == nil {
			if cat, err := pe.Catalogue(); err == nil {
				byCode := map[string]string{}
				for _, r := range cat {
					if _, seen := byCode[r.Code]; !seen {
						byCode[r.Code] = r.Package
					}
				}
				for i := range d.Waived {
					d.Waived[i].Policy = byCode[d.Waived[i].Code]
				}
			}
		}
	}
	return d, nil
}

// remoteFailure words a remote evaluation error with the setting and the fix.
func remoteFailure(cfg Config, err error) error {
	fix := "check that the OPA server runs and is reachable; to decide in process meanwhile, remove opa_url from .des/config.json (an empty DES_OPA_URL counts as unset), or set DES_OPA_URL to another server"
	var re *policy.RemoteError
	switch {
	case errors.Is(err, policy.ErrUndefinedGate):
		fix = "load des's policies into the OPA server (opa run --server <des rego/ directory> <team policies>)"
	case errors.Is(err, policy.ErrBuiltinMismatch):
		fix = "load the rego/ directory of this des release into the OPA server beside the organisation's policies"
	case errors.Is(err, policy.ErrMalformedDecision):
		fix = "fix the policy on the OPA server that yields it"
	case errors.Is(err, context.DeadlineExceeded):
		fix = fmt.Sprintf("check the OPA server's load and network, or raise opa_timeout_ms (DES_OPA_TIMEOUT_MS, now %d) and, for subagent calls, validation_timeout_ms (now %d)", cfg.OPATimeoutMS, cfg.ValidationTimeoutMS)
	case errors.As(err, &re) && (re.Status == http.StatusUnauthorized || re.Status == http.StatusForbidden):
		fix = fmt.Sprintf("put a token the server accepts in $%s (the variable opa_token_env names)", cfg.OPATokenEnv)
	case errors.As(err, &re) && re.Status/100 == 3:
		fix = "set opa_url (DES_OPA_URL) to the OPA server's own URL, where it redirects: des does not follow redirects"
	case errors.As(err, &re) && re.Status != 0:
		fix = "fix the error the OPA server names (its log has more)"
	}
	return fmt.Errorf("des: no decision from opa_url %s: %w; fix: %s", cfg.OPAURL, err, fix)
}
