package main

// Which state the guards read (CONTRACT §8 "Which state"; GH-55 TS-011,
// TS-012), Windows paths, unusable state files, the write guard on a
// workflow state (TS-009, TS-010) and the PostToolUse observers.
// Harness: phases_e2e_test.go.

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// monorepoJSON is iSDLC's .isdlc/monorepo.json. Assumption: projects is an
// object keyed by project id, each with a path relative to the root (iSDLC's
// own layout); "platform" owns apps/ as a whole, so the longest prefix
// decides between it and apps/api.
const monorepoJSON = `{
  "version": "1.0.0",
  "default_project": "web-frontend",
  "docs_location": "docs",
  "projects": {
    "api-service":  {"path": "apps/api", "registered_at": "2026-11-01T09:00:00Z"},
    "web-frontend": {"path": "apps/web", "registered_at": "2026-11-01T09:00:00Z"},
    "platform":     {"path": "apps",     "registered_at": "2026-11-01T09:00:00Z"},
    "mobile":       {"path": "apps/mobile"}
  }
}
`

// monorepo is TS-012's layout: api-service at 03-architecture, web-frontend
// with no active workflow, platform at 05-test-strategy, mobile registered
// but without a state file, and a root
// .isdlc/state.json at 01-requirements that only a fallback would read.
func monorepo(t *testing.T, files ...string) string {
	t.Helper()
	web := workflowState(featurePhases, 0)
	web["active_workflow"] = nil
	return newProject(t, workflowState(featurePhases, 0), append([]string{
		".isdlc/monorepo.json", monorepoJSON,
		".isdlc/projects/api-service/state.json", marshalState(t, workflowState(featurePhases, 2)),
		".isdlc/projects/web-frontend/state.json", marshalState(t, web),
		".isdlc/projects/platform/state.json", marshalState(t, workflowState(featurePhases, 4)),
		"apps/api/src/server.js", "//\n", "apps/web/index.html", "<p>\n", "apps/api-gateway/main.go", "package main\n", "apps/other/x/y.txt", "y\n",
	}, files...)...)
}

// TS-012: the project is chosen by ISDLC_PROJECT, else the longest project
// path prefix of the event's cwd, else default_project; hooks for one
// project never judge by another's state.
func TestPhasesMonorepoIsolation(t *testing.T) {
	t.Parallel()
	root := monorepo(t)
	api := denies("DES-PHASE-OUT-OF-ORDER").with("03-architecture", "01-requirements")
	platform := denies("DES-PHASE-OUT-OF-ORDER").with("05-test-strategy")
	in := func(rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }
	cases := []struct {
		name, env, cwd, agent string
		w                     want
	}{
		{"ISDLC_PROJECT api, its phase agent", "api-service", root, "solution-architect", allow},
		{"ISDLC_PROJECT api, another phase", "api-service", root, "requirements-analyst", api},
		{"ISDLC_PROJECT web, no workflow", "web-frontend", root, "requirements-analyst", allow},
		{"ISDLC_PROJECT web wins over cwd", "web-frontend", in("apps/api/src"), "requirements-analyst", allow},
		{"cwd in api", "", in("apps/api/src"), "requirements-analyst", api},
		{"cwd is api's path", "", in("apps/api"), "requirements-analyst", api},
		{"cwd in web", "", in("apps/web"), "requirements-analyst", allow},
		{"cwd at the root: default_project web", "", root, "requirements-analyst", allow},
		{"cwd outside the root: default_project", "", filepath.Dir(root), "system-designer", allow},
		{"apps/api-gateway is not under apps/api", "", in("apps/api-gateway"), "requirements-analyst", platform},
		{"longest prefix: platform", "", in("apps/other/x"), "requirements-analyst", platform},
		// "The first that exists of": a chosen project without a state file
		// falls back to .isdlc/state.json.
		{"ISDLC_PROJECT without a state file", "mobile", root, "solution-architect", denies("DES-PHASE-OUT-OF-ORDER").with("01-requirements", "03-architecture")},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var env []string
			if c.env != "" {
				env = []string{"ISDLC_PROJECT=" + c.env}
			}
			check(t, root, env, agentCall(c.cwd, tools(i), c.agent, "phase", "Run your phase for "+artifactFolder+"."), c.w)
		})
	}
}

// A monorepo.json that chooses no project (no ISDLC_PROJECT, no matching
// path, no default_project): .isdlc/state.json.
func TestPhasesMonorepoWithoutChoice(t *testing.T) {
	t.Parallel()
	noDefault := strings.Replace(monorepoJSON, `"default_project": "web-frontend",`, "", 1)
	root := newProject(t, workflowState(featurePhases, 0), ".isdlc/monorepo.json", noDefault,
		".isdlc/projects/api-service/state.json", marshalState(t, workflowState(featurePhases, 2)))
	check(t, root, nil, delegation(root, "Agent", "01-requirements"), allow)
	check(t, root, nil, delegation(root, "Task", "03-architecture"), denies("DES-PHASE-OUT-OF-ORDER").with("01-requirements"))
}

// .des/state.json comes first, monorepo or not.
func TestPhasesDesStateFirst(t *testing.T) {
	t.Parallel()
	for _, mono := range []bool{false, true} {
		name := "single"
		if mono {
			name = "monorepo"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// .des/state.json at 04-design (an early phase: no plan question
			// arises), the others at 01 (root) and 03 (api-service).
			des := ".des/state.json"
			var root string
			if mono {
				root = monorepo(t, des, marshalState(t, workflowState(featurePhases, 3)))
			} else {
				root = newProject(t, workflowState(featurePhases, 0), des, marshalState(t, workflowState(featurePhases, 3)))
			}
			check(t, root, []string{"ISDLC_PROJECT=api-service"}, delegation(root, "Agent", "04-design"), allow)
			check(t, root, nil, delegation(root, "Task", "01-requirements"), denies("DES-PHASE-OUT-OF-ORDER").with("04-design"))
		})
	}
}

// Only .des/state.json: the guards find it (DES's own location, §2).
func TestPhasesDesStateAlone(t *testing.T) {
	t.Parallel()
	root := newProject(t, nil, ".des/state.json", marshalState(t, workflowState(featurePhases, 5)))
	check(t, root, nil, delegation(root, "Agent", "06-implementation"), allow)
	check(t, root, nil, delegation(root, "Task", "01-requirements"), denies("DES-PHASE-OUT-OF-ORDER").with("06-implementation"))
	check(t, root, nil, skillCall(root, "isdlc", "advance"), denies("DES-GATE-BLOCKED"))
}

// The plan and the artifacts of a monorepo project are the project's.
func TestPhasesMonorepoPlanAndArtifacts(t *testing.T) {
	t.Parallel()
	env := []string{"ISDLC_PROJECT=api-service"}
	impl := marshalState(t, workflowState(featurePhases, 5))
	for _, c := range []struct {
		name, plan string
		w          want
	}{
		{"docs plan", "docs/isdlc/projects/api-service/tasks.md", allow},
		{"isdlc plan", ".isdlc/projects/api-service/tasks.md", allow},
		{"another project's plan", "docs/isdlc/projects/web-frontend/tasks.md", denies("DES-PLAN-MISSING").with("docs/isdlc/projects/api-service/tasks.md")},
	} {
		t.Run("plan/"+c.name, func(t *testing.T) {
			t.Parallel()
			root := newProjectNoPlan(t, nil, ".isdlc/monorepo.json", monorepoJSON, ".isdlc/projects/api-service/state.json", impl, c.plan, planV1)
			check(t, root, env, delegation(root, "Agent", "06-implementation"), c.w)
		})
	}

	// 03-architecture's artifact, met but for the file.
	arch := marshalState(t, readyToAdvance(featurePhases, 2))
	const name = "/requirements/" + artifactFolder + "/architecture-overview.md"
	for i, c := range []struct {
		name, at string
		w        want
	}{
		{"as listed", "docs" + name, allow},
		{"docs/<project>/", "docs/api-service" + name, allow},
		{"under the project path", "apps/api/docs" + name, allow},
		{"another project's docs only", "docs/web-frontend" + name, denies("DES-GATE-BLOCKED").with("architecture-overview.md")},
	} {
		t.Run("artifact/"+c.name, func(t *testing.T) {
			t.Parallel()
			root := newProjectNoPlan(t, nil, ".isdlc/monorepo.json", monorepoJSON, ".isdlc/projects/api-service/state.json", arch, c.at, "# arch\n")
			check(t, root, env, advanceCall(root, tools(i)), c.w)
		})
	}
}

// Windows: Claude Code on Windows sends cwd with backslashes (and a drive
// letter); the project path of monorepo.json is written with slashes.
// On other systems the root is a real directory, so the cwd is that root
// written the Windows way: every separator a backslash, or the mixed form
// Git Bash users produce.
func TestPhasesWindowsPaths(t *testing.T) {
	t.Parallel()
	root := monorepo(t)
	back := strings.ReplaceAll(root, "/", `\`)
	api := denies("DES-PHASE-OUT-OF-ORDER").with("03-architecture")
	cases := []struct {
		name, cwd string
		w         want
	}{
		{"backslashes", back + `\apps\api\src`, api},
		{"backslashes, trailing separator", back + `\apps\api\`, api},
		{"mixed separators", root + `\apps\api`, api},
		{"not a path-component prefix", back + `\apps\api-gateway`, denies("DES-PHASE-OUT-OF-ORDER").with("05-test-strategy")},
		{"backslashes, web", back + `\apps\web`, allow},
		// A drive path that is not under the root matches no project path:
		// the default project (web-frontend, no workflow) applies.
		{"foreign drive path", `C:\repo\apps\api`, allow},
	}
	if runtime.GOOS == "windows" {
		// The drive letter compares case-insensitively.
		lower := strings.ToLower(root[:1]) + root[1:]
		cases = append(cases, struct {
			name, cwd string
			w         want
		}{"lower-case drive letter", lower + `\apps\api`, api})
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			check(t, root, nil, agentCall(c.cwd, tools(i), "requirements-analyst", "reqs", "Capture requirements."), c.w)
		})
	}
	t.Run("drive letter root", func(t *testing.T) {
		if runtime.GOOS != "windows" {
			t.Skip("a root like C:\\repo exists only on Windows: the hook makes CLAUDE_PROJECT_DIR absolute, so on this system it cannot name a drive; the backslash cases above cover the comparison")
		}
	})

	// A Windows path in a prompt: an artifact folder is still no phase.
	single := newProject(t, workflowState(featurePhases, 0))
	for i, p := range []string{
		`Summarise docs\requirements\REQ-0004-advisory-hooks\requirements-spec.md`,
		`Read C:\repo\docs\requirements\REQ-0004-design\module-design.md`,
	} {
		check(t, single, nil, agentCall(single, tools(i), "general-purpose", "read", p), allow)
	}
	// ... and a phase key between backslashes is a whole token.
	check(t, single, nil, agentCall(single, "Agent", "general-purpose", "run", `Work in docs\phases\06-implementation\ now.`), denies("DES-PHASE-OUT-OF-ORDER").with("06-implementation"))
}

// A state file that is not a JSON object: calls the guards would judge (a
// phase delegation by subagent_type, a git commit) fail closed with
// DES-INTERNAL naming the file; other calls get no opinion.
func TestPhasesUnusableState(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, content string }{
		{"array", "[1, 2]\n"},
		{"invalid JSON", "{\"active_workflow\": {\"current_phase\": \"06-impl"},
		{"number", "42\n"},
		{"string", "\"06-implementation\"\n"},
		{"null", "null\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root := branchRepo(t, "main")
			writeFile(t, root, ".isdlc/state.json", c.content)
			internal := denies("DES-INTERNAL").with(".isdlc/state.json")
			check(t, root, nil, agentCall(root, "Agent", "software-developer", "impl", "Implement T0001."), internal)
			check(t, root, nil, agentCall(root, "Task", "requirements-analyst", "reqs", "Capture requirements."), internal)
			check(t, root, nil, bashEvent(t, root, "git commit -m wip"), internal)
			check(t, root, nil, agentCall(root, "Agent", "general-purpose", "summary", "Summarise the README."), allow)
			check(t, root, nil, agentCall(root, "Task", "discover-orchestrator", "discover", "Discover the project."), allow)
			check(t, root, nil, bashEvent(t, root, "npm test"), allow)
		})
	}
	// JSON objects without an active workflow or a current phase: no opinion.
	for i, content := range []string{`{}`, `{"active_workflow": null}`, `{"active_workflow": {"phases": ["01-requirements"]}}`, `{"state_version": 3, "current_phase": null, "active_workflow": {"type": "feature", "current_phase": null}}`} {
		t.Run("no workflow "+content, func(t *testing.T) {
			t.Parallel()
			root := branchRepo(t, "main")
			writeFile(t, root, ".isdlc/state.json", content)
			check(t, root, nil, agentCall(root, tools(i), "software-developer", "impl", "Implement T0001."), allow)
			check(t, root, nil, advanceCall(root, tools(i)), allow)
			check(t, root, nil, bashEvent(t, root, "git commit -m wip"), allow)
		})
	}
}

// TS-011: after finalize (active_workflow null, history archived) nothing
// of the guards applies; no state file at all is the same.
func TestPhasesNoActiveWorkflow(t *testing.T) {
	t.Parallel()
	done := readyToAdvance(featurePhases, len(featurePhases)-1)
	for _, p := range featurePhases {
		set(done, "phases."+p+".status", "completed")
	}
	done["active_workflow"] = nil
	done["workflow_history"] = []any{doc{"type": "feature", "phases": featurePhases, "status": "completed", "completed_at": "2026-11-24T18:00:00Z",
		"phase_snapshots": []any{}, "metrics": doc{"total_duration_minutes": 300}}}
	root := branchRepo(t, "main")
	withWorkflow(t, root, done)
	none := branchRepo(t, "main")
	for name, r := range map[string]string{"finalized": root, "no state": none} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, ev := range []map[string]any{
				delegation(r, "Agent", "06-implementation"),
				delegation(r, "Task", "01-requirements"),
				advanceCall(r, "Agent"),
				skillCall(r, "isdlc", "advance"),
				agentCall(r, "Task", "general-purpose", "wrap", "Phase complete, hand off."),
				agentCall(r, "Agent", "general-purpose", "route", "<!-- DES-PHASE: 06-implementation -->\nImplement."),
				bashEvent(t, r, "git commit -m wip"),
			} {
				check(t, r, nil, ev, allow)
			}
		})
	}
}

// TS-009 and TS-010: the existing V7/V8 write guard on an iSDLC workflow
// state written with the Write tool; the disk is unchanged after a deny
// (check compares the project's files).
func TestPhasesStateWriteGuard(t *testing.T) {
	t.Parallel()
	disk := workflowState(featurePhases, 1) // state_version 12; 01 completed
	root := newProject(t, disk)
	mono := newProjectNoPlan(t, nil, ".isdlc/monorepo.json", monorepoJSON, ".isdlc/projects/api-service/state.json", marshalState(t, disk))
	write := func(root, rel string, edit func(doc)) map[string]any {
		s := workflowState(featurePhases, 1)
		edit(s)
		return writeToolEvent(root, "Write", rel, map[string]any{"content": marshalState(t, s)})
	}
	cases := []struct {
		name string
		ev   map[string]any
		w    want
	}{
		{"TS-009 stale version", write(root, ".isdlc/state.json", func(s doc) { s["state_version"] = 10 }),
			denies("DES-STATE-V7-STALE").with("state_version", "10", "12", "e-read")},
		{"TS-009 monorepo state", write(mono, ".isdlc/projects/api-service/state.json", func(s doc) { s["state_version"] = 3 }),
			denies("DES-STATE-V7-STALE").with(".isdlc/projects/api-service/state.json")},
		{"unversioned", write(root, ".isdlc/state.json", func(s doc) { delete(s, "state_version") }), denies("DES-STATE-V7-UNVERSIONED")},
		{"TS-010 status regression", write(root, ".isdlc/state.json", func(s doc) {
			s["state_version"] = 13
			set(s, "active_workflow.phase_status.01-requirements", "pending")
			set(s, "phases.01-requirements.status", "pending")
		}), denies("DES-STATE-V8-STATUS").with(`phase_status["01-requirements"]`, `"completed"`, `"pending"`)},
		{"index regression", write(root, ".isdlc/state.json", func(s doc) {
			s["state_version"] = 13
			set(s, "active_workflow.current_phase_index", 0)
		}), denies("DES-STATE-V8-INDEX").with("current_phase_index")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := root
			if strings.Contains(c.name, "monorepo") {
				r = mono
			}
			check(t, r, nil, c.ev, c.w)
		})
	}
	t.Run("forward write", func(t *testing.T) {
		t.Parallel()
		ev := write(root, ".isdlc/state.json", func(s doc) { s["state_version"] = 13 })
		if o := decide(t, runPhaseHook(t, root, nil, ev)); o.deny != "" {
			t.Errorf("a forward write was denied:\n%s", o.deny)
		}
	})
}

// postAgent is a PostToolUse event of the Agent or Task tool; a nil
// response leaves tool_response out.
func postAgent(cwd, tool, subagent, prompt string, response any) map[string]any {
	return agentEv("PostToolUse", tool, cwd, subagent, "discover", prompt, evSession(phSession), evToolUseID("toolu_01PostE2E"), evResponse(response))
}

// contentResponse is Claude Code's Agent tool_response: text blocks.
func contentResponse(text string) map[string]any {
	return map[string]any{
		"content":         []any{map[string]any{"type": "text", "text": text}},
		"totalDurationMs": 81234, "totalTokens": 5120, "totalToolUseCount": 12,
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 500},
	}
}

const (
	wrongMenu = "How would you like to start?\n\n1. Scoped Analysis - analyse one area of the code\n2. Auto-detect the project type\n3. Exit\n"
	rightMenu = "Welcome to iSDLC discovery. Choose how to begin:\n\n1. New Project - start from a blank slate\n2. Existing Project - analyse this codebase\n3. Chat / Explore - ask questions first\n"
	summary   = "Discovery complete: 14 modules mapped, test coverage 61%, constitution drafted at docs/isdlc/constitution.md."
)

// The observers (PostToolUse Agent/Task): DES-WALKTHROUGH-MISSING and
// DES-DISCOVER-MENU are warnings as additionalContext, never a deny or a
// block, and they do not need an active workflow.
func TestPhasesObservers(t *testing.T) {
	t.Parallel()
	discovery := func(walkthrough any) doc {
		ctx := doc{"completed_at": "2026-11-25T09:00:00Z", "tech_stack": []any{"node"}}
		if walkthrough != nil {
			ctx["walkthrough_completed"] = walkthrough
		}
		return doc{"state_version": 2, "discovery_context": ctx, "active_workflow": nil}
	}
	walk := want{warn: []string{"DES-WALKTHROUGH-MISSING"}}
	menu := want{warn: []string{"DES-DISCOVER-MENU"}}
	cases := []struct {
		name     string
		state    any
		subagent string
		response any
		w        want
	}{
		{"walkthrough not completed", discovery(false), "discover-orchestrator", contentResponse(summary), walk},
		{"walkthrough field missing", discovery(nil), "discover-orchestrator", contentResponse(summary), walk},
		{"walkthrough completed", discovery(true), "discover-orchestrator", contentResponse(summary), allow},
		{"no discovery_context", doc{"state_version": 2}, "discover-orchestrator", contentResponse(summary), allow},
		{"no tool_response", discovery(false), "discover-orchestrator", nil, allow},
		{"another agent", discovery(false), "software-developer", contentResponse(summary), allow},
		{"string response", discovery(false), "discover-orchestrator", summary, walk},
		{"with an active workflow", set(workflowState(featurePhases, 5), "discovery_context", doc{"walkthrough_completed": false}), "discover-orchestrator", contentResponse(summary), walk},
		{"no state file", nil, "discover-orchestrator", contentResponse(summary), allow},
		// No workflow state, no iSDLC project: no opinion, the menu check
		// included (issue 28; iSDLC's installer writes .isdlc/state.json
		// before discover runs).
		{"no state file, wrong menu", nil, "discover-orchestrator", contentResponse(wrongMenu), allow},
		{"wrong menu", discovery(true), "discover-orchestrator", contentResponse(wrongMenu), menu},
		{"right menu", discovery(true), "discover-orchestrator", contentResponse(rightMenu), allow},
		{"right menu plus a forbidden option", discovery(true), "discover-orchestrator", contentResponse(rightMenu + "4. Scoped Analysis - one area only\n"), menu},
		{"no Chat or Explore", discovery(true), "discover-orchestrator", contentResponse(strings.Replace(rightMenu, "3. Chat / Explore - ask questions first\n", "3. Quit the wizard and do nothing\n", 1)), menu},
		{"wrong menu as a string", discovery(true), "discover-orchestrator", wrongMenu, menu},
		{"too short to be a menu", discovery(true), "discover-orchestrator", contentResponse("1. Scoped Analysis"), allow},
		{"no numbered options", discovery(true), "discover-orchestrator", contentResponse("We skipped Scoped Analysis and Auto-detect this time; the discovery report is in docs/isdlc/discovery.md."), allow},
		{"both", discovery(false), "discover-orchestrator", contentResponse(wrongMenu), want{warn: []string{"DES-DISCOVER-MENU", "DES-WALKTHROUGH-MISSING"}}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			root := newProjectNoPlan(t, c.state)
			o := check(t, root, nil, postAgent(root, tools(i), c.subagent, "/isdlc discover", c.response), c.w)
			if c.w.warn != nil && o.event != "PostToolUse" {
				t.Errorf("hookEventName = %q, want PostToolUse: %s", o.event, o.stdout)
			}
			if strings.Contains(o.stdout, `"decision"`) {
				t.Errorf("an observer decided: %s", o.stdout)
			}
		})
	}
	// A null tool_response is not present.
	root := newProjectNoPlan(t, discovery(false))
	ev := postAgent(root, "Agent", "discover-orchestrator", "/isdlc discover", nil)
	ev["tool_response"] = nil
	check(t, root, nil, ev, allow)
}

// `hook settings` routes the events the guards need to the hook (Skill at
// PreToolUse, Agent/Task at PostToolUse), and `hook policies` lists every
// §8 code with its severity.
func TestPhasesSettingsAndCatalogue(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	res := runBinCLI(t, root, "settings")
	if res.code != 0 {
		t.Fatalf("hook settings: %+v", res)
	}
	var settings struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &settings); err != nil {
		t.Fatalf("hook settings stdout: %v\n%s", err, res.stdout)
	}
	matches := func(event, tool string) bool {
		for _, m := range settings.Hooks[event] {
			if m.Matcher == "" || m.Matcher == "*" {
				return true
			}
			if re, err := regexp.Compile("^(?:" + m.Matcher + ")$"); err == nil && re.MatchString(tool) {
				return true
			}
		}
		return false
	}
	for _, c := range []struct{ event, tool string }{
		{"PreToolUse", "Agent"}, {"PreToolUse", "Task"}, {"PreToolUse", "Skill"}, {"PreToolUse", "Bash"},
		{"PostToolUse", "Agent"}, {"PostToolUse", "Task"},
	} {
		if !matches(c.event, c.tool) {
			t.Errorf("hook settings: no %s matcher covers %s:\n%s", c.event, c.tool, res.stdout)
		}
	}

	cat := runBinCLI(t, root, "policies")
	if cat.code != 0 {
		t.Fatalf("hook policies: %+v", cat)
	}
	for code, sev := range map[string]string{
		"DES-PHASE-OUT-OF-ORDER": "deny", "DES-PHASE-UNTRACKED": "deny", "DES-PLAN-MISSING": "deny", "DES-PLAN-FORMAT": "warn",
		"DES-GATE-BLOCKED": "deny", "DES-ITERATION-CORRIDOR": "deny", "DES-CONSTITUTION-PENDING": "deny",
		"DES-BRANCH-PROTECTED": "deny", "DES-BRANCH-INTERMEDIATE": "deny", "DES-WALKTHROUGH-MISSING": "warn", "DES-DISCOVER-MENU": "warn",
	} {
		found := false
		for _, line := range strings.Split(cat.stdout, "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == code {
				found = true
				if f[1] != sev {
					t.Errorf("hook policies: %s has severity %s, want %s", code, f[1], sev)
				}
			}
		}
		if !found {
			t.Errorf("hook policies does not list %s", code)
		}
	}
}

// TS-001 step 5: the last phase completed (index = len(phases)) and the
// workflow not yet finalized. The orchestrator's finalize call is no
// advancement (no advance phrase); a commit on the workflow branch at the
// last phase is allowed.
func TestPhasesAfterTheLastPhase(t *testing.T) {
	t.Parallel()
	last := len(featurePhases) - 1
	s := readyToAdvance(featurePhases, last)
	set(s, "phases.08-code-review.status", "completed")
	set(s, "active_workflow.phase_status.08-code-review", "completed")
	set(s, "active_workflow.current_phase_index", len(featurePhases))
	root := branchRepo(t, "main")
	git(t, root, "checkout", "-q", workflowBranch)
	withWorkflow(t, root, s)
	check(t, root, nil, agentCall(root, "Agent", "sdlc-orchestrator", "finalize", "Finalize the workflow: archive it to workflow_history and collect the phase snapshots."), allow)
	check(t, root, nil, bashEvent(t, root, "git commit -m 'feat(cart): total'"), allow)
	check(t, root, nil, delegation(root, "Task", "08-code-review"), denies("DES-PHASE-UNTRACKED").with(`phases["08-code-review"].status`))
}

// Files written on Windows: a CRLF task plan (git's autocrlf) is read like
// an LF one; a monorepo.json whose project paths use backslashes or end in a
// separator still matches the cwd. Assumption: the seam's "compare on
// slash-normalised, cleaned paths" applies to both sides of the comparison.
func TestPhasesWindowsWrittenFiles(t *testing.T) {
	t.Parallel()
	crlf := func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }
	for i, c := range []struct {
		name, plan string
		w          want
	}{
		{"complete v2.0 plan", crlf(planV2), allow},
		{"v2.0 plan without traces", crlf(strings.NewReplacer(" | traces: FR-01, AC-01a", "", " | traces: FR-01, AC-01b", "").Replace(planV2)), want{warn: []string{"DES-PLAN-FORMAT"}}},
	} {
		t.Run("CRLF "+c.name, func(t *testing.T) {
			t.Parallel()
			root := newProjectNoPlan(t, workflowState(featurePhases, 5), planPath, c.plan)
			check(t, root, nil, delegation(root, tools(i), "06-implementation"), c.w)
		})
	}
	for i, path := range []string{`apps\\api`, `apps/api/`, `./apps/api`} {
		t.Run("project path "+path, func(t *testing.T) {
			t.Parallel()
			mono := strings.Replace(monorepoJSON, `"path": "apps/api"`, `"path": "`+path+`"`, 1)
			root := newProjectNoPlan(t, nil, ".isdlc/monorepo.json", mono,
				".isdlc/projects/api-service/state.json", marshalState(t, workflowState(featurePhases, 2)),
				"apps/api/src/server.js", "//\n")
			check(t, root, nil, agentCall(filepath.Join(root, "apps", "api", "src"), tools(i), "requirements-analyst", "reqs", "Capture requirements."),
				denies("DES-PHASE-OUT-OF-ORDER").with("03-architecture"))
		})
	}
}
