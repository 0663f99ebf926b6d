package des_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/internal/opatest"
	"github.com/deterministic-exec/des/internal/testenv"
	"github.com/deterministic-exec/des/policy"
)

// teamPolicy has a deny, a warn with a detail of its own, and exceptions,
// so that waivers and sorting are compared too.
const teamPolicy = `package des.gates.tool_use

deny contains {"code": "TEAM-NO-SECRETS", "msg": sprintf("%s: no writes under secrets/", [w.path]), "field": "/writes"} if {
	some w in input.writes
	startswith(w.path, "secrets/")
}

warn contains {"code": "TEAM-MARKDOWN", "msg": sprintf("%s: markdown is reviewed by docs", [w.path]), "team": {"weight": 1.5}} if {
	some w in input.writes
	endswith(w.path, ".md")
}

exception contains "TEAM-NO-SECRETS" if {
	some w in input.writes
	w.path == "secrets/waived"
}
`

const teamCommitPolicy = `package des.gates.pre_commit

exception contains "DES-COMMIT-OUTCOME"

warn contains {"code": "TEAM-COMMIT-GATE2", "msg": "Gate 2 has not judged this step"} if not input.gate2
`

// recorder keeps every gate input Go builds, for replaying it both ways.
type recorder struct {
	ev    gate.Evaluator
	cases []evalCase
}

type evalCase struct {
	gate  policy.Gate
	input any
}

func (r *recorder) Evaluate(ctx context.Context, g policy.Gate, input any) (policy.Decision, error) {
	r.cases = append(r.cases, evalCase{g, input})
	return r.ev.Evaluate(ctx, g, input)
}

func envOf(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

// remoteProject is a project with team policies in .des/policies, and the
// environment its engines see.
func remoteProject(t *testing.T) (root string, env map[string]string) {
	t.Helper()
	root = t.TempDir()
	dir := filepath.Join(root, ".des", "policies")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]string{"team.rego": teamPolicy, "commit.rego": teamCommitPolicy} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root, map[string]string{"DES_STATE_DIR": t.TempDir(), "HOME": t.TempDir()}
}

// TestRemoteDecidesAsEmbedded replays the inputs Go builds for every gate
// (Gate 3 over the 300 real step files, writes, Bash commands, document
// writes, stops, invocations) through the embedded policies and through an
// OPA server loaded with rego/ and the same team policies: the decisions
// must be equal, waivers and details included. The server's decisions name
// no policy on deny and warn (see decide in des_remote.go); everything else
// is compared whole.
func TestRemoteDecidesAsEmbedded(t *testing.T) {
	t.Parallel()
	testenv.Long(t)
	ctx := t.Context()
	root, env := remoteProject(t)
	srv := opatest.Start(t, opatest.Options{}, "rego", filepath.Join(root, ".des", "policies"))

	emb, err := des.New(ctx, des.WithRoot(root), des.WithEnv(envOf(env)))
	if err != nil {
		t.Fatal(err)
	}
	renv := map[string]string{"DES_OPA_URL": srv.URL}
	for k, v := range env {
		renv[k] = v
	}
	rem, err := des.New(ctx, des.WithRoot(root), des.WithEnv(envOf(renv)))
	if err != nil {
		t.Fatal(err)
	}
	if got := emb.DecisionPoint(); got != des.Embedded {
		t.Errorf("embedded DecisionPoint() = %q", got)
	}
	if got := rem.DecisionPoint(); got != srv.URL {
		t.Errorf("remote DecisionPoint() = %q, want %q", got, srv.URL)
	}

	rec := &recorder{ev: emb}
	steps, err := filepath.Glob("../shared/corpus/nwave-steps/*.json")
	if err != nil || len(steps) == 0 {
		t.Fatalf("step corpus not found at ../shared/corpus/nwave-steps (%v)", err)
	}
	var files []gate.CommitFile
	for _, p := range steps {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, gate.CommitFile{Path: "docs/feature/x/steps/" + filepath.Base(p), Content: raw})
	}
	if _, err := emb.PreCommitGate().Check(ctx, rec, gate.Commit{Files: files}); err != nil {
		t.Fatal(err)
	}
	tu := emb.ToolUseGate()
	for _, paths := range [][]string{{".des/config.json"}, {".des/policies/x.rego", "README.md"}, {".git/hooks/pre-commit"}, {".des/audit/log.jsonl"}} {
		if _, err := tu.Check(ctx, rec, gate.ToolCall{Tool: "Write", Paths: paths}); err != nil {
			t.Fatal(err)
		}
	}
	for _, cmd := range []string{"echo x > .des/state.json", "rm -rf .des/audit", "cp a .git/hooks/pre-commit", `sed -i s/a/b/ docs/feature/x/steps/01.json`} {
		if _, err := tu.CheckBash(ctx, rec, emb.DocumentWriteGate(), gate.BashCall{Command: cmd}); err != nil {
			t.Fatal(err)
		}
	}
	dw := emb.DocumentWriteGate()
	for i, f := range files[:40] {
		content := string(f.Content)
		call := gate.WriteCall{Tool: "Write", Path: f.Path, Content: &content, ToolUseID: fmt.Sprintf("tu-%d", i)}
		if _, err := dw.Check(ctx, rec, call); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files[:20] {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(f.Path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, f.Path), f.Content, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := emb.SubagentStopGate().Check(ctx, rec, gate.Stop{StepFile: f.Path, AgentID: "a1"}); err != nil {
			t.Fatal(err)
		}
	}
	// Gate 1's inputs as Go builds them for a prompt (see gate.PreInvocation);
	// the engine builds the gate itself, so these are written out.
	phases := []any{"PREPARE", "RED_ACCEPTANCE", "RED_UNIT", "GREEN_UNIT", "CHECK_ACCEPTANCE", "GREEN_ACCEPTANCE", "REVIEW", "REFACTOR_L1", "REFACTOR_L2", "REFACTOR_L3", "REFACTOR_L4", "POST_REFACTOR_REVIEW", "FINAL_VALIDATE", "COMMIT"}
	sections := []any{"DES_METADATA", "AGENT_IDENTITY", "TASK_CONTEXT", "TDD_14_PHASES", "QUALITY_GATES", "OUTCOME_RECORDING", "BOUNDARY_RULES", "TIMEOUT_INSTRUCTION"}
	step := map[string]any{"path": "docs/feature/x/steps/01-01.json", "document": map[string]any{"task_id": "01-01", "state": map[string]any{"status": "TODO"}}}
	for _, in := range []map[string]any{
		{"step": step, "in_progress": []any{}, "prompt": map[string]any{"validation": "required", "origin": "command:/nw:execute", "step_file": step["path"], "sections": sections, "phase_words": phases}},
		{"step": step, "in_progress": []any{}, "prompt": map[string]any{"validation": "required", "origin": "command:/nw:execute", "step_file": step["path"], "sections": sections[:3], "phase_words": phases[:5]}},
		{"in_progress": []any{}, "prompt": map[string]any{"validation": "required", "origin": "command:/nw:execute"}},
		{"tool": "Agent", "main_thread": true, "registry": map[string]any{"running": 3, "agents": []any{}}},
	} {
		rec.cases = append(rec.cases, evalCase{policy.PreInvocation, in})
	}
	// Inputs only the team's rules judge.
	for _, paths := range [][]string{{"secrets/key.pem"}, {"secrets/waived", "docs/a.md"}} {
		var writes []any
		for _, p := range paths {
			writes = append(writes, map[string]any{"path": p, "tool": "Write"})
		}
		rec.cases = append(rec.cases, evalCase{policy.ToolUse, map[string]any{"tool": "Write", "writes": writes}})
	}

	seen := map[policy.Gate]int{}
	denies, waived := 0, 0
	for i, c := range rec.cases {
		want, err := emb.Evaluate(ctx, c.gate, c.input)
		if err != nil {
			t.Fatalf("case %d (%s): embedded: %v", i, c.gate, err)
		}
		got, err := rem.Evaluate(ctx, c.gate, c.input)
		if err != nil {
			t.Fatalf("case %d (%s): remote: %v", i, c.gate, err)
		}
		for _, vs := range [][]policy.Violation{got.Deny, got.Warn} {
			for _, v := range vs {
				if v.Policy != "" {
					t.Errorf("case %d (%s): remote %s names policy %q", i, c.gate, v.Code, v.Policy)
				}
			}
		}
		for _, vs := range [][]policy.Violation{want.Deny, want.Warn} {
			for j := range vs {
				vs[j].Policy = ""
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("case %d (%s) input %v: embedded (-) and remote (+) differ:\n%s", i, c.gate, c.input, diff)
		}
		seen[c.gate]++
		denies += len(got.Deny)
		waived += len(got.Waived)
	}
	for _, g := range policy.Gates() {
		if seen[g] == 0 {
			t.Errorf("no case for gate %s", g)
		}
	}
	// The comparison must have had something to compare.
	if denies == 0 || waived == 0 {
		t.Errorf("%d denies and %d waivers across %d cases: the cases judge nothing", denies, waived, len(rec.cases))
	}
	t.Logf("%d cases equal (%v), %d denies, %d waived", len(rec.cases), seen, denies, waived)
}

// TestRemoteSettingsTravelAndPin: the project's settings reach the server's
// policies in the input, and a setting the organisation pins on the server
// wins over the project's.
func TestRemoteSettingsTravelAndPin(t *testing.T) {
	t.Parallel()
	testenv.Long(t)
	ctx := t.Context()
	root, env := remoteProject(t)
	org := t.TempDir()
	if err := os.MkdirAll(filepath.Join(org, "des"), 0o755); err != nil {
		t.Fatal(err)
	}
	srv := opatest.Start(t, opatest.Options{}, "rego")
	writeFile(t, filepath.Join(org, "des", "data.json"), `{"settings_pinned": {"max_concurrent_agents": 5}}`)
	pinned := opatest.Start(t, opatest.Options{}, "rego", org)
	// Two agents running and a limit of 2 in the project's settings: the
	// server's own data says 0 (no limit), the organisation pins 5.
	in := map[string]any{"tool": "Agent", "main_thread": true, "registry": map[string]any{"running": 2, "agents": []any{}}}
	if err := os.WriteFile(filepath.Join(root, ".des", "config.json"), []byte(`{"max_concurrent_agents": 2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		url     string
		blocked bool
	}{{srv.URL, true}, {pinned.URL, false}} {
		e := map[string]string{"DES_OPA_URL": c.url}
		for k, v := range env {
			e[k] = v
		}
		eng, err := des.New(ctx, des.WithRoot(root), des.WithEnv(envOf(e)))
		if err != nil {
			t.Fatal(err)
		}
		d, err := eng.Evaluate(ctx, policy.PreInvocation, in)
		if err != nil {
			t.Fatal(err)
		}
		blocked := strings.Contains(strings.Join(d.Codes(), " "), "DES-CONCURRENCY-LIMIT")
		if blocked != c.blocked {
			t.Errorf("%s: DES-CONCURRENCY-LIMIT %v, want %v (decision %+v)", c.url, blocked, c.blocked, d)
		}
	}
}

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRemoteFailures: anything short of a decision is an error from
// Evaluate naming opa_url, the cause and the fix, within the timeout.
func TestRemoteFailures(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	root, env := remoteProject(t)
	refused := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		return "http://" + addr
	}()
	serve := func(h http.HandlerFunc) string {
		s := httptest.NewServer(h)
		t.Cleanup(s.Close)
		return s.URL
	}
	// The server notices the client leave once it has read the body.
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	t.Cleanup(hang.Close)
	for _, c := range []struct {
		name, url string
		is        error
		want      []string
	}{
		{"unreachable", refused, nil, []string{"connection refused", "check that the OPA server runs"}},
		{"timeout", hang.URL, context.DeadlineExceeded, []string{"no answer within 300ms", "opa_timeout_ms"}},
		{"500", serve(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(500)
			fmt.Fprint(w, `{"code": "internal_error", "message": "eval_conflict_error: complete rules must not produce multiple outputs"}`)
		}), nil, []string{"HTTP 500", "internal_error: eval_conflict_error", "fix the error the OPA server names"}},
		{"401", serve(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(401)
			fmt.Fprint(w, `{"code": "unauthorized", "message": "request rejected by administrative policy"}`)
		}), nil, []string{"HTTP 401", "$DES_OPA_TOKEN"}},
		{"undefined", serve(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{}`) }),
			policy.ErrUndefinedGate, []string{"des.gates.tool_use", "load des's policies into the OPA server"}},
		{"malformed", serve(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `{"result": {"deny": [{"msg": "no code"}]}}`)
		}),
			policy.ErrMalformedDecision, []string{`needs a non-empty "code"`}},
		{"not a set", serve(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"result": {"deny": "x"}}`) }),
			policy.ErrMalformedDecision, []string{"deny is string, not a set"}},
		{"not JSON", serve(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `<html>proxy error</html>`) }),
			nil, []string{"not OPA's JSON"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := map[string]string{"DES_OPA_URL": c.url, "DES_OPA_TIMEOUT_MS": "300"}
			for k, v := range env {
				e[k] = v
			}
			eng, err := des.New(ctx, des.WithRoot(root), des.WithEnv(envOf(e)))
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			d, err := eng.Evaluate(ctx, policy.ToolUse, map[string]any{"tool": "Write", "writes": []any{map[string]any{"path": ".des/config.json", "tool": "Write"}}})
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %v", took)
			}
			if err == nil {
				t.Fatalf("no error; decision %+v", d)
			}
			var re *policy.RemoteError
			if !errors.As(err, &re) || re.Gate != policy.ToolUse || !strings.HasPrefix(re.URL, c.url+"/v1/data/des/gates/tool_use") {
				t.Errorf("error %v is not a *policy.RemoteError for the gate's URL", err)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %v is not %v", err, c.is)
			}
			for _, w := range append([]string{"opa_url " + c.url, "fix: "}, c.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestRemoteSettings: opa_ca_file must hold certificates, and every
// *_token_env must name a variable.
func TestRemoteSettings(t *testing.T) {
	t.Parallel()
	root, env := remoteProject(t)
	e := map[string]string{"DES_OPA_URL": "https://opa.example:8181", "DES_OPA_CA_FILE": writeFile(t, filepath.Join(t.TempDir(), "ca.pem"), "not a cert")}
	for k, v := range env {
		e[k] = v
	}
	_, err := des.New(t.Context(), des.WithRoot(root), des.WithEnv(envOf(e)))
	var ce *des.ConfigError
	if !errors.As(err, &ce) || ce.Setting != "opa_ca_file" || ce.Source != "DES_OPA_CA_FILE" || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("a CA file without certificates: %v", err)
	}
	for _, name := range []string{"DES_OPA_TOKEN_ENV", "DES_BUNDLE_TOKEN_ENV", "DES_DECISION_LOG_TOKEN_ENV"} {
		_, err := des.LoadConfig(root, envOf(map[string]string{name: "1ORG-TOKEN"}))
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "name of an environment variable") {
			t.Errorf("%s=1ORG-TOKEN: %v", name, err)
		}
		if _, err := des.LoadConfig(root, envOf(map[string]string{name: "ORG_TOKEN"})); err != nil {
			t.Errorf("%s=ORG_TOKEN: %v", name, err)
		}
	}
}

// TestRemoteTLS: an https opa_url is trusted on the system's roots plus
// opa_ca_file, and a server whose CA is neither is refused.
func TestRemoteTLS(t *testing.T) {
	t.Parallel()
	testenv.Long(t)
	ctx := t.Context()
	root, env := remoteProject(t)
	cert := opatest.NewCA(t)
	srv := opatest.Start(t, opatest.Options{TLS: cert}, "rego", filepath.Join(root, ".des", "policies"))
	in := map[string]any{"tool": "Write", "writes": []any{map[string]any{"path": ".des/config.json", "tool": "Write"}}}
	for _, withCA := range []bool{true, false} {
		e := map[string]string{"DES_OPA_URL": srv.URL}
		if withCA {
			e["DES_OPA_CA_FILE"] = cert.CAFile
		}
		for k, v := range env {
			e[k] = v
		}
		eng, err := des.New(ctx, des.WithRoot(root), des.WithEnv(envOf(e)))
		if err != nil {
			t.Fatal(err)
		}
		d, err := eng.Evaluate(ctx, policy.ToolUse, in)
		switch {
		case withCA && (err != nil || !strings.Contains(strings.Join(d.Codes(), " "), "DES-PROTECTED-PATH")):
			t.Errorf("with opa_ca_file: %+v, %v", d, err)
		case !withCA && (err == nil || !strings.Contains(err.Error(), "certificate")):
			t.Errorf("without opa_ca_file: %+v, %v", d, err)
		}
	}
}

// An OPA server loaded with an organisation's rules in a gate package but
// not des's own policies answers every gate with a document: des refuses it
// (ErrBuiltinMismatch), so a write to des's files is not an allow.
func TestRemoteWithoutBuiltinPoliciesFailsClosed(t *testing.T) {
	t.Parallel()
	testenv.Long(t)
	root, env := remoteProject(t)
	org := t.TempDir()
	writeFile(t, filepath.Join(org, "org.rego"), "package des.gates.tool_use\n\ndeny contains {\"code\": \"ORG-X\", \"msg\": \"x\"} if input.never\n")
	srv := opatest.Start(t, opatest.Options{}, org)
	e := map[string]string{"DES_OPA_URL": srv.URL}
	for k, v := range env {
		e[k] = v
	}
	eng, err := des.New(t.Context(), des.WithRoot(root), des.WithEnv(envOf(e)))
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]any{"tool": "Write", "writes": []any{map[string]any{"path": ".des/config.json", "tool": "Write"}}}
	d, err := eng.Evaluate(t.Context(), policy.ToolUse, in)
	if !errors.Is(err, policy.ErrBuiltinMismatch) || !strings.Contains(err.Error(), "opa_url") {
		t.Fatalf("decision %+v, err %v; want ErrBuiltinMismatch naming opa_url", d, err)
	}
}
