package main

// The honest property, beside the attack property: random sequences of what
// an agent and the person beside it honestly do in a project with des
// installed (writes through the guard, a formatter rewriting what a Write
// landed, git, hand edits between calls, calls the user declines, plain
// commands) end with no deny, no block, no DES-INTEGRITY or DES-INTERNAL in
// any output, and no content lost. Every call runs through the built hook
// as Claude Code runs it (atkProject, attack_harness_test.go), with the
// matchers `hook settings` prints, in whichever mode TestMain set (the warm
// decision server or each event in a process of its own).

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/internal/statedir"
	"github.com/deterministic-exec/des/internal/testenv"
	"github.com/deterministic-exec/des/template"
)

// The subagent that works on the open step: every tool call of the
// sequence is its own.
const (
	honestAgentID   = "a6fbb44895c6a27dd"
	honestAgentType = "software-crafter"
)

// honestSources are the ordinary files the agent and the person write.
var honestSources = []string{"src/app.go", "src/cart.go", "notes.txt", "docs/feature/shop/notes.md"}

// TestE2EHonestWorkProperty runs seeded sequences of honest operations:
// 2 seeds of 14 steps by default, 12 of 40 with DES_TEST_LONG=1;
// DES_HONEST_SEED=N replays one seed.
func TestE2EHonestWorkProperty(t *testing.T) {
	t.Parallel()
	n, steps := testenv.Pick(2, 14), testenv.Pick(12, 40)
	seeds := []uint64{}
	for i := range n {
		seeds = append(seeds, 20261129+uint64(i))
	}
	if s := os.Getenv("DES_HONEST_SEED"); s != "" {
		seed, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
		if err != nil {
			t.Fatalf("DES_HONEST_SEED=%q: %v", s, err)
		}
		seeds = []uint64{seed}
	}
	tmpl := newAtkProject(t, false)
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			h := newHonest(t, tmpl, seed)
			h.steps = steps
			t.Cleanup(func() {
				if !t.Failed() && testing.Verbose() {
					t.Logf("seed %d, sequence:\n  %s", seed, strings.Join(h.log, "\n  "))
				}
				if t.Failed() {
					if out, err := exec.Command("bash", "-c", "ls -la --time-style=full-iso "+h.p.stateDir+"/projects/*/integrity/inflight; date").CombinedOutput(); err == nil {
						t.Logf("in flight:\n%s", out)
					}
					t.Logf("seed %d, sequence:\n  %s\nreplay: DES_HONEST_SEED=%d go test -run 'TestE2EHonestWorkProperty' ./examples/des-engine", seed, strings.Join(h.log, "\n  "), seed)
				}
			})
			for range steps {
				h.step()
				if t.Failed() {
					return
				}
			}
			h.nothingLost()
		})
	}
}

// honest is one sequence in one project.
type honest struct {
	t    *testing.T
	p    *atkProject
	rng  *rand.Rand
	n    int
	log  []string
	seen map[string]map[string]bool // path -> contents a person or an allowed write put there
	// branches made so far.
	branches []string
	steps    int // in the sequence
	// tag ends every Bash command of the seed ("ls # honest seed N"). The
	// seeds run side by side with one parent, this test process, where
	// Claude Code runs each session's calls under its own; des counts a
	// process under the caller's parents that runs a call's command as what
	// the call left running, so two seeds running the same command at once
	// would keep each other's calls in flight and undo a hand edit made
	// after them.
	tag string
}

func newHonest(t *testing.T, tmpl *atkProject, seed uint64) *honest {
	p := copyAtkProject(t, tmpl)
	// A 5 s evaluation budget, as runHookProcess gives: a test machine
	// running seeds side by side can stretch an evaluation past the 500 ms
	// default into DES-INTERNAL; speed is the benchmarks' business.
	p.env = append(p.env, "DES_VALIDATION_TIMEOUT_MS=5000")
	h := &honest{t: t, p: p, rng: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), seen: map[string]map[string]bool{}, branches: []string{"master"}, tag: fmt.Sprintf(" # honest seed %d", seed)}
	if b := strings.TrimSpace(p.git(t, "branch", "--show-current")); b != "master" {
		h.branches = []string{b}
	}
	writeFile(t, p.root, "src/cart.go", "package app\n\nfunc Total() int { return 0 }\n")
	for _, rel := range append(slices.Clone(honestSources), atkOpenStep, atkConfig) {
		h.observe(rel)
	}
	// The orchestrator delegates the open step to a subagent (Gate 1).
	prompt, err := template.Defaults().Render("execute-step", template.Data{StepFile: atkOpenStep, Step: map[string]any{"task_id": "01-02"}, Agent: map[string]any{"name": honestAgentType}})
	if err != nil {
		t.Fatal(err)
	}
	ev := agentEvent(p.root, "Agent", prompt.Text)
	ev["tool_use_id"] = p.toolUseID()
	h.expectClean("Gate 1 for "+atkOpenStep, p.hook(t, ev, atkHookDeadline))
	return h
}

// observe records what a person or an allowed write put at rel.
func (h *honest) observe(rel string) {
	data, err := os.ReadFile(h.p.path(rel))
	if err != nil {
		return
	}
	if h.seen[rel] == nil {
		h.seen[rel] = map[string]bool{}
	}
	h.seen[rel][string(data)] = true
}

// replaced drops what rel holds now from the contents to keep: its author
// (the agent through the guard, the person, their formatter) replaces it.
func (h *honest) replaced(rel string) {
	if data, err := os.ReadFile(h.p.path(rel)); err == nil {
		delete(h.seen[rel], string(data))
	}
}

func (h *honest) disk(rel string) (string, bool) {
	data, err := os.ReadFile(h.p.path(rel))
	return string(data), err == nil
}

// expectClean fails on a deny, a block or a des error code in a reply.
func (h *honest) expectClean(what string, r atkReply) {
	h.t.Helper()
	if r.permissionDecision == "deny" || r.decision == "block" {
		h.t.Errorf("honest work was refused at %s (step %d): %s%s", what, h.n, r.denyReason, r.reason)
	}
	for _, code := range []string{"DES-INTEGRITY", "DES-INTERNAL"} {
		if strings.Contains(r.stdout, code) || strings.Contains(r.stderr, code) {
			h.t.Errorf("%s at %s (step %d):\nstdout: %.1500s\nstderr: %.1500s", code, what, h.n, r.stdout, r.stderr)
		}
	}
}

// event is a tool event of the subagent.
func (h *honest) event(name, tool string, input map[string]any) map[string]any {
	return toolEvent(name, tool, h.p.root, input, append(h.p.evOpts(), evAgent(honestAgentID, honestAgentType))...)
}

// tool is one Write or Edit call: PreToolUse; the content lands; during
// (a formatter hook that runs before des's PostToolUse), when set; then
// PostToolUse.
func (h *honest) tool(tool, rel, content string, input, response map[string]any, during func()) {
	h.t.Helper()
	ev := h.event("PreToolUse", tool, input)
	pre := h.p.hook(h.t, ev, atkHookDeadline)
	h.expectClean("PreToolUse "+tool+" "+rel, pre)
	if pre.permissionDecision == "deny" {
		return
	}
	h.replaced(rel)
	writeFile(h.t, h.p.root, rel, content)
	if during != nil {
		during()
	}
	h.observe(rel)
	h.expectClean("PostToolUse "+tool+" "+rel, h.p.hook(h.t, afterEv(ev, "PostToolUse", evResponse(response)), atkHookDeadline))
	if got, _ := h.disk(rel); !h.seen[rel][got] {
		h.t.Errorf("after the %s of %s, the file holds %.300q, which neither the write nor its formatter put there", tool, rel, got)
	}
}

// write is a Write tool call of content at rel.
func (h *honest) write(rel, content string, during func()) {
	path := h.p.path(rel)
	orig, ok := h.disk(rel)
	typ, original := "update", any(orig)
	if !ok {
		typ, original = "create", nil
	}
	h.tool("Write", rel, content, map[string]any{"file_path": path, "content": content},
		map[string]any{"type": typ, "filePath": path, "content": content, "structuredPatch": []any{}, "originalFile": original}, during)
}

// edit is an Edit tool call replacing old with new in rel, which holds
// old once.
func (h *honest) edit(rel, old, new string) {
	path := h.p.path(rel)
	orig, _ := h.disk(rel)
	h.tool("Edit", rel, strings.Replace(orig, old, new, 1), map[string]any{"file_path": path, "old_string": old, "new_string": new, "replace_all": false},
		map[string]any{"filePath": path, "oldString": old, "newString": new, "originalFile": orig, "structuredPatch": []any{}, "userModified": false, "replaceAll": false}, nil)
}

// bash is one Bash call of the subagent, through the harness.
func (h *honest) bash(command string) atkCall {
	h.t.Helper()
	c := h.p.bashWith(h.t, "", command+h.tag, map[string]any{"agent_id": honestAgentID, "agent_type": honestAgentType})
	h.expectClean("PreToolUse Bash "+command, c.pre)
	h.expectClean(c.postEvent+" Bash "+command, c.post)
	return c
}

// stepDoc reads the step file as a document, nil when it does not parse.
func (h *honest) stepDoc() map[string]any {
	raw, ok := h.disk(atkOpenStep)
	if !ok {
		return nil
	}
	var doc map[string]any
	if json.Unmarshal([]byte(raw), &doc) != nil {
		return nil
	}
	return doc
}

// advance moves the step on by one allowed write: the phase in progress
// finishes (EXECUTED with PASS, REFACTOR_L4 SKIPPED with a reason) and the
// next one starts; with every phase finished, only the notes change. It
// reports whether a phase moved.
func advance(doc map[string]any, note string) bool {
	doc["notes"] = note
	tdd, _ := doc["tdd_cycle"].(map[string]any)
	log, _ := tdd["phase_execution_log"].([]any)
	for i, p := range log {
		ph, _ := p.(map[string]any)
		switch ph["status"] {
		case "IN_PROGRESS":
			if ph["phase_name"] == "REFACTOR_L4" {
				ph["status"], ph["blocked_by"] = "SKIPPED", "NOT_APPLICABLE: nothing left to abstract"
			} else {
				ph["status"], ph["outcome"], ph["outcome_details"] = "EXECUTED", "PASS", "tests green"
			}
			ph["ended_at"] = "2026-11-20T11:00:00Z"
			if i+1 < len(log) {
				next, _ := log[i+1].(map[string]any)
				if next["status"] == "NOT_EXECUTED" {
					next["status"], next["started_at"] = "IN_PROGRESS", "2099-01-01T00:00:00Z"
				}
			}
			return true
		case "NOT_EXECUTED":
			ph["status"], ph["started_at"] = "IN_PROGRESS", "2099-01-01T00:00:00Z"
			return true
		}
	}
	return false
}

func indentJSON(doc any) string {
	raw, _ := json.MarshalIndent(doc, "", "  ")
	return string(raw) + "\n"
}

// formatted is what a formatter makes of a JSON document: another indent,
// another key order, the trailing newline added or taken away.
func formatted(raw string, how int) string {
	var buf bytes.Buffer
	switch how {
	case 0:
		if json.Indent(&buf, []byte(raw), "", "    ") != nil {
			return raw
		}
		return strings.TrimRight(buf.String(), "\n") + "\n"
	case 1:
		if json.Indent(&buf, []byte(raw), "", "\t") != nil {
			return raw
		}
		return strings.TrimRight(buf.String(), "\n") + "\n"
	case 2: // the top-level keys in reverse order
		var doc map[string]json.RawMessage
		if json.Unmarshal([]byte(raw), &doc) != nil {
			return raw
		}
		var keys []string
		for k := range doc {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		slices.Reverse(keys)
		buf.WriteString("{\n")
		for i, k := range keys {
			var v bytes.Buffer
			if json.Indent(&v, doc[k], "  ", "  ") != nil {
				return raw
			}
			kk, _ := json.Marshal(k)
			fmt.Fprintf(&buf, "  %s: %s", kk, v.String())
			if i < len(keys)-1 {
				buf.WriteString(",")
			}
			buf.WriteString("\n")
		}
		buf.WriteString("}\n")
		return buf.String()
	default:
		if strings.HasSuffix(raw, "\n") {
			return strings.TrimRight(raw, "\n")
		}
		return raw + "\n"
	}
}

// step runs one random operation and checks it.
func (h *honest) step() {
	h.t.Helper()
	h.n++
	n := h.n
	t, p := h.t, h.p
	note := func(s string) { h.log = append(h.log, s) }
	switch op := h.rng.IntN(16); op {
	case 0, 1: // the subagent writes an ordinary file through the guard
		rel := honestSources[h.rng.IntN(len(honestSources))]
		content := fmt.Sprintf("// written by the agent at step %d\npackage app\n", n)
		if cur, ok := h.disk(rel); ok && h.rng.IntN(2) == 0 && strings.Contains(cur, "\n") {
			first := cur[:strings.Index(cur, "\n")+1]
			note(fmt.Sprintf("Edit %s (first line)", rel))
			h.edit(rel, first, fmt.Sprintf("// edited by the agent at step %d\n", n))
			return
		}
		note("Write " + rel)
		h.write(rel, content, nil)
	case 2, 3, 4: // the subagent moves the step on, through the guard, maybe formatted after
		doc := h.stepDoc()
		if doc == nil {
			note("(the step file does not parse: no step write)")
			return
		}
		moved := advance(doc, fmt.Sprintf("agent note %d", n))
		content := indentJSON(doc)
		var during func()
		what := fmt.Sprintf("Write %s (phase moved: %v)", atkOpenStep, moved)
		if h.rng.IntN(2) == 0 {
			how := h.rng.IntN(4)
			what += fmt.Sprintf(", formatter %d before PostToolUse", how)
			during = func() { writeFile(t, p.root, atkOpenStep, formatted(content, how)) }
		}
		if !moved || h.rng.IntN(4) == 0 {
			// Only the notes change: an Edit, when the disk spells them so.
			cur, _ := h.disk(atkOpenStep)
			if old, ok := notesText(cur); ok {
				note(fmt.Sprintf("Edit %s notes", atkOpenStep))
				h.edit(atkOpenStep, old, fmt.Sprintf(`"notes": "agent edit %d"`, n))
				return
			}
		}
		note(what)
		h.write(atkOpenStep, content, during)
	case 5: // a person edits a source file between calls
		rel := honestSources[h.rng.IntN(len(honestSources))]
		note("hand edit " + rel)
		h.replaced(rel)
		writeFile(t, p.root, rel, fmt.Sprintf("// the person's edit at step %d\npackage app\n", n))
		h.observe(rel)
	case 6: // a person adds a harmless setting to des's config
		var cfg map[string]any
		raw, _ := h.disk(atkConfig)
		if json.Unmarshal([]byte(raw), &cfg) != nil {
			return
		}
		cfg["audit_log_retention_days"] = 30 + n
		note("hand edit " + atkConfig)
		h.replaced(atkConfig)
		writeFile(t, p.root, atkConfig, indentJSON(cfg))
		h.observe(atkConfig)
	case 7: // a person edits the step's notes
		doc := h.stepDoc()
		if doc == nil {
			return
		}
		doc["notes"] = fmt.Sprintf("the person's note %d", n)
		note("hand edit " + atkOpenStep + " notes")
		h.replaced(atkOpenStep)
		writeFile(t, p.root, atkOpenStep, indentJSON(doc))
		h.observe(atkOpenStep)
	case 8: // a call the user declines: PreToolUse, and nothing after
		// Claude Code lists the declined call in the PostToolBatch it
		// sends once the batch has resolved: des ends the call there, so a
		// hand edit after it is the person's.
		var ev map[string]any
		switch h.rng.IntN(3) {
		case 0:
			ev = h.event("PreToolUse", "Write", map[string]any{"file_path": p.path("src/app.go"), "content": "declined\n"})
		case 1:
			doc := h.stepDoc()
			if doc == nil {
				return
			}
			advance(doc, "declined")
			ev = h.event("PreToolUse", "Write", map[string]any{"file_path": p.path(atkOpenStep), "content": indentJSON(doc)})
		default:
			ev = h.event("PreToolUse", "Bash", map[string]any{"command": "rm -rf node_modules && npm install", "description": "Reinstall"})
		}
		note(fmt.Sprintf("declined %s", ev["tool_name"]))
		h.expectClean("a declined call's PreToolUse", p.hook(t, ev, atkHookDeadline))
		declined := fmt.Sprintf("Permission to use %s has been denied.", ev["tool_name"])
		h.expectClean("the PostToolBatch of a declined call", p.hook(t, batchEv([]string{declined}, ev), atkHookDeadline))
	case 9: // plain commands
		cmd := []string{`echo "Tom & Jerry"`, "ls", "go version", "find . -name '*.tmp' -delete", "cat notes.txt 2>/dev/null | wc -l", "git status --short", "git log --oneline -3"}[h.rng.IntN(7)]
		if strings.Contains(cmd, "*.tmp") {
			writeFile(t, p.root, fmt.Sprintf("build/x%d.tmp", n), "scratch\n")
		}
		note("Bash " + cmd)
		h.bash(cmd)
	case 10: // commit the source files
		note("Bash git commit of the sources")
		h.bash(fmt.Sprintf("git add -A -- src notes.txt docs/feature/shop/notes.md && git commit -qm 'work %d'", n))
	case 11:
		b := fmt.Sprintf("b%d", n)
		if h.rng.IntN(2) == 0 {
			note("Bash git checkout -b " + b)
			if c := h.bash("git checkout -q -b " + b); c.exit != 0 {
				return
			}
		} else {
			note("Bash git branch " + b)
			if c := h.bash("git branch " + b); c.exit != 0 {
				return
			}
		}
		h.branches = append(h.branches, b)
	case 12: // refused by git when local changes would be overwritten
		b := h.branches[h.rng.IntN(len(h.branches))]
		note("Bash git checkout " + b)
		h.bash("git checkout -q " + b)
	case 13:
		// Left out while a person's edit of .des/config.json is not
		// committed: git stash would take it back, and des undoes any
		// command's change to its own files, git's too (a stash or a
		// branch could carry a weaker config); never lost, the edit is
		// kept and in the stash, but reported with DES-INTEGRITY.
		if _, code := gitRunEnv(t, p.root, p.env, "diff", "--quiet", "HEAD", "--", atkConfig); code != 0 {
			return
		}
		note("Bash git stash")
		h.bash("git stash -q")
	case 14: // popped where it was made
		base, code := gitRunEnv(t, p.root, p.env, "rev-parse", "-q", "--verify", "stash@{0}^1")
		if code != 0 || strings.TrimSpace(base) != strings.TrimSpace(p.git(t, "rev-parse", "HEAD")) {
			return
		}
		note("Bash git stash pop")
		h.bash("git stash pop -q")
	case 15: // the agent reads the step and checks the diff
		note("Bash git diff --stat")
		h.bash("git diff --stat && cat " + atkOpenStep + " >/dev/null")
	}
}

// notesText is the text of the step's notes field, when it is spelled
// `"notes": "..."` once.
func notesText(raw string) (string, bool) {
	i := strings.Index(raw, `"notes": "`)
	if i < 0 || strings.Count(raw, `"notes": "`) != 1 {
		return "", false
	}
	j := strings.Index(raw[i+len(`"notes": "`):], `"`)
	if j < 0 {
		return "", false
	}
	return raw[i : i+len(`"notes": "`)+j+1], true
}

// nothingLost checks the end: every content a person or an allowed write
// put on disk (and its author did not replace) is on disk, in an object git
// can still reach (branches, the stash, the reflogs), or among des's kept
// contents; and des undid none of it.
func (h *honest) nothingLost() {
	t, p := h.t, h.p
	reachable := map[string]bool{}
	for _, line := range strings.Split(p.git(t, "rev-list", "--all", "--reflog", "--objects"), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			reachable[f[0]] = true
		}
	}
	r := p.cli(t, "integrity", "kept")
	if r.code != 0 {
		t.Fatalf("integrity kept: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout, "undone by DES") {
		t.Errorf("des undid honest work:\n%s", r.stdout)
	}
	kept := map[string]bool{}
	dir := statedir.For(p.root, func(k string) (string, bool) {
		if k == "DES_STATE_DIR" {
			return p.stateDir, true
		}
		return "", false
	})
	if data, err := os.ReadFile(filepath.Join(dir, "integrity", "kept", "index.json")); err == nil {
		var list []struct {
			ID     string `json:"id"`
			SHA256 string `json:"sha256"`
		}
		if err := json.Unmarshal(data, &list); err != nil {
			t.Fatal(err)
		}
		for _, k := range list {
			if !strings.Contains(r.stdout, k.ID) {
				t.Errorf("the kept content %s is not listed by `integrity kept`:\n%s", k.ID, r.stdout)
			}
			kept[k.SHA256] = true
		}
	}
	for rel, contents := range h.seen {
		disk, _ := h.disk(rel)
		for content := range contents {
			blob := sha1.Sum([]byte("blob " + strconv.Itoa(len(content)) + "\x00" + content))
			if content != disk && !reachable[hex.EncodeToString(blob[:])] && !kept[atkSum(content)] {
				t.Errorf("%s: the content %.300q is lost: not on disk, in no object git reaches, not kept", rel, content)
			}
		}
	}
}
