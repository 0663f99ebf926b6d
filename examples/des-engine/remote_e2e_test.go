package main

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/opatest"
	"github.com/deterministic-exec/des/internal/testenv"
)

// remoteTeamPolicy is loaded into every project and into the OPA server:
// a team warning and a team waiver, so that both reach the hook's output.
const remoteTeamPolicy = `package des.gates.tool_use

warn contains {"code": "TEAM-CONFIG-WRITE", "msg": "the settings are reviewed by the platform team"} if {
	some w in input.writes
	w.path == ".des/config.json"
}

exception contains "DES-PROTECTED-PATH" if {
	some w in input.writes
	w.path == ".des/runs/waived.json"
}
`

// remoteOPA starts an OPA server with des's policies and the team's.
func remoteOPA(t *testing.T, o opatest.Options, extra ...string) *opatest.Server {
	t.Helper()
	team := t.TempDir()
	writeFile(t, team, "team.rego", remoteTeamPolicy)
	return opatest.Start(t, o, append([]string{"../../rego", team}, extra...)...)
}

// TestE2ERemoteSameOutput runs hook events with and without DES_OPA_URL,
// each in a fresh copy of the same project: Claude Code must see the same
// output, byte for byte once the project path is set aside.
func TestE2ERemoteSameOutput(t *testing.T) {
	t.Parallel()
	testenv.Long(t)
	srv := remoteOPA(t, opatest.Options{})
	project := func(t *testing.T) string {
		root := gate1Project(t, "TODO")
		writeFile(t, root, ".des/policies/team.rego", remoteTeamPolicy)
		return root
	}
	cases := []struct {
		name    string
		setup   func(t *testing.T) string
		event   func(t *testing.T, root string) map[string]any
		outputs bool // the event has something to say
	}{
		{"protected write, team warning", project, func(t *testing.T, root string) map[string]any { return writeEvent(root, "Write", ".des/config.json") }, true},
		{"protected write waived", project, func(t *testing.T, root string) map[string]any {
			return writeEvent(root, "Write", ".des/runs/waived.json")
		}, false},
		{"unrelated write", project, func(t *testing.T, root string) map[string]any { return writeEvent(root, "Edit", "src/main.go") }, false},
		{"bash into the state", project, func(t *testing.T, root string) map[string]any {
			return effBashEvent(root, "PreToolUse", "toolu_b", "echo x > .des/state.json")
		}, true},
		{"step write", project, func(t *testing.T, root string) map[string]any {
			ev := writeEvent(root, "Write", e2eStep)
			ev["tool_input"].(map[string]any)["content"] = `{"task_id": "01-01", "state": {"status": "DONE"}, "tdd_cycle": {"phase_execution_log": []}}`
			return ev
		}, true},
		{"gate 1 allows", project, func(t *testing.T, root string) map[string]any {
			return agentEvent(root, "Agent", renderPrompt(t, "execute-step"))
		}, false},
		{"gate 1 denies", func(t *testing.T) string {
			root := project(t)
			writeFile(t, root, e2eStep, `{"task_id": "01-01", "state": {"status": "DONE"}, "tdd_cycle": {"phase_execution_log": []}}`)
			return root
		}, func(t *testing.T, root string) map[string]any {
			return agentEvent(root, "Agent", strings.Replace(renderPrompt(t, "execute-step"), "<!-- DES-SECTION: QUALITY_GATES -->", "", 1))
		}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			embRoot, remRoot := c.setup(t), c.setup(t)
			emb := runHookProcess(t, embRoot, nil, c.event(t, embRoot))
			rem := runHookProcess(t, remRoot, []string{"DES_OPA_URL=" + srv.URL}, c.event(t, remRoot))
			embOut := strings.ReplaceAll(emb.stdout, embRoot, "<root>")
			remOut := strings.ReplaceAll(rem.stdout, remRoot, "<root>")
			if emb.code != 0 || rem.code != 0 || embOut != remOut {
				t.Fatalf("embedded (exit %d):\n%s\nremote (exit %d):\n%s\nremote stderr: %s", emb.code, embOut, rem.code, remOut, rem.stderr)
			}
			if (embOut != "") != c.outputs {
				t.Errorf("output %q: want output %v", embOut, c.outputs)
			}
			if strings.Contains(remOut, "DES-INTERNAL") {
				t.Errorf("DES-INTERNAL: %s", remOut)
			}
		})
	}
}

// TestE2ERemoteFailsClosed: with no decision from opa_url, a call DES is in
// charge of is denied with DES-INTERNAL naming opa_url, the cause and the
// fix, within the request's deadline; a call it is not in charge of is left
// alone.
func TestE2ERemoteFailsClosed(t *testing.T) {
	t.Parallel()
	refused := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return "http://" + l.Addr().String()
	}()
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(20 * time.Second):
		}
	}))
	t.Cleanup(hang.Close)
	for _, c := range []struct {
		name string
		env  []string
		want []string
	}{
		{"unreachable", []string{"DES_OPA_URL=" + refused}, []string{"opa_url " + refused, "connection refused", "check that the OPA server runs"}},
		{"timeout", []string{"DES_OPA_URL=" + hang.URL, "DES_OPA_TIMEOUT_MS=300"}, []string{"opa_url " + hang.URL, "no answer within 300ms", "opa_timeout_ms"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			start := time.Now()
			reason := denyReason(t, runHookProcess(t, root, c.env, writeEvent(root, "Write", ".des/config.json")))
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("took %v", took)
			}
			if !strings.HasPrefix(reason, "[DES-INTERNAL] ") {
				t.Errorf("reason %q: want DES-INTERNAL", reason)
			}
			for _, w := range c.want {
				if !strings.Contains(reason, w) {
					t.Errorf("reason %q does not say %q", reason, w)
				}
			}
			if r := runHookProcess(t, root, c.env, writeEvent(root, "Write", "src/main.go")); r.code != 0 || r.stdout != "" {
				t.Errorf("unrelated write: exit %d, stdout %q", r.code, r.stdout)
			}
		})
	}
}

// TestE2ERemoteToken: the token in DES_OPA_TOKEN, or in the variable
// opa_token_env names, reaches the OPA server, through the warm decision
// server too, which gets only DES_* variables and those the settings name.
func TestE2ERemoteToken(t *testing.T) {
	t.Parallel()
	testenv.Long(t)
	authz := filepath.Join(t.TempDir(), "authz.rego")
	if err := os.WriteFile(authz, []byte(opatest.TokenAuthz("s3cret")), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := remoteOPA(t, opatest.Options{Args: []string{"--authentication=token", "--authorization=basic"}}, authz)
	root := t.TempDir()
	reason := denyReason(t, runHookProcess(t, root, []string{"DES_OPA_URL=" + srv.URL, "DES_OPA_TOKEN=s3cret"}, writeEvent(root, "Write", ".des/config.json")))
	if !strings.HasPrefix(reason, "[DES-PROTECTED-PATH] ") {
		t.Errorf("with the token: %q", reason)
	}
	reason = denyReason(t, runHookProcess(t, root, []string{"DES_OPA_URL=" + srv.URL, "DES_OPA_TOKEN=wrong"}, writeEvent(root, "Write", ".des/config.json")))
	for _, w := range []string{"[DES-INTERNAL] ", "HTTP 401", "$DES_OPA_TOKEN"} {
		if !strings.Contains(reason, w) {
			t.Errorf("with a wrong token: %q lacks %q", reason, w)
		}
	}
	// A token in a variable of the team's choosing (opa_token_env in the
	// project's settings) reaches the server too: the client hands the
	// warm server the variable the setting names.
	other := t.TempDir()
	writeFile(t, other, ".des/config.json", `{"opa_url": "`+srv.URL+`", "opa_token_env": "ACME_OPA_TOKEN"}`)
	reason = denyReason(t, runHookProcess(t, other, []string{"ACME_OPA_TOKEN=s3cret"}, writeEvent(other, "Write", ".des/config.json")))
	if !strings.HasPrefix(reason, "[DES-PROTECTED-PATH] ") {
		t.Errorf("with the token in ACME_OPA_TOKEN: %q", reason)
	}
	// An unrelated variable of the client's environment stays out.
	reason = denyReason(t, runHookProcess(t, other, []string{"OTHER_TOKEN=s3cret"}, writeEvent(other, "Write", ".des/config.json")))
	if !strings.Contains(reason, "HTTP 401") {
		t.Errorf("without ACME_OPA_TOKEN: %q, want a 401", reason)
	}
}

// TestE2EPolicyDirsNotDecidingWithOPAURL: with opa_url the server's
// policies decide and the team's .des/policies do not, as a real hook call
// shows; status, policies and test each say so, naming the server and the
// directory, and test still runs the team's tests, for authoring.
func TestE2EPolicyDirsNotDecidingWithOPAURL(t *testing.T) {
	t.Parallel()
	srv := opatest.Start(t, opatest.Options{}, "../../rego") // des's policies, none of the team's
	root := gitProject(t)
	writeFile(t, root, ".des/policies/team.rego", `package des.gates.tool_use

warn contains {"code": "TEAM-LOCAL-ONLY", "msg": "the settings are reviewed"} if {
	some w in input.writes
	w.path == ".des/config.json"
}
`)
	writeFile(t, root, ".des/policies/team_test.rego", `package team_test

test_main_warns if {
	"TEAM-LOCAL-ONLY" in {v.code | some v in data.des.gates.tool_use.warn} with input as {"writes": [{"path": ".des/config.json"}]}
}
`)
	remote := []string{"DES_OPA_URL=" + srv.URL}
	// The claim the commands make: embedded, the team's rule warns; on
	// opa_url the server's rules deny and the team's says nothing.
	if r := runHookProcess(t, root, nil, writeEvent(root, "Write", ".des/config.json")); !strings.Contains(r.stdout, "TEAM-LOCAL-ONLY") {
		t.Fatalf("embedded: exit %d, stdout %q, want the team's warning", r.code, r.stdout)
	}
	if r := runHookProcess(t, root, remote, writeEvent(root, "Write", ".des/config.json")); !strings.Contains(r.stdout, "DES-PROTECTED-PATH") || strings.Contains(r.stdout, "TEAM-LOCAL-ONLY") {
		t.Fatalf("opa_url: exit %d, stdout %q, stderr %q: want the server's deny and no team warning", r.code, r.stdout, r.stderr)
	}

	env := append([]string{"CLAUDE_PROJECT_DIR=" + root}, remote...)
	notDeciding := "local policies not deciding: .des/policies: the hook enforces the policies loaded into the OPA server at " + srv.URL + ", not these"
	st := runIn(t, root, env, "status")
	if st.code != 0 || !strings.Contains(st.stdout, "decisions: "+srv.URL+" (the OPA server of opa_url decides every gate)") ||
		!strings.Contains(st.stdout, notDeciding) || !strings.Contains(st.stdout, "des-hook test still runs them, for authoring") {
		t.Errorf("status: exit %d\n%s%s", st.code, st.stdout, st.stderr)
	}
	var js struct {
		NotDeciding []string `json:"policy_dirs_not_deciding"`
	}
	if r := runIn(t, root, env, "status", "--json"); json.Unmarshal([]byte(r.stdout), &js) != nil || len(js.NotDeciding) != 1 || js.NotDeciding[0] != ".des/policies" {
		t.Errorf("status --json: %+v\n%s", js, r.stdout)
	}
	pol := runIn(t, root, env, "policies")
	if pol.code != 0 || !strings.HasPrefix(pol.stdout, "decisions: "+srv.URL+" (the OPA server of opa_url decides every gate") || !strings.Contains(pol.stdout, notDeciding) {
		t.Errorf("policies: exit %d\n%s%s", pol.code, pol.stdout, pol.stderr)
	}
	// JSON stays an array; the note goes to stderr.
	var cat []map[string]any
	if r := runIn(t, root, env, "policies", "--json"); json.Unmarshal([]byte(r.stdout), &cat) != nil || len(cat) == 0 || !strings.Contains(r.stderr, notDeciding) {
		t.Errorf("policies --json: exit %d, stderr %q", r.code, r.stderr)
	}
	te := runIn(t, root, env, "test")
	if te.code != 0 || !strings.Contains(te.stdout, "PASS: 1/1") ||
		!strings.Contains(te.stderr, "decisions come from the OPA server at "+srv.URL+" (opa_url)") || !strings.Contains(te.stderr, "the hook does not enforce .des/policies; they run here for authoring") {
		t.Errorf("test: exit %d\n%s%s", te.code, te.stdout, te.stderr)
	}

	// Embedded, none of it is said.
	for _, args := range [][]string{{"status"}, {"policies"}, {"test"}} {
		if r := runBinCLI(t, root, args...); strings.Contains(r.stdout+r.stderr, "not deciding") || strings.Contains(r.stdout+r.stderr, "OPA server") {
			t.Errorf("%v embedded:\n%s%s", args, r.stdout, r.stderr)
		}
	}
}
