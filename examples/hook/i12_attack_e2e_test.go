package main

import (
	"strings"
	"testing"
)

// The team's phase requirement files (setting phase_requirements_files)
// decide what the iSDLC phase gates require: an agent that rewrites them
// (Write, Edit, or a Bash redirection) relaxes the rules that judge it, as
// a policy file would. They are DES's to protect, like the policy
// directories.
func TestE2EAttackPhaseRequirementFilesProtected(t *testing.T) {
	root := t.TempDir()
	const file = "team/iteration-requirements.json"
	writeFile(t, root, file, `{"phase_requirements": {}}`)
	writeFile(t, root, ".des/config.json", `{"phase_requirements_files": ["./`+file+`"]}`)
	for _, c := range []struct {
		name  string
		event map[string]any
	}{
		{"Write", writeEvent(root, "Write", file)},
		{"Edit", writeEvent(root, "Edit", file)},
		{"Bash", bashEvent(t, root, "echo '{\"phase_requirements\": {}}' > "+file)},
		{"Bash rm of the directory", bashEvent(t, root, "rm -r team")},
	} {
		t.Run(c.name, func(t *testing.T) {
			reason := denyReason(t, runHookProcess(t, root, nil, c.event))
			if !strings.Contains(reason, "[DES-PROTECTED-PATH]") {
				t.Errorf("reason = %q, want DES-PROTECTED-PATH", reason)
			}
		})
	}
	// The setting from the environment is protected the same way.
	env := []string{"DES_PHASE_REQUIREMENTS_FILES=team/artifact-paths.json"}
	writeFile(t, root, "team/artifact-paths.json", `{"phases": {}}`)
	if reason := denyReason(t, runHookProcess(t, root, env, writeEvent(root, "Write", "team/artifact-paths.json"))); !strings.Contains(reason, "[DES-PROTECTED-PATH]") {
		t.Errorf("env setting: reason = %q, want DES-PROTECTED-PATH", reason)
	}
	// A neighbour of the file is not.
	if reason := denyReason(t, runHookProcess(t, root, nil, writeEvent(root, "Write", "team/notes.md"))); reason != "" {
		t.Errorf("unrelated file denied: %q", reason)
	}
}
