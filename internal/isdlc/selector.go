package isdlc

import (
	"path"
	"slices"
)

// MonorepoFile is the file that chooses, in a monorepo, which project's
// workflow state applies to a call (see Discover). A write to it can switch
// the state every phase guard reads, so the write guard judges it as it
// judges the state (SelectorSwitches).
const MonorepoFile = monorepoFile

// Switch is one place where a new .isdlc/monorepo.json would change the
// workflow state in effect: calls made in Cwd (slash, relative to the root;
// "." is the root) with ISDLC_PROJECT set to Env ("" = unset) read From now
// and would read To. FromActive tells whether From holds an active
// workflow. Only a change of state file counts: a project change under the
// same state moves the plan and artifact locations, which the agent writes
// anyway.
type Switch struct {
	Cwd, Env               string
	From, To               string // state files; "" = none
	FromProject, ToProject string
	FromActive             bool
}

// SelectorSwitches tells how replacing .isdlc/monorepo.json with incoming
// would change the state in effect, for every place a call can be made that
// either version names: the root and each project's directory, with
// ISDLC_PROJECT unset, as opts.Getenv has it, and set to each project id.
// A write that only adds a project no state belongs to yet, or renames
// nothing in use, reports no switch.
func SelectorSwitches(opts Options, incoming []byte) ([]Switch, error) {
	root, opts, err := openRoot(opts)
	if err != nil {
		return nil, err
	}
	defer root.Close()

	now := monorepoOnDisk(root)
	next := func() ([]byte, bool, error) { return incoming, true, nil }
	cwds, envs := []string{"."}, []string{""}
	if v, ok := opts.Getenv(projectEnvVar); ok && v != "" {
		envs = append(envs, v)
	}
	for _, src := range []monorepoSource{now, next} {
		data, present, err := src()
		if !present {
			continue
		}
		m, problem, _ := parseMonorepo(data, err)
		if problem != "" {
			continue
		}
		for _, p := range m.projects {
			if dir, ok := relPath(opts.Root, p.path); ok && p.path != "" {
				cwds = append(cwds, dir)
			}
			if validID(p.id) {
				envs = append(envs, p.id)
			}
		}
		if validID(m.defaultProject) {
			envs = append(envs, m.defaultProject)
		}
	}
	if opts.Cwd != "" {
		if rel, ok := relPath(opts.Root, opts.Cwd); ok {
			cwds = append(cwds, rel)
		}
	}
	slices.Sort(cwds)
	slices.Sort(envs)
	cwds, envs = slices.Compact(cwds), slices.Compact(envs)

	var out []Switch
	for _, cwd := range cwds {
		for _, env := range envs {
			o := opts
			o.Cwd = path.Join(opts.Root, cwd)
			o.Getenv = func(k string) (string, bool) {
				if k == projectEnvVar {
					return env, env != ""
				}
				return opts.Getenv(k)
			}
			before, after := selectWith(root, o, now), selectWith(root, o, next)
			if before.stateFile == after.stateFile {
				continue
			}
			s := Switch{Cwd: cwd, Env: env, From: before.stateFile, To: after.stateFile, FromProject: before.project, ToProject: after.project}
			if before.problem == "" && before.stateFile != "" {
				if state, problem, _ := readState(root, before.stateFile); problem == "" {
					_, s.FromActive = state["active_workflow"].(map[string]any)
				}
			}
			out = append(out, s)
		}
	}
	return out, nil
}
