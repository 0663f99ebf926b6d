package isdlc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/deterministic-exec/des/internal/datadoc"
	"github.com/deterministic-exec/des/internal/fileio"
)

// ErrRequirementFile is wrapped by every error about the setting
// phase_requirements_files.
var ErrRequirementFile = errors.New("phase requirement file")

// Keys of the requirement tables (data.des.phases.requirements).
const (
	iterationKey = "iteration_requirements"
	artifactKey  = "artifact_paths"
)

// loadRequirements reads the team's tables: a file whose object has
// phase_requirements is iSDLC's iteration-requirements.json, one with phases
// its artifact-paths.json. A kind no file provides keeps its default, so a
// team may replace one table only.
func loadRequirements(root *os.Root, files []string, defaults map[string]any) (map[string]any, error) {
	req := map[string]any{}
	from := map[string]string{}
	names := make([]any, 0, len(files))
	for _, name := range files {
		names = append(names, name)
		data, err := fileio.ReadBoundedIn(root, name, MaxStateBytes)
		if err != nil {
			return nil, fmt.Errorf("%w %s (setting phase_requirements_files, relative to the project root) cannot be read: %w", ErrRequirementFile, name, err)
		}
		v, err := datadoc.Decode(data)
		if err != nil {
			return nil, fmt.Errorf("%w %s is not valid JSON: %w; fix it or remove it from phase_requirements_files", ErrRequirementFile, name, err)
		}
		obj, _ := v.(map[string]any)
		var key string
		switch _, iter := obj["phase_requirements"]; {
		case iter && obj["phases"] != nil:
			return nil, fmt.Errorf("%w %s has both phase_requirements and phases; give iteration-requirements.json and artifact-paths.json as two files", ErrRequirementFile, name)
		case iter:
			key = iterationKey
		case obj["phases"] != nil:
			key = artifactKey
		default:
			return nil, fmt.Errorf("%w %s is neither an iteration-requirements.json (an object with phase_requirements) nor an artifact-paths.json (an object with phases); fix it or remove it from phase_requirements_files", ErrRequirementFile, name)
		}
		if prev, dup := from[key]; dup {
			return nil, fmt.Errorf("%w %s and %s are both %s tables; list one of them in phase_requirements_files", ErrRequirementFile, prev, name, key)
		}
		from[key] = name
		req[key] = obj
	}
	for _, key := range []string{iterationKey, artifactKey} {
		if _, ok := req[key]; !ok {
			if d, ok := defaults[key]; ok {
				req[key] = d
			}
		}
	}
	req["files"] = names
	return req, nil
}

// artifactPaths lists every artifact path of the tables, for every phase:
// artifact_validation.paths of the iteration requirements (enabled or not:
// Rego decides which count) and paths of the artifact paths table.
func artifactPaths(tables map[string]any) []string {
	seen := map[string]bool{}
	add := func(paths any) {
		list, _ := paths.([]any)
		for _, p := range list {
			if s, ok := p.(string); ok && s != "" {
				seen[s] = true
			}
		}
	}
	iter, _ := tables[iterationKey].(map[string]any)
	phases, _ := iter["phase_requirements"].(map[string]any)
	for _, entry := range phases {
		e, _ := entry.(map[string]any)
		av, _ := e["artifact_validation"].(map[string]any)
		add(av["paths"])
	}
	ap, _ := tables[artifactKey].(map[string]any)
	phases, _ = ap["phases"].(map[string]any)
	for _, entry := range phases {
		e, _ := entry.(map[string]any)
		add(e["paths"])
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

func artifactFolder(state map[string]any) string {
	aw, _ := state["active_workflow"].(map[string]any)
	f, _ := aw["artifact_folder"].(string)
	return f
}

// artifacts says, for every artifact path of the tables with
// {artifact_folder} substituted, whether it exists. A path still holding a
// placeholder is left out. In a monorepo a path also counts when it exists
// with its leading docs/ replaced by docs/<project>/ (iSDLC's default
// docs_location) or under the project's directory (docs_location "project").
func artifacts(root *os.Root, tables map[string]any, folder, project, projectDir string) map[string]bool {
	out := map[string]bool{}
	for _, p := range artifactPaths(tables) {
		if folder != "" {
			p = strings.ReplaceAll(p, "{artifact_folder}", folder)
		}
		if strings.Contains(p, "{") && strings.Contains(p, "}") {
			continue
		}
		variants := []string{p}
		if project != "" {
			if rest, ok := strings.CutPrefix(p, "docs/"); ok {
				variants = append(variants, "docs/"+project+"/"+rest)
			}
			if projectDir != "" && projectDir != "." {
				variants = append(variants, projectDir+"/"+p)
			}
		}
		found := false
		for _, v := range variants {
			if inRoot(root, v) {
				found = true
				break
			}
		}
		out[p] = found
	}
	return out
}

// inRoot reports whether name exists inside the root. An absolute path, one
// that climbs out with .., or a link that leads out is refused by os.Root and
// so counts as absent.
func inRoot(root *os.Root, name string) bool {
	if name == "" || isAbsPath(normPath(name)) {
		return false
	}
	_, err := root.Stat(filepath.FromSlash(name))
	return err == nil
}

// RequirementTables loads a team's requirement files below root over
// defaults, as Discover does with Options.RequirementFiles.
func RequirementTables(root string, files []string, defaults map[string]any) (map[string]any, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("isdlc: project root: %w", err)
	}
	defer r.Close()
	return loadRequirements(r, files, defaults)
}
