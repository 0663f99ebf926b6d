package claudecode_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/deterministic-exec/des/claudecode"
)

// A Go program decides a Claude Code event in process, as the des-hook
// command hook would: here an agent's Write to des's own policies.
func Example() {
	project, _ := os.MkdirTemp("", "project")
	state, _ := os.MkdirTemp("", "des-state")
	defer os.RemoveAll(project)
	defer os.RemoveAll(state)

	// The event as Claude Code sends it (or as an Agent SDK hook callback gets it).
	payload := fmt.Sprintf(`{"session_id":"s1","cwd":%q,"hook_event_name":"PreToolUse","tool_name":"Write",
		"tool_input":{"file_path":%q,"content":"package relax"},"tool_use_id":"toolu_01"}`,
		project, filepath.Join(project, ".des/policies/relax.rego"))
	ev, err := claudecode.DecodeEvent([]byte(payload))
	if err != nil {
		fmt.Println(err) // not one JSON object: say where, and have no opinion
		return
	}

	// The hook's environment: the project, and where des keeps its state.
	env := map[string]string{"CLAUDE_PROJECT_DIR": project, "DES_STATE_DIR": state}
	h := claudecode.New(claudecode.WithEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }))

	out := h.Handle(context.Background(), ev)
	if out.NoOpinion() {
		fmt.Println("no opinion")
		return
	}
	first, _, _ := strings.Cut(out.HookSpecificOutput.PermissionDecisionReason, "\n")
	fmt.Println(out.HookSpecificOutput.PermissionDecision)
	fmt.Println(first)
	// Output:
	// deny
	// [DES-PROTECTED-PATH] Write may not write .des/policies/relax.rego: DES protects .des/policies so that an agent cannot change the rules or the evidence that judge it
}
