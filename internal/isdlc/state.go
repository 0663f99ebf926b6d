package isdlc

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/deterministic-exec/des/internal/datadoc"
	"github.com/deterministic-exec/des/internal/fileio"
)

// State file candidates, in the order the README gives.
const (
	desState      = ".des/state.json"
	monorepoFile  = ".isdlc/monorepo.json"
	isdlcState    = ".isdlc/state.json"
	projectEnvVar = "ISDLC_PROJECT"
)

// selection is the outcome of "Which state".
type selection struct {
	stateFile   string // "" = no state file
	project     string // monorepo project id, "" outside a monorepo
	projectPath string // its directory, slash, relative to the root ("" unknown)
	problem     string // set when monorepo.json itself is unusable
	err         error
}

// selectState picks the workflow state: the first that exists of
// .des/state.json, the monorepo project's .isdlc/projects/<id>/state.json,
// .isdlc/state.json. The project is chosen whenever monorepo.json exists,
// whichever state file is then used, since the plan and artifact locations
// depend on it too.
//
// A monorepo.json that exists but cannot be used (or names a project id that
// is not one path segment) is reported as a problem of that file rather than
// skipped: falling back to .isdlc/state.json would judge one project's calls
// by another's workflow.
func selectState(root *os.Root, opts Options) selection {
	return selectWith(root, opts, monorepoOnDisk(root))
}

// monorepoSource gives .isdlc/monorepo.json's content: present false when
// the file does not exist.
type monorepoSource func() (data []byte, present bool, err error)

func monorepoOnDisk(root *os.Root) monorepoSource {
	return func() ([]byte, bool, error) {
		if !exists(root, monorepoFile) {
			return nil, false, nil
		}
		data, err := fileio.ReadBoundedIn(root, monorepoFile, MaxStateBytes)
		return data, true, err
	}
}

// selectWith is selectState with monorepo.json's content from mono.
func selectWith(root *os.Root, opts Options, mono monorepoSource) selection {
	var sel selection
	if data, present, err := mono(); present {
		var cfg monorepo
		cfg, sel.problem, sel.err = parseMonorepo(data, err)
		if sel.problem == "" {
			sel.project, sel.projectPath, sel.err = cfg.choose(opts)
			if sel.err != nil {
				sel.problem = ProblemUnreadable
			}
		}
		if sel.problem != "" {
			switch {
			case exists(root, desState):
				// .des/state.json comes first whatever the monorepo says.
				return selection{stateFile: desState}
			case !exists(root, isdlcState) && !exists(root, ".isdlc/projects"):
				// No state the broken file could have chosen: no workflow,
				// rather than denying every commit of the project.
				return selection{}
			}
			sel.stateFile = monorepoFile
			return sel
		}
	}
	cands := []string{desState}
	if sel.project != "" {
		cands = append(cands, ".isdlc/projects/"+sel.project+"/state.json")
	}
	cands = append(cands, isdlcState)
	for _, c := range cands {
		if exists(root, c) {
			sel.stateFile = c
			return sel
		}
	}
	return selection{}
}

// monorepo is .isdlc/monorepo.json: iSDLC writes
// {"projects": {"<id>": {"path": "apps/api", …}}, "default_project": "<id>"};
// a list [{"id"|"name": …, "path": …}] and a bare {"<id>": "apps/api"} map are
// read too.
type monorepo struct {
	projects       []project // sorted by id
	defaultProject string
}

type project struct{ id, path string }

func parseMonorepo(data []byte, err error) (monorepo, string, error) {
	if err != nil {
		return monorepo{}, ProblemUnreadable, fmt.Errorf("%s cannot be read: %w", monorepoFile, err)
	}
	v, err := datadoc.Decode(data)
	if err != nil {
		return monorepo{}, ProblemInvalidJSON, fmt.Errorf("%s is not valid JSON: %w; fix it, or remove it if this is not a monorepo", monorepoFile, err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return monorepo{}, ProblemNotObject, fmt.Errorf("%s is not a JSON object (it is %s); it must be {\"projects\": {…}, \"default_project\": …}", monorepoFile, datadoc.Kind(v))
	}
	var m monorepo
	m.defaultProject, _ = obj["default_project"].(string)
	switch ps := obj["projects"].(type) {
	case map[string]any:
		for id, p := range ps {
			switch p := p.(type) {
			case map[string]any:
				dir, _ := p["path"].(string)
				m.projects = append(m.projects, project{id, dir})
			case string:
				m.projects = append(m.projects, project{id, p})
			}
		}
	case []any:
		for _, p := range ps {
			p, _ := p.(map[string]any)
			id, _ := p["id"].(string)
			if id == "" {
				id, _ = p["name"].(string)
			}
			dir, _ := p["path"].(string)
			if id != "" {
				m.projects = append(m.projects, project{id, dir})
			}
		}
	}
	sort.Slice(m.projects, func(i, j int) bool { return m.projects[i].id < m.projects[j].id })
	return m, "", nil
}

// choose picks the project as iSDLC does: ISDLC_PROJECT, else the project
// whose path is the longest prefix of cwd, else default_project. No project
// at all is no error (the root state applies).
func (m monorepo) choose(opts Options) (id, dir string, err error) {
	if v, ok := opts.Getenv(projectEnvVar); ok && v != "" {
		id = v
	} else if id = m.projectAt(opts.Root, opts.Cwd); id == "" {
		id = m.defaultProject
	}
	if id == "" {
		return "", "", nil
	}
	if !validID(id) {
		return "", "", fmt.Errorf("monorepo project id %q (from %s or %s) is not a single path segment; set %s to a project id of %s", id, projectEnvVar, monorepoFile, projectEnvVar, monorepoFile)
	}
	for _, p := range m.projects {
		if p.id == id {
			dir, _ = relPath(opts.Root, p.path)
			break
		}
	}
	return id, dir, nil
}

// validID: the id names a directory under .isdlc/projects, so it must not
// climb out of it or name it.
func validID(id string) bool {
	return id != "." && id != ".." && !strings.ContainsAny(id, "/\\\x00:")
}

// projectAt is the project whose path is the longest prefix of cwd, on path
// segment boundaries (apps/api does not hold apps/api2).
func (m monorepo) projectAt(root, cwd string) string {
	if cwd == "" {
		return ""
	}
	rel, ok := relPath(root, cwd)
	if !ok && filepath.IsAbs(cwd) {
		// The root or cwd may be reached through a link (macOS /var →
		// /private/var); compare the resolved paths too.
		r, err1 := filepath.EvalSymlinks(root)
		c, err2 := filepath.EvalSymlinks(cwd)
		if err1 == nil && err2 == nil {
			rel, ok = relPath(r, c)
		}
	}
	if !ok {
		return ""
	}
	best, bestLen := "", -1
	for _, p := range m.projects {
		pp, ok := relPath(root, p.path)
		if !ok || p.path == "" {
			continue
		}
		if pp == "." || rel == pp || strings.HasPrefix(rel, pp+"/") {
			n := len(pp)
			if pp == "." {
				n = 0
			}
			if n > bestLen {
				best, bestLen = p.id, n
			}
		}
	}
	return best
}

// relPath makes p relative to root, both compared as slash paths, cleaned,
// with a drive letter in either case (C:\repo\apps\api under c:/repo is
// apps/api). A relative p is taken as relative to the root already. ok is
// false when p lies outside the root.
func relPath(root, p string) (string, bool) {
	p = normPath(p)
	if !isAbsPath(p) {
		if p == ".." || strings.HasPrefix(p, "../") {
			return "", false
		}
		return p, true
	}
	r := normPath(root)
	if p == r {
		return ".", true
	}
	prefix := r
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	if !strings.HasPrefix(p, prefix) {
		return "", false
	}
	return p[len(prefix):], true
}

// normPath turns a Unix or Windows path into a cleaned slash path whose
// drive letter, if any, is lower case.
func normPath(p string) string {
	p = strings.ReplaceAll(p, `\`, "/")
	if hasDrive(p) {
		p = strings.ToLower(p[:1]) + p[1:]
	}
	return path.Clean(p)
}

func hasDrive(p string) bool {
	return len(p) >= 2 && p[1] == ':' && ('a' <= p[0] && p[0] <= 'z' || 'A' <= p[0] && p[0] <= 'Z')
}

func isAbsPath(p string) bool { return strings.HasPrefix(p, "/") || hasDrive(p) }
