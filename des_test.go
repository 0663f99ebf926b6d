package des

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/policy"
)

func TestNewRejectsBadSetting(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	_, err := New(t.Context(), WithRoot(root), WithEnv(env(map[string]string{"DES_GATE2_ON_FAILURE": "maybe"})))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Setting != "gate2_on_failure" {
		t.Errorf("err = %v, want a ConfigError for gate2_on_failure", err)
	}
	_, err = New(t.Context(), WithRoot(root), WithConfig(Config{}))
	if !errors.As(err, &ce) {
		t.Errorf("zero Config: err = %v, want a ConfigError", err)
	}
}

func TestNewRejectsBadTeamPolicy(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, ".des", "policies")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.rego"), []byte("package des.gates.pre_commit\n\ndeny contains x if {\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := New(t.Context(), WithRoot(root), WithEnv(env(nil)))
	var pe policy.Errors
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want policy.Errors", err)
	}
	// Named from the project root, as the team reads its repository.
	if !strings.Contains(err.Error(), " "+filepath.Join(".des", "policies", "bad.rego")+":4:") {
		t.Errorf("message %q does not name the file from the root", err)
	}
}

func TestConfiguredPolicyDirMustExist(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	_, err := New(t.Context(), WithRoot(root), WithEnv(env(map[string]string{"DES_POLICY_DIRS": "team-rules"})))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Setting != "policy_dirs" || !strings.Contains(err.Error(), "team-rules") {
		t.Errorf("err = %v, want a ConfigError naming team-rules", err)
	}
	// The error says where the setting came from, as for a bad value.
	if ce != nil && ce.Source != "DES_POLICY_DIRS" {
		t.Errorf("source = %q, want DES_POLICY_DIRS", ce.Source)
	}
	writeConfig(t, root, `{"policy_dirs": ["other-rules"]}`)
	_, err = New(t.Context(), WithRoot(root), WithEnv(env(nil)))
	if !errors.As(err, &ce) || ce.Source != filepath.Join(root, ConfigFile) || !strings.Contains(err.Error(), "other-rules") {
		t.Errorf("err = %v, want a ConfigError from %s naming other-rules", err, filepath.Join(root, ConfigFile))
	}
	if err := os.Remove(filepath.Join(root, ConfigFile)); err != nil {
		t.Fatal(err)
	}
	// The default directory is optional.
	if _, err := New(t.Context(), WithRoot(root), WithEnv(env(nil))); err != nil {
		t.Errorf("missing default policy dir: %v", err)
	}
}

func TestSettingsReachPolicies(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "rules"), 0o755); err != nil {
		t.Fatal(err)
	}
	e, err := New(t.Context(), WithRoot(root), WithEnv(env(map[string]string{"DES_POLICY_DIRS": "rules", "DES_AUDIT_DIR": "logs/des"})))
	if err != nil {
		t.Fatal(err)
	}
	for path, wantDeny := range map[string]bool{"rules/x.rego": true, "logs/des/a.log": true, ".des/policies/x.rego": false, ".des/config.json": true} {
		in := map[string]any{"writes": []any{map[string]any{"path": path, "tool": "Write"}}}
		d, err := e.Evaluate(t.Context(), policy.ToolUse, in)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed() == wantDeny {
			t.Errorf("write %s: allowed = %v, want deny = %v", path, d.Allowed(), wantDeny)
		}
	}
	if got := e.Audit().Dir(); got != filepath.Join(root, "logs", "des") {
		t.Errorf("audit dir = %s", got)
	}
}

func TestEngineConcurrentEvaluate(t *testing.T) {
	t.Parallel()
	e, err := New(t.Context(), WithRoot(t.TempDir()), WithEnv(env(nil)))
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]any{"step": map[string]any{"path": "s.json", "document": map[string]any{"step_id": "x"}}}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 25 {
				if d, err := e.Evaluate(t.Context(), policy.SubagentStop, in); err != nil || d.Allowed() {
					t.Errorf("decision %+v, err %v", d, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// Every place des loads rules or tables from is protected, whichever way it
// was named: a policy directory or bundle a program adds, and the phase
// requirement files, which decide what the phase gates require.
func TestLoadedLocationsAreProtected(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, d := range []string{"extra-rules", "bundle", "team"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "bundle", ".manifest"), []byte(`{"roots": ["acme"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "team", "iteration-requirements.json"), []byte(`{"phase_requirements": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := New(t.Context(), WithRoot(root), WithPolicyDirs("extra-rules"), WithBundles(filepath.Join(root, "bundle")),
		WithEnv(env(map[string]string{"DES_PHASE_REQUIREMENTS_FILES": "team/iteration-requirements.json"})))
	if err != nil {
		t.Fatal(err)
	}
	for path, wantDeny := range map[string]bool{
		"extra-rules/relax.rego": true, "bundle/data.json": true, "team/iteration-requirements.json": true,
		"team/notes.md": false, "src/main.go": false,
	} {
		res, err := e.CheckToolUse(t.Context(), gate.ToolCall{Tool: "Write", Paths: []string{path}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Denied() != wantDeny {
			t.Errorf("write %s: denied = %v, want %v (%v)", path, res.Denied(), wantDeny, res.Decision.Codes())
		}
	}
}
