package gate

import (
	"path/filepath"
	"strings"

	"github.com/deterministic-exec/des/internal/glob"
)

// DefaultStepGlobs is the default of the setting guarded_step_files.
var DefaultStepGlobs = []string{"**/steps/*.json"}

// StepFiles says which files of a commit are step files, by the setting
// that tells the write guard which writes it judges (guarded_step_files), so
// that a step the write guard guards is never committed unjudged: a path
// matching one of Globs (relative to Root) is a step file when its content
// has a step file's shape (LooksLikeStep), exactly as the write guard
// decides (DocumentWrite.Kind); test/fixtures/steps/01-01.json holding
// {"task_id": "x", "fixture": true} is not one.
//
// A path outside Root belongs to another project, whose setting des does not
// know: it is listed when it is named as a step file (steps/NN-NN.json and
// nWave's variants such as 02-01a.json) and has that shape, so that a
// caller can say it was left out (PreCommit.InProject).
type StepFiles struct {
	// Root is the absolute project root the globs are relative to; ""
	// takes each repository's top level.
	Root string
	// Globs are root-relative globs, "**" spanning directories; nil is
	// DefaultStepGlobs.
	Globs []string
	// Home is the user's home directory for a ~ in a command (BashCommit),
	// as the hook's environment has it: a warm server's own HOME may be
	// another's. "" takes this process's.
	Home string
}

// pick is what a path's name says about a file.
type pick int

const (
	pickNo      pick = iota // not a step file
	pickYes                 // a step file whatever it holds: no name makes one now, kept for the callers' switches
	pickIfLooks             // a step file if its content looks like one
)

// picker returns what the names of the repository paths of the work tree
// top say. The root and top are compared by their real paths, resolved once
// (git reports the top level resolved, CLAUDE_PROJECT_DIR may not be), and
// the repository paths lexically: git lists no path through a symbolic link.
func (s StepFiles) picker(top string) func(rel string) pick {
	root := s.Root
	if root == "" {
		root = top
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	if t, err := filepath.EvalSymlinks(top); err == nil {
		top = t
	}
	return func(rel string) pick {
		projectRel, err := filepath.Rel(root, filepath.Join(top, filepath.FromSlash(rel)))
		projectRel = filepath.ToSlash(projectRel)
		if err != nil || projectRel == ".." || strings.HasPrefix(projectRel, "../") || filepath.IsAbs(projectRel) {
			if stepName(rel) {
				return pickIfLooks // another project's: listed to be reported
			}
			return pickNo
		}
		return s.pickRel(projectRel)
	}
}

// pickRel is pick for a root-relative path.
func (s StepFiles) pickRel(rel string) pick {
	globs := s.Globs
	if globs == nil {
		globs = DefaultStepGlobs
	}
	for _, g := range globs {
		if glob.Match(g, rel) {
			return pickIfLooks
		}
	}
	return pickNo
}

// keep reports whether a file whose name gave p is a step file, given its
// content.
func (p pick) keep(content []byte) bool {
	return p == pickYes || p == pickIfLooks && LooksLikeStep(content)
}
