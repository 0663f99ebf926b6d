package gitexec

import (
	"context"
	"path/filepath"
	"strings"
)

// WorkTrees are the work trees of the repositories that hold dirs, each
// repository (git common dir) once, with the work tree of the first dir
// that is in it: the project's first, whose step-file globs apply.
func WorkTrees(ctx context.Context, dirs ...string) map[string]string {
	git := new(Runner)
	out := map[string]string{} // common git dir -> top level
	for _, d := range dirs {
		raw, err := git.Run(ctx, d, nil, "rev-parse", "--path-format=absolute", "--git-common-dir", "--show-toplevel")
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
		if len(lines) != 2 || lines[1] == "" {
			continue
		}
		if _, ok := out[lines[0]]; !ok {
			out[lines[0]] = filepath.FromSlash(lines[1])
		}
	}
	return out
}
