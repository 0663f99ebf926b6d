package des

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/deterministic-exec/des/internal/glob"
)

// ConfigFile is where the settings live, relative to the project root.
const ConfigFile = ".des/config.json"

// maxConfigSize bounds .des/config.json; settings are a handful of values.
const maxConfigSize = 1 << 20

// How Gate 2 counts a test phase the test runs des saw do not back
// (setting tdd_evidence).
const (
	TDDEvidenceOff  = "off"
	TDDEvidenceWarn = "warn"
	TDDEvidenceDeny = "deny"
)

// Where the iSDLC gates read test iterations (setting phase_evidence).
const (
	PhaseEvidenceDES   = "des"
	PhaseEvidenceState = "state"
)

// Gate 2 failure modes (setting gate2_on_failure).
const (
	Gate2Record = "record" // mark the step FAILED and tell the user
	Gate2Block  = "block"  // send the subagent back to fix its work first
)

// Config holds the settings (docs/reference.md, "Settings"). The JSON names are the keys of
// .des/config.json and of data.des.config as policies see it.
type Config struct {
	StaleThresholdMinutes int      `json:"stale_threshold_minutes"`  // DES_STALE_THRESHOLD_MINUTES
	TurnBudgetDefault     int      `json:"turn_budget_default"`      // DES_TURN_BUDGET_DEFAULT
	ValidationTimeoutMS   int      `json:"validation_timeout_ms"`    // DES_VALIDATION_TIMEOUT_MS
	AuditLogRetentionDays int      `json:"audit_log_retention_days"` // DES_AUDIT_LOG_RETENTION_DAYS
	AuditDir              string   `json:"audit_dir"`                // DES_AUDIT_DIR, relative to the project root unless absolute
	PolicyDirs            []string `json:"policy_dirs"`              // DES_POLICY_DIRS, list-separated (os.PathListSeparator)
	Gate2OnFailure        string   `json:"gate2_on_failure"`         // DES_GATE2_ON_FAILURE: "record" or "block"
	TDDEvidence           string   `json:"tdd_evidence"`             // DES_TDD_EVIDENCE: "off", "warn" or "deny": Gate 2's test phases against the test runs des saw
	GuardedStepFiles      []string `json:"guarded_step_files"`       // DES_GUARDED_STEP_FILES: globs of step files the write guard checks
	GuardedStateFiles     []string `json:"guarded_state_files"`      // DES_GUARDED_STATE_FILES: globs of workflow-state files the write guard checks
	// PhaseRequirementsFiles (DES_PHASE_REQUIREMENTS_FILES) are a team's own
	// copies of iSDLC's iteration-requirements.json and artifact-paths.json,
	// relative to the project root unless absolute. Empty (the default)
	// means the tables built into the policy bundle.
	PhaseRequirementsFiles []string `json:"phase_requirements_files"`
	// PhaseEvidence (DES_PHASE_EVIDENCE) says where the iSDLC gates read a
	// phase's test iterations: "des" (the default), from the test runs des
	// saw, which des also writes into the state; "state", from what the
	// workflow state says (iSDLC's Node hooks' reading, for a team moving
	// from them).
	PhaseEvidence string `json:"phase_evidence"`

	// Orchestration governance: delegating orchestrators that run a task
	// graph in waves.
	DelegationMode      string `json:"delegation_mode"`       // DES_DELEGATION_MODE: "off", "nudge" or "enforce"
	MaxConcurrentAgents int    `json:"max_concurrent_agents"` // DES_MAX_CONCURRENT_AGENTS: 0 means no limit
	SessionTTLMinutes   int    `json:"session_ttl_minutes"`   // DES_SESSION_TTL_MINUTES: lifetime of a subagent registry entry
	TaskGraphFile       string `json:"task_graph_file"`       // DES_TASK_GRAPH_FILE: the task graph document, relative to the project root

	// DecisionServer (DES_DECISION_SERVER) is how the thin hook client
	// decides: "auto" through the warm decision server, started on demand,
	// or "off" by handing over to the full engine in its own process. The
	// client reads it itself (the environment, then the key in
	// .des/config.json); it is checked here so that a bad value is reported
	// like any other setting's.
	DecisionServer string `json:"decision_server"`

	// At organisation scale (docs/organisation.md): an OPA server as the
	// decision point, policy bundles from a bundle server, decision logs.
	// None of them reaches data.des.config.

	// OPAURL (DES_OPA_URL) is the base URL of an OPA server that decides
	// every gate (POST <opa_url>/v1/data/des/gates/<gate>); empty, the
	// default, decides with the embedded engine.
	OPAURL       string `json:"opa_url"`
	OPATokenEnv  string `json:"opa_token_env"`  // DES_OPA_TOKEN_ENV: the variable holding a bearer token for opa_url
	OPATimeoutMS int    `json:"opa_timeout_ms"` // DES_OPA_TIMEOUT_MS: deadline of one request to opa_url
	OPACAFile    string `json:"opa_ca_file"`    // DES_OPA_CA_FILE: PEM certificates trusted for an https opa_url, besides the system's

	// BundleURLs (DES_BUNDLE_URLS, separated by spaces or commas) are OPA
	// bundles fetched over HTTP(S), kept under .des/bundles and loaded
	// with the team's policies. Each must be signed by the key of
	// bundle_public_key or bundle_jwks.
	BundleURLs           []string `json:"bundle_urls"`
	BundlePublicKey      string   `json:"bundle_public_key"`      // DES_BUNDLE_PUBLIC_KEY: PEM public key (or HMAC secret) file that verifies the bundles
	BundleJWKS           string   `json:"bundle_jwks"`            // DES_BUNDLE_JWKS: a JWKS file or https URL whose keys verify the bundles
	BundleTokenEnv       string   `json:"bundle_token_env"`       // DES_BUNDLE_TOKEN_ENV: the variable holding a bearer token for bundle_urls
	BundleRefreshMinutes int      `json:"bundle_refresh_minutes"` // DES_BUNDLE_REFRESH_MINUTES: how old a kept bundle may grow before it is fetched again

	// DecisionLog (DES_DECISION_LOG) keeps decision logs in OPA's format
	// under .des/decisions, inputs included, so that `des-hook replay`
	// can decide them again: "on" (the default) or "off".
	DecisionLog           string   `json:"decision_log"`
	DecisionLogURL        string   `json:"decision_log_url"`          // DES_DECISION_LOG_URL: where `des-hook logs push` posts them (a collector of OPA decision logs)
	DecisionLogTokenEnv   string   `json:"decision_log_token_env"`    // DES_DECISION_LOG_TOKEN_ENV: the variable holding a bearer token for decision_log_url
	DecisionLogMask       []string `json:"decision_log_mask"`         // DES_DECISION_LOG_MASK: JSON pointers (/input/...) removed from every kept decision
	DecisionLogPushMask   []string `json:"decision_log_push_mask"`    // DES_DECISION_LOG_PUSH_MASK: JSON pointers removed besides before a push sends a decision
	DecisionLogMaxBytes   int      `json:"decision_log_max_bytes"`    // DES_DECISION_LOG_MAX_BYTES: bound of the kept logs; the oldest go first
	DecisionLogMaxAgeDays int      `json:"decision_log_max_age_days"` // DES_DECISION_LOG_MAX_AGE_DAYS: the days of decisions kept, today included
}

// Decision log modes (setting decision_log).
const (
	DecisionLogOff = "off"
	DecisionLogOn  = "on"
)

// Decision server modes (setting decision_server).
const (
	DecisionServerAuto = "auto" // the warm server, started on demand
	DecisionServerOff  = "off"  // every event decided in a process of its own
)

// Delegation modes (setting delegation_mode).
const (
	DelegationOff     = "off"     // main-thread work is not judged
	DelegationNudge   = "nudge"   // main-thread work gets a warning the model reads
	DelegationEnforce = "enforce" // main-thread work is denied
)

// DefaultTaskGraphFile is the task graph document of the default settings.
const DefaultTaskGraphFile = ".claude/state/active_task_graph.json"

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		StaleThresholdMinutes: 30,
		TurnBudgetDefault:     50,
		ValidationTimeoutMS:   500,
		AuditLogRetentionDays: 90,
		AuditDir:              ".des/audit",
		PolicyDirs:            []string{".des/policies"},
		Gate2OnFailure:        Gate2Record,
		TDDEvidence:           TDDEvidenceWarn,
		PhaseEvidence:         PhaseEvidenceDES,
		GuardedStepFiles:      []string{"**/steps/*.json"},
		GuardedStateFiles:     []string{".des/state.json", ".isdlc/state.json", ".isdlc/projects/*/state.json"},
		DelegationMode:        DelegationOff,
		SessionTTLMinutes:     60,
		TaskGraphFile:         DefaultTaskGraphFile,
		DecisionServer:        DecisionServerAuto,
		OPATokenEnv:           "DES_OPA_TOKEN",
		OPATimeoutMS:          2000,
		BundleTokenEnv:        "DES_BUNDLE_TOKEN",
		BundleRefreshMinutes:  10,
		DecisionLog:           DecisionLogOn,
		DecisionLogTokenEnv:   "DES_DECISION_LOG_TOKEN",
		// Kept on this machine: everything the policies read, so that a
		// decision can be replayed, but a Bash command (whatever the agent
		// typed: secrets in variables, file contents in heredocs), which
		// no policy reads (des reads its effects from it).
		DecisionLogMask: []string{"/input/command"},
		// Sent to a collector: neither prompt text (a subagent's prompt
		// and description, a skill's arguments, a subagent's answer) nor
		// file contents (the step file, the task graph as written and on
		// disk). The statuses, paths, schema errors and commit facts des
		// derives from them stay, so a pushed decision can still be
		// understood.
		DecisionLogPushMask: []string{
			"/input/call/prompt", "/input/call/description", "/input/call/args", "/input/response/text",
			"/input/step/document", "/input/task_graph/document", "/input/task_graph/disk", "/input/command",
		},
		DecisionLogMaxBytes:   64 << 20,
		DecisionLogMaxAgeDays: 30,
	}
}

// ConfigError is a bad setting: which one, where it came from, the value
// found and what is wrong with it.
type ConfigError struct {
	Setting string // JSON key, e.g. "stale_threshold_minutes"
	Source  string // ".des/config.json" path or the environment variable
	Value   string // the value as found; empty when the file could not be read at all
	Reason  string
	Err     error // underlying error, if any
}

func (e *ConfigError) Error() string {
	if e.Setting == "" {
		return fmt.Sprintf("settings %s: %s", e.Source, e.Reason)
	}
	return fmt.Sprintf("setting %s from %s: %s (found %s)", e.Setting, e.Source, e.Reason, e.Value)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// setting describes one setting for loading and validation.
type setting struct {
	key, env string
	apply    func(c *Config, raw string) error // from an environment string
	check    func(c *Config) (string, error)   // value as text, problem
}

func intSetting(key, env string, field func(*Config) *int, min, max int) setting {
	return setting{
		key: key, env: env,
		apply: func(c *Config, raw string) error {
			n, err := strconv.Atoi(strings.TrimSpace(raw))
			if err != nil {
				return errors.New("not a whole number")
			}
			*field(c) = n
			return nil
		},
		check: func(c *Config) (string, error) {
			n := *field(c)
			if n < min || n > max {
				return strconv.Itoa(n), fmt.Errorf("must be from %d to %d", min, max)
			}
			return strconv.Itoa(n), nil
		},
	}
}

var settings = []setting{
	intSetting("stale_threshold_minutes", "DES_STALE_THRESHOLD_MINUTES", func(c *Config) *int { return &c.StaleThresholdMinutes }, 1, 7*24*60),
	intSetting("turn_budget_default", "DES_TURN_BUDGET_DEFAULT", func(c *Config) *int { return &c.TurnBudgetDefault }, 1, 100000),
	intSetting("validation_timeout_ms", "DES_VALIDATION_TIMEOUT_MS", func(c *Config) *int { return &c.ValidationTimeoutMS }, 1, 600000),
	intSetting("audit_log_retention_days", "DES_AUDIT_LOG_RETENTION_DAYS", func(c *Config) *int { return &c.AuditLogRetentionDays }, 1, 36500),
	{
		key: "audit_dir", env: "DES_AUDIT_DIR",
		apply: func(c *Config, raw string) error { c.AuditDir = raw; return nil },
		check: func(c *Config) (string, error) {
			switch clean := filepath.Clean(c.AuditDir); {
			case strings.TrimSpace(c.AuditDir) == "":
				return strconv.Quote(c.AuditDir), errors.New("must name a directory")
			case clean == "." || clean == filepath.Dir(clean) && filepath.IsAbs(clean):
				return strconv.Quote(c.AuditDir), errors.New("must be a directory of its own, not the project root or the file system root")
			}
			return strconv.Quote(c.AuditDir), nil
		},
	},
	listSetting("policy_dirs", "DES_POLICY_DIRS", func(c *Config) *[]string { return &c.PolicyDirs }, "entries must name directories", nil),
	{
		key: "gate2_on_failure", env: "DES_GATE2_ON_FAILURE",
		apply: func(c *Config, raw string) error { c.Gate2OnFailure = strings.TrimSpace(raw); return nil },
		check: func(c *Config) (string, error) {
			if c.Gate2OnFailure != Gate2Record && c.Gate2OnFailure != Gate2Block {
				return strconv.Quote(c.Gate2OnFailure), fmt.Errorf("must be %q or %q", Gate2Record, Gate2Block)
			}
			return strconv.Quote(c.Gate2OnFailure), nil
		},
	},
	{
		key: "tdd_evidence", env: "DES_TDD_EVIDENCE",
		apply: func(c *Config, raw string) error { c.TDDEvidence = strings.TrimSpace(raw); return nil },
		check: func(c *Config) (string, error) {
			switch c.TDDEvidence {
			case TDDEvidenceOff, TDDEvidenceWarn, TDDEvidenceDeny:
				return strconv.Quote(c.TDDEvidence), nil
			}
			return strconv.Quote(c.TDDEvidence), fmt.Errorf("must be %q, %q or %q", TDDEvidenceOff, TDDEvidenceWarn, TDDEvidenceDeny)
		},
	},
	listSetting("guarded_step_files", "DES_GUARDED_STEP_FILES", func(c *Config) *[]string { return &c.GuardedStepFiles }, "entries must be globs", glob.Valid),
	listSetting("guarded_state_files", "DES_GUARDED_STATE_FILES", func(c *Config) *[]string { return &c.GuardedStateFiles }, "entries must be globs", glob.Valid),
	listSetting("phase_requirements_files", "DES_PHASE_REQUIREMENTS_FILES", func(c *Config) *[]string { return &c.PhaseRequirementsFiles }, "entries must name files", nil),
	{
		key: "phase_evidence", env: "DES_PHASE_EVIDENCE",
		apply: func(c *Config, raw string) error { c.PhaseEvidence = strings.TrimSpace(raw); return nil },
		check: func(c *Config) (string, error) {
			switch c.PhaseEvidence {
			case PhaseEvidenceDES, PhaseEvidenceState:
				return strconv.Quote(c.PhaseEvidence), nil
			}
			return strconv.Quote(c.PhaseEvidence), fmt.Errorf("must be %q or %q", PhaseEvidenceDES, PhaseEvidenceState)
		},
	},
	{
		key: "delegation_mode", env: "DES_DELEGATION_MODE",
		apply: func(c *Config, raw string) error { c.DelegationMode = strings.TrimSpace(raw); return nil },
		check: func(c *Config) (string, error) {
			switch c.DelegationMode {
			case DelegationOff, DelegationNudge, DelegationEnforce:
				return strconv.Quote(c.DelegationMode), nil
			}
			return strconv.Quote(c.DelegationMode), fmt.Errorf("must be %q, %q or %q", DelegationOff, DelegationNudge, DelegationEnforce)
		},
	},
	{
		key: "decision_server", env: "DES_DECISION_SERVER",
		apply: func(c *Config, raw string) error { c.DecisionServer = strings.TrimSpace(raw); return nil },
		check: func(c *Config) (string, error) {
			switch c.DecisionServer {
			case DecisionServerAuto, DecisionServerOff:
				return strconv.Quote(c.DecisionServer), nil
			}
			return strconv.Quote(c.DecisionServer), fmt.Errorf("must be %q or %q", DecisionServerAuto, DecisionServerOff)
		},
	},
	// Claude Code runs a few subagents at once; a thousand is no limit a
	// person means, but any number a person types is accepted below it.
	intSetting("max_concurrent_agents", "DES_MAX_CONCURRENT_AGENTS", func(c *Config) *int { return &c.MaxConcurrentAgents }, 0, 1000),
	intSetting("session_ttl_minutes", "DES_SESSION_TTL_MINUTES", func(c *Config) *int { return &c.SessionTTLMinutes }, 1, 7*24*60),
	{
		key: "task_graph_file", env: "DES_TASK_GRAPH_FILE",
		apply: func(c *Config, raw string) error { c.TaskGraphFile = strings.TrimSpace(raw); return nil },
		check: func(c *Config) (string, error) {
			// The graph is a guarded document of the project: the write
			// guard, the Bash guard and the effect check know it by its
			// path relative to the root, so it must be one.
			val := strconv.Quote(c.TaskGraphFile)
			clean := filepath.ToSlash(filepath.Clean(filepath.FromSlash(c.TaskGraphFile)))
			switch {
			case strings.TrimSpace(c.TaskGraphFile) == "":
				return val, errors.New("must name a file")
			case filepath.IsAbs(c.TaskGraphFile) || strings.HasPrefix(c.TaskGraphFile, "/") || filepath.VolumeName(c.TaskGraphFile) != "":
				return val, errors.New("must be relative to the project root")
			case clean == "." || clean == ".." || strings.HasPrefix(clean, "../"):
				return val, errors.New("must name a file inside the project")
			case clean == ".des" || strings.HasPrefix(clean, ".des/"):
				return val, errors.New("must not be in .des, DES's own directory, which agents cannot write")
			case strings.ContainsAny(clean, "*?["):
				return val, errors.New("must name one file, not a glob")
			}
			return val, nil
		},
	},
	urlSetting("opa_url", "DES_OPA_URL", func(c *Config) *string { return &c.OPAURL }),
	envNameSetting("opa_token_env", "DES_OPA_TOKEN_ENV", func(c *Config) *string { return &c.OPATokenEnv }),
	intSetting("opa_timeout_ms", "DES_OPA_TIMEOUT_MS", func(c *Config) *int { return &c.OPATimeoutMS }, 1, 600000),
	stringSetting("opa_ca_file", "DES_OPA_CA_FILE", func(c *Config) *string { return &c.OPACAFile }),
	// The keys before bundle_urls, whose check wants one: each variable is
	// checked as it is applied.
	stringSetting("bundle_public_key", "DES_BUNDLE_PUBLIC_KEY", func(c *Config) *string { return &c.BundlePublicKey }),
	{
		key: "bundle_jwks", env: "DES_BUNDLE_JWKS",
		apply: func(c *Config, raw string) error { c.BundleJWKS = strings.TrimSpace(raw); return nil },
		check: func(c *Config) (string, error) {
			// Keys fetched over plain http could be anyone's, and so then
			// would be the bundles they verify.
			if strings.HasPrefix(strings.ToLower(c.BundleJWKS), "http://") {
				return strconv.Quote(c.BundleJWKS), errors.New("a JWKS URL must be https://: keys fetched over plain http could be replaced on the way, and with them the bundles they verify")
			}
			return strconv.Quote(c.BundleJWKS), nil
		},
	},
	{
		key: "bundle_urls", env: "DES_BUNDLE_URLS",
		apply: func(c *Config, raw string) error {
			// URLs hold colons, so the list is split on spaces and commas.
			c.BundleURLs = strings.FieldsFunc(raw, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
			if len(c.BundleURLs) == 0 {
				return errors.New("names no entry")
			}
			return nil
		},
		check: func(c *Config) (string, error) {
			shown := make([]string, len(c.BundleURLs))
			for i, u := range c.BundleURLs {
				shown[i] = redactURL(u)
			}
			text := fmt.Sprintf("%q", shown)
			for i, u := range c.BundleURLs {
				if err := checkURL(u); err != nil {
					return text, fmt.Errorf("%q: %w", shown[i], err)
				}
			}
			if len(c.BundleURLs) > 0 && c.BundlePublicKey == "" && c.BundleJWKS == "" {
				return text, errors.New("bundles are verified before use: set bundle_public_key (a PEM public key file) or bundle_jwks (a JWKS file or https URL)")
			}
			return text, nil
		},
	},
	envNameSetting("bundle_token_env", "DES_BUNDLE_TOKEN_ENV", func(c *Config) *string { return &c.BundleTokenEnv }),
	intSetting("bundle_refresh_minutes", "DES_BUNDLE_REFRESH_MINUTES", func(c *Config) *int { return &c.BundleRefreshMinutes }, 1, 7*24*60),
	{
		key: "decision_log", env: "DES_DECISION_LOG",
		apply: func(c *Config, raw string) error { c.DecisionLog = strings.TrimSpace(raw); return nil },
		check: func(c *Config) (string, error) {
			if c.DecisionLog != DecisionLogOff && c.DecisionLog != DecisionLogOn {
				return strconv.Quote(c.DecisionLog), fmt.Errorf("must be %q or %q", DecisionLogOff, DecisionLogOn)
			}
			return strconv.Quote(c.DecisionLog), nil
		},
	},
	urlSetting("decision_log_url", "DES_DECISION_LOG_URL", func(c *Config) *string { return &c.DecisionLogURL }),
	envNameSetting("decision_log_token_env", "DES_DECISION_LOG_TOKEN_ENV", func(c *Config) *string { return &c.DecisionLogTokenEnv }),
	maskSetting("decision_log_mask", "DES_DECISION_LOG_MASK", func(c *Config) *[]string { return &c.DecisionLogMask }),
	maskSetting("decision_log_push_mask", "DES_DECISION_LOG_PUSH_MASK", func(c *Config) *[]string { return &c.DecisionLogPushMask }),
	intSetting("decision_log_max_bytes", "DES_DECISION_LOG_MAX_BYTES", func(c *Config) *int { return &c.DecisionLogMaxBytes }, 1<<16, 1<<40),
	intSetting("decision_log_max_age_days", "DES_DECISION_LOG_MAX_AGE_DAYS", func(c *Config) *int { return &c.DecisionLogMaxAgeDays }, 1, 3650),
}

// maskSetting is a list of JSON pointers under /input/ or /result/, comma-
// or space-separated in the environment.
func maskSetting(key, env string, field func(*Config) *[]string) setting {
	return setting{
		key: key, env: env,
		apply: func(c *Config, raw string) error {
			*field(c) = strings.FieldsFunc(raw, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
			return nil
		},
		check: func(c *Config) (string, error) {
			mask := *field(c)
			text := fmt.Sprintf("%q", mask)
			for _, p := range mask {
				if !strings.HasPrefix(p, "/input/") && !strings.HasPrefix(p, "/result/") {
					return text, fmt.Errorf("%q is not a JSON pointer under /input/ or /result/", p)
				}
				if strings.HasSuffix(p, "/") || strings.Contains(p, "//") {
					return text, fmt.Errorf("%q has an empty segment; write keys between single slashes, e.g. /input/call/prompt", p)
				}
			}
			return text, nil
		},
	}
}

// stringSetting is a free string (a path); it is checked where it is used.
func stringSetting(key, env string, field func(*Config) *string) setting {
	return setting{
		key: key, env: env,
		apply: func(c *Config, raw string) error { *field(c) = strings.TrimSpace(raw); return nil },
		check: func(c *Config) (string, error) { return strconv.Quote(*field(c)), nil },
	}
}

// urlSetting is empty or an http or https URL with a host.
func urlSetting(key, env string, field func(*Config) *string) setting {
	return setting{
		key: key, env: env,
		apply: func(c *Config, raw string) error { *field(c) = strings.TrimSpace(raw); return nil },
		check: func(c *Config) (string, error) {
			v := *field(c)
			if v == "" {
				return `""`, nil
			}
			return strconv.Quote(redactURL(v)), checkURL(v)
		},
	}
}

// redactURL is v with its credentials, if any, replaced by "xxxxx" (a
// token is often the user name alone): what an error quoting a refused URL
// shows.
func redactURL(v string) string {
	u, err := url.Parse(v)
	if err != nil || u.User == nil {
		return v
	}
	u.User = url.User("xxxxx")
	return u.String()
}

func checkURL(v string) error {
	u, err := url.Parse(v)
	switch {
	case err != nil:
		return fmt.Errorf("not a URL: %v", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("must be an http:// or https:// URL")
	case u.Host == "":
		return errors.New("must name a host")
	case u.User != nil:
		return errors.New("must not carry credentials: put a token in the variable the *_token_env setting names")
	case u.Fragment != "":
		return errors.New("must not have a #fragment")
	}
	return nil
}

// envNameSetting names an environment variable (which holds a secret, so
// the secret itself is never in .des/config.json).
func envNameSetting(key, env string, field func(*Config) *string) setting {
	return setting{
		key: key, env: env,
		apply: func(c *Config, raw string) error { *field(c) = strings.TrimSpace(raw); return nil },
		check: func(c *Config) (string, error) {
			v := *field(c)
			if !validEnvName(v) {
				return strconv.Quote(v), errors.New("must be the name of an environment variable (letters, digits and _, not starting with a digit)")
			}
			// The hook client hands the warm decision server the variable
			// named here, besides the DES_* ones, so any name serves.
			return strconv.Quote(v), nil
		},
	}
}

func validEnvName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, r := range s {
		if r != '_' && !(r >= 'a' && r <= 'z') && !(r >= 'A' && r <= 'Z') && !(r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// listSetting is a list of paths or globs; in the environment the entries
// are separated by os.PathListSeparator. valid, when given, checks each one.
func listSetting(key, env string, field func(*Config) *[]string, empty string, valid func(string) bool) setting {
	return setting{
		key: key, env: env,
		apply: func(c *Config, raw string) error {
			list := field(c)
			*list = nil
			for _, d := range filepath.SplitList(raw) {
				if d = strings.TrimSpace(d); d != "" {
					*list = append(*list, d)
				}
			}
			if len(*list) == 0 { // "::" is a mistake, not a wish for no entries
				return errors.New("names no entry")
			}
			return nil
		},
		check: func(c *Config) (string, error) {
			list := *field(c)
			text := fmt.Sprintf("%q", list)
			if slices.ContainsFunc(list, func(d string) bool { return strings.TrimSpace(d) == "" }) {
				return text, errors.New(empty)
			}
			if valid != nil {
				if i := slices.IndexFunc(list, func(d string) bool { return !valid(d) }); i >= 0 {
					return text, fmt.Errorf("%q is not a valid glob", list[i])
				}
			}
			return text, nil
		},
	}
}

// Validate checks every setting and returns the first problem as a *ConfigError.
func (c Config) Validate() error { return c.validate("configuration") }

func (c Config) validate(source string) error {
	for _, s := range settings {
		if val, err := s.check(&c); err != nil {
			return &ConfigError{Setting: s.key, Source: source, Value: val, Reason: err.Error()}
		}
	}
	return nil
}

// LoadConfig reads root/.des/config.json when it exists, then applies the
// environment variables that lookup finds (os.LookupEnv when nil), and
// validates the result. An empty environment variable is ignored. Unknown
// keys in the file are errors, so a misspelt setting is not silently dropped.
func LoadConfig(root string, lookup func(string) (string, bool)) (Config, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	c := DefaultConfig()
	path := filepath.Join(root, ConfigFile)
	if err := c.readFile(path); err != nil {
		return Config{}, err
	}
	for _, s := range settings {
		raw, ok := lookup(s.env)
		if !ok || strings.TrimSpace(raw) == "" {
			continue
		}
		if err := s.apply(&c, raw); err != nil {
			return Config{}, &ConfigError{Setting: s.key, Source: s.env, Value: strconv.Quote(raw), Reason: err.Error()}
		}
		if val, err := s.check(&c); err != nil {
			return Config{}, &ConfigError{Setting: s.key, Source: s.env, Value: val, Reason: err.Error()}
		}
	}
	return c, c.validate(path)
}

func (c *Config) readFile(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &ConfigError{Source: path, Reason: "cannot read: " + err.Error(), Err: err}
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxConfigSize+1))
	if err != nil {
		return &ConfigError{Source: path, Reason: "cannot read: " + err.Error(), Err: err}
	}
	if len(raw) > maxConfigSize {
		return &ConfigError{Source: path, Reason: fmt.Sprintf("larger than %d bytes", maxConfigSize)}
	}
	// First as raw members: keys must match exactly (encoding/json would
	// take "Policy_Dirs" for policy_dirs), and null means "the default".
	dec := json.NewDecoder(bytes.NewReader(raw))
	var members map[string]json.RawMessage
	if err := dec.Decode(&members); err != nil {
		return configDecodeError(path, raw, err)
	}
	if dec.More() {
		return &ConfigError{Source: path, Reason: "holds more than one JSON value"}
	}
	known := map[string]bool{}
	for _, s := range settings {
		known[s.key] = true
	}
	for k, v := range members {
		if !known[k] {
			return configDecodeError(path, raw, fmt.Errorf("json: unknown field %q", k))
		}
		if string(bytes.TrimSpace(v)) == "null" {
			delete(members, k)
		}
	}
	kept, err := json.Marshal(members)
	if err != nil {
		return &ConfigError{Source: path, Reason: err.Error(), Err: err}
	}
	if err := json.Unmarshal(kept, c); err != nil {
		return configDecodeError(path, kept, err)
	}
	return nil
}

func configDecodeError(path string, raw []byte, err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		return &ConfigError{Setting: typeErr.Field, Source: path, Value: "a JSON " + typeErr.Value,
			Reason: "wrong type, want " + jsonKind(typeErr.Type.Kind().String()), Err: err}
	case errors.As(err, &syntaxErr):
		line := 1 + bytes.Count(raw[:min(int(syntaxErr.Offset), len(raw))], []byte("\n"))
		return &ConfigError{Source: path, Reason: fmt.Sprintf("not valid JSON at line %d: %v", line, err), Err: err}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		key := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		known := make([]string, len(settings))
		for i, s := range settings {
			known[i] = s.key
		}
		return &ConfigError{Setting: key, Source: path, Value: "an unknown key", Reason: "not a DES setting; known settings: " + strings.Join(known, ", "), Err: err}
	default:
		return &ConfigError{Source: path, Reason: err.Error(), Err: err}
	}
}

func jsonKind(goKind string) string {
	switch goKind {
	case "int":
		return "a whole number"
	case "string":
		return "a string"
	case "slice":
		return "a list of strings"
	}
	return goKind
}

// policyData is the config as policies read it: data.des.config. Paths are
// cleaned and slash-separated, so rules compare them as plain strings.
func (c Config) policyData() map[string]any {
	dirs := make([]any, len(c.PolicyDirs))
	for i, d := range c.PolicyDirs {
		dirs[i] = filepath.ToSlash(filepath.Clean(d))
	}
	return map[string]any{
		"stale_threshold_minutes":  c.StaleThresholdMinutes,
		"turn_budget_default":      c.TurnBudgetDefault,
		"validation_timeout_ms":    c.ValidationTimeoutMS,
		"audit_log_retention_days": c.AuditLogRetentionDays,
		"audit_dir":                filepath.ToSlash(filepath.Clean(c.AuditDir)),
		"policy_dirs":              dirs,
		"gate2_on_failure":         c.Gate2OnFailure,
		"tdd_evidence":             c.TDDEvidence,
		"guarded_step_files":       strings2any(c.GuardedStepFiles),
		"guarded_state_files":      strings2any(c.GuardedStateFiles),
		"phase_requirements_files": strings2any(c.PhaseRequirementsFiles),
		"phase_evidence":           c.PhaseEvidence,
		"delegation_mode":          c.DelegationMode,
		"max_concurrent_agents":    c.MaxConcurrentAgents,
		"session_ttl_minutes":      c.SessionTTLMinutes,
		"task_graph_file":          filepath.ToSlash(filepath.Clean(filepath.FromSlash(c.TaskGraphFile))),
	}
}

func strings2any(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
