package des

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/deterministic-exec/des/policy"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func writeConfig(t *testing.T, root, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, ".des"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ConfigFile), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadConfigDefaults(t *testing.T) {
	t.Parallel()
	c, err := LoadConfig(t.TempDir(), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(DefaultConfig(), c); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

// The Go defaults and the bundle's data.des.config must agree: policies
// tested with `opa test` see the bundle's, the hook sees Go's.
func TestDefaultsMatchBundleData(t *testing.T) {
	t.Parallel()
	pe, err := policy.New(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	bundle, ok := pe.Data("des.config")
	if !ok {
		t.Fatal("bundle has no data.des.config")
	}
	// Normalise through JSON so numbers compare as numbers.
	want := DefaultConfig().policyData()
	got := bundle.(map[string]any)
	if diff := cmp.Diff(jsonRoundTrip(t, want), jsonRoundTrip(t, got)); diff != "" {
		t.Errorf("data.des.config differs from DefaultConfig (-go +bundle):\n%s", diff)
	}
}

func TestLoadConfigFileThenEnv(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeConfig(t, root, `{"stale_threshold_minutes": 10, "turn_budget_default": 20, "policy_dirs": ["a", "b"], "gate2_on_failure": "block", "phase_requirements_files": ["team/req.json"], "delegation_mode": "nudge", "max_concurrent_agents": 3, "task_graph_file": "plan/graph.json"}`)
	c, err := LoadConfig(root, env(map[string]string{
		"DES_DELEGATION_MODE":          "enforce",
		"DES_SESSION_TTL_MINUTES":      "15",
		"DES_PHASE_REQUIREMENTS_FILES": "isdlc/iteration-requirements.json" + string(os.PathListSeparator) + "isdlc/artifact-paths.json",
		"DES_TURN_BUDGET_DEFAULT":      "70",
		"DES_POLICY_DIRS":              "x" + string(os.PathListSeparator) + " y ",
		"DES_AUDIT_DIR":                "",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultConfig()
	want.StaleThresholdMinutes = 10
	want.TurnBudgetDefault = 70
	want.PolicyDirs = []string{"x", "y"}
	want.Gate2OnFailure = Gate2Block
	want.PhaseRequirementsFiles = []string{"isdlc/iteration-requirements.json", "isdlc/artifact-paths.json"}
	want.DelegationMode = DelegationEnforce
	want.MaxConcurrentAgents = 3
	want.SessionTTLMinutes = 15
	want.TaskGraphFile = "plan/graph.json"
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
}

func TestBadSettingsNameTheSetting(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, file string
		env        map[string]string
		setting    string
		inMessage  []string
	}{
		{name: "env not a number", env: map[string]string{"DES_STALE_THRESHOLD_MINUTES": "soon"}, setting: "stale_threshold_minutes", inMessage: []string{"DES_STALE_THRESHOLD_MINUTES", `"soon"`, "whole number"}},
		{name: "env zero", env: map[string]string{"DES_TURN_BUDGET_DEFAULT": "0"}, setting: "turn_budget_default", inMessage: []string{"found 0", "from 1"}},
		{name: "env negative timeout", env: map[string]string{"DES_VALIDATION_TIMEOUT_MS": "-5"}, setting: "validation_timeout_ms", inMessage: []string{"-5"}},
		{name: "env bad mode", env: map[string]string{"DES_GATE2_ON_FAILURE": "explode"}, setting: "gate2_on_failure", inMessage: []string{`"explode"`, `"record"`, `"block"`}},
		{name: "file wrong type", file: `{"audit_log_retention_days": "ninety"}`, setting: "audit_log_retention_days", inMessage: []string{"config.json", "whole number"}},
		{name: "file out of range", file: `{"stale_threshold_minutes": 0}`, setting: "stale_threshold_minutes", inMessage: []string{"config.json", "found 0"}},
		{name: "file unknown key", file: `{"stale_treshold_minutes": 5}`, setting: "stale_treshold_minutes", inMessage: []string{"not a DES setting", "stale_threshold_minutes"}},
		{name: "file empty audit dir", file: `{"audit_dir": " "}`, setting: "audit_dir", inMessage: []string{"must name a directory"}},
		{name: "file empty policy dir", file: `{"policy_dirs": [""]}`, setting: "policy_dirs", inMessage: []string{"entries must name directories"}},
		{name: "env bad glob", env: map[string]string{"DES_GUARDED_STATE_FILES": "state/[.json"}, setting: "guarded_state_files", inMessage: []string{`"state/[.json" is not a valid glob`}},
		{name: "env requirement files of nothing", env: map[string]string{"DES_PHASE_REQUIREMENTS_FILES": string(os.PathListSeparator)}, setting: "phase_requirements_files", inMessage: []string{"DES_PHASE_REQUIREMENTS_FILES", "names no entry"}},
		{name: "file requirement file empty", file: `{"phase_requirements_files": ["req.json", " "]}`, setting: "phase_requirements_files", inMessage: []string{"entries must name files"}},
		{name: "file requirement files not a list", file: `{"phase_requirements_files": "req.json"}`, setting: "phase_requirements_files", inMessage: []string{"list of strings"}},
		{name: "file key in the wrong case", file: `{"Policy_Dirs": []}`, setting: "Policy_Dirs", inMessage: []string{"not a DES setting"}},
		{name: "env list of nothing", env: map[string]string{"DES_POLICY_DIRS": string(os.PathListSeparator)}, setting: "policy_dirs", inMessage: []string{"names no entry"}},
		{name: "audit dir is the root", env: map[string]string{"DES_AUDIT_DIR": "."}, setting: "audit_dir", inMessage: []string{"not the project root"}},
		{name: "audit dir is /", file: `{"audit_dir": "/"}`, setting: "audit_dir", inMessage: []string{"file system root"}},
		{name: "file not json", file: "{\n\"turn_budget_default\": 5,,\n}", inMessage: []string{"not valid JSON at line 2"}},
		{name: "env bad delegation mode", env: map[string]string{"DES_DELEGATION_MODE": "always"}, setting: "delegation_mode", inMessage: []string{"DES_DELEGATION_MODE", `"always"`, `"off"`, `"nudge"`, `"enforce"`}},
		{name: "file delegation mode not a string", file: `{"delegation_mode": true}`, setting: "delegation_mode", inMessage: []string{"config.json", "a string"}},
		{name: "env negative agent limit", env: map[string]string{"DES_MAX_CONCURRENT_AGENTS": "-1"}, setting: "max_concurrent_agents", inMessage: []string{"DES_MAX_CONCURRENT_AGENTS", "found -1", "from 0"}},
		{name: "env agent limit not a number", env: map[string]string{"DES_MAX_CONCURRENT_AGENTS": "many"}, setting: "max_concurrent_agents", inMessage: []string{"whole number"}},
		{name: "file zero session ttl", file: `{"session_ttl_minutes": 0}`, setting: "session_ttl_minutes", inMessage: []string{"config.json", "found 0", "from 1"}},
		{name: "env task graph outside", env: map[string]string{"DES_TASK_GRAPH_FILE": "../plan.json"}, setting: "task_graph_file", inMessage: []string{"DES_TASK_GRAPH_FILE", "inside the project"}},
		{name: "file task graph absolute", file: `{"task_graph_file": "/tmp/plan.json"}`, setting: "task_graph_file", inMessage: []string{"relative to the project root"}},
		{name: "file task graph empty", file: `{"task_graph_file": ""}`, setting: "task_graph_file", inMessage: []string{"must name a file"}},
		{name: "env task graph in .des", env: map[string]string{"DES_TASK_GRAPH_FILE": ".des/plan.json"}, setting: "task_graph_file", inMessage: []string{"not be in .des"}},
		{name: "env task graph glob", env: map[string]string{"DES_TASK_GRAPH_FILE": "plans/*.json"}, setting: "task_graph_file", inMessage: []string{"not a glob"}},
		{name: "file two values", file: `{} {}`, inMessage: []string{"more than one JSON value"}},
		{name: "file not an object", file: `[1]`, inMessage: []string{"config.json"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if tc.file != "" {
				writeConfig(t, root, tc.file)
			}
			_, err := LoadConfig(root, env(tc.env))
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want *ConfigError", err)
			}
			if ce.Setting != tc.setting {
				t.Errorf("setting = %q, want %q (%v)", ce.Setting, tc.setting, err)
			}
			for _, s := range tc.inMessage {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("message %q lacks %q", err, s)
				}
			}
		})
	}
}

// null in .des/config.json means the default, for lists as for numbers.
func TestConfigNullMeansDefault(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeConfig(t, root, `{"stale_threshold_minutes": null, "policy_dirs": null, "guarded_state_files": null}`)
	c, err := LoadConfig(root, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(DefaultConfig(), c); diff != "" {
		t.Errorf("(-default +got):\n%s", diff)
	}
}

func TestConfigTooLarge(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeConfig(t, root, `{"audit_dir": "`+strings.Repeat("a", maxConfigSize)+`"}`)
	if _, err := LoadConfig(root, env(nil)); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("err = %v", err)
	}
}

func TestConfigUnreadable(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	// A directory where the file should be cannot be read as settings.
	if err := os.MkdirAll(filepath.Join(root, ConfigFile), 0o755); err != nil {
		t.Fatal(err)
	}
	var ce *ConfigError
	if _, err := LoadConfig(root, env(nil)); !errors.As(err, &ce) {
		t.Errorf("err = %v, want *ConfigError", err)
	}
}

func TestBundleJWKSMustBeHTTPS(t *testing.T) {
	t.Parallel()
	env := map[string]string{"DES_BUNDLE_JWKS": "http://keys.example.com/jwks.json"}
	_, err := LoadConfig(t.TempDir(), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Setting != "bundle_jwks" || !strings.Contains(err.Error(), "https://") {
		t.Fatalf("err %v, want a ConfigError for bundle_jwks asking for https", err)
	}
	env["DES_BUNDLE_JWKS"] = "https://keys.example.com/jwks.json"
	if _, err := LoadConfig(t.TempDir(), func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err != nil {
		t.Fatalf("https JWKS: %v", err)
	}
}
