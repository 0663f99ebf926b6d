// Package watchset names what the effect check (internal/integrity) watches
// in a project, as its des settings say: the hook and the command line that
// accepts a project's files as they are must agree on it.
package watchset

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/internal/integrity"
)

// requirementFilesIn lists the phase requirement files inside root,
// relative and slash-separated, as the watch names files; one outside the
// project is not the checker's to restore (DES-PROTECTED-PATH still denies
// a tool call that names it).
func requirementFilesIn(root string, files []string) []string {
	var out []string
	for _, f := range files {
		abs := f
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(root, filepath.FromSlash(f))
		}
		rel, err := filepath.Rel(root, abs)
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || strings.ContainsAny(rel, "*?[") {
			continue
		}
		out = append(out, filepath.ToSlash(rel))
	}
	return out
}

// For is the watched set of the project at root with the settings cfg.
func For(root string, cfg des.Config) *integrity.Watch {
	return &integrity.Watch{
		ConfigFile: des.ConfigFile,
		Trees:      append([]string{des.RunsDir, des.SessionsDir}, cfg.PolicyDirs...),
		// The task graph is a guarded document like a workflow state: whole
		// file, restored, a new one removed (des's wave sync is announced).
		// So are the phase requirement files inside the project (they
		// decide what the phase gates require; no tool may write them), and
		// the monorepo file that chooses the state in effect.
		StateGlobs: append(append(slices.Clone(cfg.GuardedStateFiles), cfg.TaskGraphFile, gate.StateSelectorFile), requirementFilesIn(root, cfg.PhaseRequirementsFiles)...),
		StepGlobs:  cfg.GuardedStepFiles,
	}
}
