package des

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/internal/testrun"
)

// BenchmarkPhaseDelegation is Gate 1 on a phase delegation in an iSDLC
// project, in process with a warm engine: state discovery, plan, artifact
// checks, evaluation of pre_invocation with the phase guards, audit. The
// contract's budget is Gate 1's (≤ 5 ms in process).
func BenchmarkPhaseDelegation(b *testing.B) {
	benchPhaseDelegation(b, 0)
}

// BenchmarkPhaseDelegationWithTestRuns is BenchmarkPhaseDelegation with
// 1000 test runs des recorded in the phase (phase_evidence des): the
// attested store read and verified, the test iterations derived, at every
// call.
func BenchmarkPhaseDelegationWithTestRuns(b *testing.B) {
	benchPhaseDelegation(b, 1000)
}

func benchPhaseDelegation(b *testing.B, runs int) {
	root := b.TempDir()
	files := map[string]string{
		".isdlc/state.json": `{"current_phase": "06-implementation", "active_workflow": {"type": "feature",
			"phases": ["01-requirements", "05-test-strategy", "06-implementation", "08-code-review"],
			"current_phase": "06-implementation", "current_phase_index": 2, "artifact_folder": "REQ-0001-login",
			"git_branch": {"name": "feature/REQ-0001-login", "status": "active"}},
			"phases": {"06-implementation": {"status": "in_progress"}}}`,
		"docs/isdlc/tasks.md": "# Tasks\nFormat: v2.0\n\n## Phase 06: Implementation\n- [ ] T0001 login form | traces: AC-1\n  files: src/login.js (CREATE)\n",
	}
	for rel, content := range files {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	e, err := New(b.Context(), WithRoot(root), WithEnv(env(map[string]string{"DES_STATE_DIR": b.TempDir()})))
	if err != nil {
		b.Fatal(err)
	}
	store := e.testRunStore()
	for i := range runs {
		result := testrun.Failed
		if i%3 == 0 {
			result = testrun.Passed
		}
		r := testrun.Record{Time: time.Unix(int64(1_800_000_000+i), 0), Event: "PostToolUse", Command: "go test ./...", Runner: "go test",
			Result: result, Error: "--- FAIL: TestLogin", Signature: "--- FAIL: TestLogin",
			Belongs: testrun.Belongs{StateFile: ".isdlc/state.json", ISDLCPhase: "06-implementation", Workflow: "feature@"}}
		if err := store.Append(b.Context(), r); err != nil {
			b.Fatal(err)
		}
	}
	inv := gate.Invocation{Tool: gate.ToolAgent, AgentType: "qa-engineer", Prompt: "Review the login code", ToolUseID: "toolu_1"}
	if res, err := e.PreInvocation(b.Context(), inv); err != nil || !res.Denied() {
		b.Fatalf("want the out-of-order deny: %+v, %v", res, err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := e.PreInvocation(b.Context(), inv); err != nil {
			b.Fatal(err)
		}
	}
}
