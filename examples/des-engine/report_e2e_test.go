package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/internal/report"
	"github.com/deterministic-exec/des/internal/testenv"
)

// syntheticHistory appends n entries to the project's trail, as a long run
// of an orchestrator would leave them: sessions with subagents working nWave
// steps through their phases, Gate 1, 2 and 3 verdicts, denies and warnings,
// iSDLC phases with escalations and test iterations, task-graph waves,
// integrity restorations.
func syntheticHistory(t testing.TB, root string, n int, seed uint64) {
	t.Helper()
	log, err := audit.Open(filepath.Join(root, ".des", "audit"), audit.WithRoot(root), audit.WithFsync(false))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	phases := []string{"PREPARE", "RED_ACCEPTANCE", "RED_UNIT", "GREEN_UNIT", "CHECK_ACCEPTANCE", "GREEN_ACCEPTANCE", "REVIEW",
		"REFACTOR_L1", "REFACTOR_L2", "REFACTOR_L3", "REFACTOR_L4", "POST_REFACTOR_REVIEW", "FINAL_VALIDATE", "COMMIT"}
	isdlc := []string{"01-requirements", "02-architecture", "05-test-strategy", "06-implementation", "08-code-review"}
	start := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	var batch []audit.Entry
	for i := range n {
		at := start.Add(time.Duration(i) * 37 * time.Second)
		session := fmt.Sprintf("5e55%04d-0000-4000-8000-%012d", i/400, i/400)
		agent := fmt.Sprintf("a%07d", i/40)
		step := fmt.Sprintf("docs/feature/shop/steps/%02d-%02d.json", i/560+1, i/40%14+1)
		f := map[string]any{"session_id": session, "tool_use_id": fmt.Sprintf("toolu_%08d", i)}
		var ev audit.EventType
		switch k := i % 40; {
		case k == 0:
			ev = audit.TaskInvocationValidated
			f["step_file"], f["origin"], f["level"], f["codes"], f["duration_ms"] = step, "command:/nw:execute", "full", []string{}, 12
		case k == 1 && rng.IntN(4) == 0:
			ev = audit.TaskInvocationRejected
			f["step_file"], f["origin"], f["level"], f["codes"], f["duration_ms"] = step, "command:/nw:execute", "full", []string{"DES-PHASE-MISSING"}, 11
		case k >= 2 && k < 30:
			ev = audit.PhaseStarted
			to := "IN_PROGRESS"
			if k%2 == 1 {
				ev, to = audit.PhaseCompleted, "EXECUTED"
			}
			f["agent_id"], f["step_file"], f["phase"], f["from"], f["to"] = agent, step, phases[(k-2)/2], "NOT_EXECUTED", to
		case k == 30 && rng.IntN(3) == 0:
			ev = audit.DocumentWriteBlocked
			f["agent_id"], f["gate"], f["tool"], f["paths"], f["codes"] = agent, "tool_use", "Write", []string{".des/config.json"}, []string{"DES-PROTECTED-PATH"}
		case k == 31 && rng.IntN(5) == 0:
			ev = audit.IntegrityViolation
			f["agent_id"], f["gate"], f["tool"], f["paths"], f["codes"] = agent, "tool_use", "Bash", []string{".des/config.json"}, []string{"DES-EFFECT-PROTECTED"}
			f["changes"] = []any{map[string]any{"path": ".des/config.json", "kind": "file", "what": "modified", "restored": true}}
		case k == 32:
			ev = audit.SubagentStopValidation
			outcome, codes := "PASS", []string{}
			if rng.IntN(5) == 0 {
				outcome, codes = "FAIL", []string{"DES-PHASE-INCOMPLETE"}
			}
			f["agent_id"], f["agent_type"], f["step_file"], f["outcome"], f["codes"], f["action"] = agent, "software-crafter", step, outcome, codes, "record"
		case k == 33:
			ev = audit.CommitValidationPassed
			f["step_file"], f["codes"], f["source"] = step, []string{}, "git-hook"
		case k == 34:
			ev = audit.TaskGraphUpdated
			f["task_graph"], f["phase"], f["status"], f["wave_from"], f["wave_to"], f["agent_id"] = ".claude/state/active_task_graph.json", fmt.Sprintf("P%d", i/40%9), "completed", i/400, i/400+1, agent
		case k == 35:
			ev = audit.TaskInvocationValidated
			f["step_file"], f["origin"], f["level"], f["codes"], f["duration_ms"] = "", "isdlc", "full", []string{"DES-WORKFLOW-WARN"}, 9
			f["phase"], f["target"], f["delegation"] = isdlc[i/40%len(isdlc)], "software-developer", true
		case k == 36 && rng.IntN(3) == 0:
			ev = audit.PhaseEscalation
			f["type"], f["phase"], f["codes"] = "gate_blocked", isdlc[i/40%len(isdlc)], []string{"DES-GATE-REQUIREMENT"}
		case k == 37:
			ev = audit.TestIterationUpdated
			f["state_file"], f["phase"], f["current_iteration"], f["last_test_result"], f["completed"] = ".isdlc/state.json", isdlc[i/40%len(isdlc)], i/40%5+1, "failed", false
		default:
			ev = audit.TestRunObserved
			f["agent_id"], f["runner"], f["command"], f["result"], f["step_file"] = agent, "go", "go test ./...", "passed", step
		}
		batch = append(batch, audit.Entry{Time: at, Event: ev, Fields: f})
		if len(batch) == 500 {
			if err := log.Append(context.Background(), batch...); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		if err := log.Append(context.Background(), batch...); err != nil {
			t.Fatal(err)
		}
	}
}

// reportEnv is the project's environment for the CLI, from a hook's.
func reportEnv(env []string) envMap {
	m := envMap{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// A report of a run made of real hook events: an orchestrator's Gate 1, a
// subagent's honest work through the phases, a protected write denied, a
// Bash command's change to des's settings undone. The JSON and the page say
// the same, and the page holds together without a browser.
func TestE2EReportOfARun(t *testing.T) {
	t.Parallel()
	h := newHonest(t, newAtkProject(t, false), 20261129)
	h.steps = 10
	for range h.steps {
		h.step()
	}
	p := h.p
	if reason := p.hook(t, writeEvent(p.root, "Write", ".des/config.json"), atkHookDeadline).denyReason; !strings.Contains(reason, "DES-PROTECTED-PATH") {
		t.Fatalf("protected write: %q", reason)
	}
	env := reportEnv(p.env)
	r := runCLI(t, env, "report", "--format", "json")
	if r.code != 0 {
		t.Fatalf("report --format json: exit %d\n%s", r.code, r.stderr)
	}
	var rep report.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	verify := runCLI(t, env, "audit", "verify")
	if rep.Trail.Status != report.TrailIntact || !strings.HasPrefix(verify.stdout, rep.Trail.Summary+"\n") {
		t.Errorf("trail %+v; audit verify says %q", rep.Trail, verify.stdout)
	}
	lines, _ := strconv.Atoi(strings.Fields(strings.TrimPrefix(rep.Trail.Summary, "audit trail intact: "))[0])
	if len(rep.Events) != lines || lines == 0 {
		t.Errorf("%d events in the report, %d lines in the trail", len(rep.Events), lines)
	}
	var step *report.Step
	for i := range rep.Steps {
		if rep.Steps[i].File == atkOpenStep {
			step = &rep.Steps[i]
		}
	}
	if step == nil || len(step.Phases) != 14 || len(step.Gates) == 0 || step.Gates[0].Gate != "Gate 1" || step.Gates[0].Outcome != "allowed" {
		t.Fatalf("step %s: %+v", atkOpenStep, step)
	}
	denied := false
	for _, c := range rep.Codes {
		if c.Code == "DES-PROTECTED-PATH" && c.Severity == "deny" && c.Count >= 1 && c.Title != "" {
			denied = true
		}
	}
	// The trail keeps the codes; what the gate said comes from the
	// decision log.
	last := rep.Events[len(rep.Events)-1]
	if last.Event != "DOCUMENT_WRITE_BLOCKED" || len(last.Messages) != 1 || !strings.HasPrefix(last.Messages[0], "[DES-PROTECTED-PATH] Write may not write .des/config.json") {
		t.Errorf("the denied write: %s, messages %q", last.Event, last.Messages)
	}
	if !denied || rep.Counts[report.KindDeny] == 0 || len(rep.Lanes) == 0 {
		t.Errorf("codes %+v, counts %v, lanes %d", rep.Codes, rep.Counts, len(rep.Lanes))
	}

	out := filepath.Join(t.TempDir(), "report.html")
	if r := runCLI(t, env, "report", "--out", out); r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("%d events written to %s", len(rep.Events), out)) {
		t.Fatalf("report --out: exit %d\n%s", r.code, r.stderr)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	// A link at --out (an agent can leave one in the project) is not
	// written through: what it points to is left as it was.
	victim := filepath.Join(t.TempDir(), "pre-commit")
	if err := os.WriteFile(victim, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(p.root, "report.html")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, env, "report", "--out", link); r.code != 2 || !strings.Contains(r.stderr, "does not write through it") {
		t.Errorf("--out at a link: exit %d\n%s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(victim); string(b) != "#!/bin/sh\nexit 0\n" {
		t.Errorf("the link's target was written: %q", b)
	}
	if r := runCLI(t, env, "report", "--from", "2026-11-02", "--to", "2026-11-01"); r.code != 2 || !strings.Contains(r.stderr, "is not before --to") {
		t.Errorf("--from after --to: exit %d\n%s", r.code, r.stderr)
	}
	checkPage(t, string(page), len(rep.Events))
	for _, want := range []string{rep.Trail.Summary, "DES-PROTECTED-PATH", atkOpenStep, "Gate 1", "PREPARE"} {
		if !strings.Contains(string(page), html.EscapeString(want)) {
			t.Errorf("the page lacks %q", want)
		}
	}
	browse(t, out, len(rep.Events), "DES-PROTECTED-PATH")
}

// checkPage checks the page's structure as a screen reader and an offline
// reader need it: one document with a language, nothing loaded from
// outside, headings in order, a label for every control, tables with
// header cells, and n event rows, each with its anchor.
func checkPage(t *testing.T, page string, n int) {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	var (
		last, rows, h1 int
		labels         = map[string]bool{}
		controls       []string
		ids            = map[string]bool{}
	)
	var walk func(*html.Node)
	walk = func(nd *html.Node) {
		if nd.Type == html.ElementNode {
			a := map[string]string{}
			for _, x := range nd.Attr {
				a[x.Key] = x.Val
			}
			if id := a["id"]; id != "" {
				if ids[id] {
					t.Errorf("id %q twice", id)
				}
				ids[id] = true
			}
			switch nd.Data {
			case "html":
				if a["lang"] == "" {
					t.Error("<html> has no lang")
				}
			case "script", "link", "img", "iframe", "object":
				if a["src"] != "" || a["href"] != "" {
					t.Errorf("<%s> loads %s%s from outside the page", nd.Data, a["src"], a["href"])
				}
				if a["id"] == "events-data" && nd.FirstChild != nil {
					var d struct{ Events [][]any }
					if err := json.Unmarshal([]byte(nd.FirstChild.Data), &d); err != nil {
						t.Errorf("the events' data: %v", err)
					}
					rows = len(d.Events)
				}
			case "h1", "h2", "h3", "h4":
				level := int(nd.Data[1] - '0')
				if level > last+1 {
					t.Errorf("<%s> after <h%d>: a heading level skipped", nd.Data, last)
				}
				last = level
				if level == 1 {
					h1++
				}
			case "label":
				labels[a["for"]] = true
			case "select", "input", "textarea":
				controls = append(controls, a["id"])
			case "button":
				if nd.FirstChild == nil {
					t.Error("a button without text")
				}
			case "table":
				if !strings.Contains(renderNode(nd), "<th") {
					t.Errorf("table %q has no header cells", a["id"])
				}
			}
		}
		for c := nd.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if h1 != 1 {
		t.Errorf("%d <h1>, want 1", h1)
	}
	for _, c := range controls {
		if c == "" || !labels[c] {
			t.Errorf("control %q has no label", c)
		}
	}
	if rows != n {
		t.Errorf("%d events in the page's data, want %d", rows, n)
	}
	if strings.Contains(page, "http://") || strings.Contains(page, "https://") {
		t.Error("the page names an address: it must work offline, and load nothing")
	}
}

func renderNode(n *html.Node) string {
	var b strings.Builder
	html.Render(&b, n)
	return b.String()
}

// chromium is Debian's Chromium, or the test skips (fails when
// DES_TEST_CHROMIUM=1, as CI sets it where it installs the package).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("DES_TEST_CHROMIUM") == "1" {
		t.Fatal("DES_TEST_CHROMIUM=1 but no chromium on PATH")
	}
	t.Skip("no chromium on PATH: install Debian's chromium package to open the report in a real browser (CI does)")
	return ""
}

// headless runs Chromium headless on url with args, and returns what it
// printed on stdout.
func headless(t *testing.T, url string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir=" + t.TempDir(),
		"--disable-extensions", "--disable-background-networking", "--window-size=1400,1800"}, args...)
	cmd := exec.CommandContext(ctx, chromium(t), append(args, url)...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.String()
}

// artifact is where a test keeps a file for people to look at:
// $DES_TEST_ARTIFACTS (CI sets it), else the test's temporary directory.
func artifact(t *testing.T, name string) string {
	dir := os.Getenv("DES_TEST_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, name)
}

// eventRows are the rows of the event list in a DOM Chromium dumped: id →
// codes.
func eventRows(t *testing.T, dom string) map[string]string {
	t.Helper()
	doc, err := html.Parse(strings.NewReader(dom))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	var walk func(*html.Node)
	walk = func(nd *html.Node) {
		if nd.Type == html.ElementNode && nd.Data == "tr" {
			a := map[string]string{}
			for _, x := range nd.Attr {
				a[x.Key] = x.Val
			}
			if a["class"] == "ev" {
				rows[a["id"]] = a["data-codes"]
			}
		}
		for c := nd.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return rows
}

// browse opens the page in a real headless Chromium: its script ran to the
// end (the page says when it was ready) and drew the first rows and the
// markers; a filter in the address keeps exactly the events with the code; a
// link to the last event draws it; both themes render, and a screenshot of
// each is kept.
func browse(t *testing.T, page string, n int, code string) {
	t.Helper()
	url := "file://" + page
	dom := headless(t, url, "--dump-dom")
	ready := regexp.MustCompile(`data-ready="(\d+)"`).FindStringSubmatch(dom)
	if ready == nil || !strings.Contains(dom, `<span id="shown">`+strconv.Itoa(n)+`</span>`) {
		t.Fatalf("the page's script did not run to its end (ready %v)", ready)
	}
	t.Logf("%d events: ready %s ms after navigation", n, ready[1])
	if rows := eventRows(t, dom); len(rows) != min(n, 500) {
		t.Errorf("%d rows drawn of %d events, want the first %d", len(rows), n, min(n, 500))
	}
	if strings.Count(dom, `class="m k-`) == 0 {
		t.Error("no marker drawn on the timeline")
	}
	raw, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	with, last := 0, ""
	for _, m := range regexp.MustCompile(`\[(\d+),\d+,\d+,\d+,"[A-Z_]+",("(?:[^"\\]|\\.)*"),"[^"]*","[^"]*","[^"]*","([^"]*)"`).FindAllStringSubmatch(string(raw), -1) {
		if strings.Contains(" "+m[3]+" ", " "+code+" ") {
			with++
		}
		last = m[1]
	}
	filtered := headless(t, url+"#code="+code+"&theme=dark", "--dump-dom")
	rows := eventRows(t, filtered)
	for id, codes := range rows {
		if !strings.Contains(" "+codes+" ", " "+code+" ") {
			t.Errorf("row %s (codes %q) shown by the filter on %s", id, codes, code)
		}
	}
	if with == 0 || len(rows) != min(with, 500) || !strings.Contains(filtered, `data-theme="dark"`) || !strings.Contains(filtered, `<span id="shown">`+strconv.Itoa(with)+`</span>`) {
		t.Errorf("filtered on %s: %d rows drawn, %d events have it", code, len(rows), with)
	}
	if _, ok := eventRows(t, headless(t, url+"#e-"+last, "--dump-dom"))["e-"+last]; !ok {
		t.Errorf("a link to the last event (#e-%s) does not draw its row", last)
	}
	for _, theme := range []string{"light", "dark"} {
		shot := artifact(t, strings.ReplaceAll(t.Name(), "/", "_")+"-"+theme+".png")
		headless(t, url+"#theme="+theme, "--screenshot="+shot, "--hide-scrollbars")
		if fi, err := os.Stat(shot); err != nil || fi.Size() < 10000 {
			t.Errorf("screenshot %s: %v", shot, err)
		}
		t.Logf("screenshot: %s", shot)
	}
}

// A long history, 10,000 events: the page is built, holds together, opens
// in Chromium with its script run to the end, and filters. The times are
// logged (docs/performance.md records them), not asserted.
func TestE2EReportLongHistory(t *testing.T) {
	t.Parallel()
	testenv.Long(t)
	root := t.TempDir()
	const n = 10000
	syntheticHistory(t, root, n, 7)
	env := envMap{"CLAUDE_PROJECT_DIR": root, "DES_STATE_DIR": t.TempDir()}
	out := artifact(t, "report-10000-events.html")
	start := time.Now()
	if r := runCLI(t, env, "report", "--out", out); r.code != 0 {
		t.Fatalf("report: exit %d\n%s", r.code, r.stderr)
	}
	built := time.Since(start)
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d events: page of %d bytes built in %v (in process)", n, len(page), built)
	checkPage(t, string(page), n)
	browse(t, out, n, "DES-PROTECTED-PATH")
}

// The README's example projects, after the events the README sends them:
// each report holds what the trail holds, says the trail is intact, and
// opens in Chromium.
func TestE2EReportReadmeProjects(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		project string
		events  []string
		code    string
	}{
		{"shop-project", []string{"gate1-incomplete-prompt.json", "protected-write.json"}, "DES-PHASE-MISSING"},
		{"workflow-project", []string{"stale-state-write.json"}, ""},
		{"isdlc-project", []string{"isdlc-out-of-order.json", "isdlc-advance.json"}, "DES-GATE-BLOCKED"},
	} {
		t.Run(c.project, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			if err := os.CopyFS(root, os.DirFS(filepath.Join("testdata", c.project))); err != nil {
				t.Fatal(err)
			}
			state := t.TempDir()
			for _, ev := range c.events {
				raw, err := os.ReadFile(filepath.Join("testdata", ev))
				if err != nil {
					t.Fatal(err)
				}
				runHookProcess(t, root, []string{"DES_STATE_DIR=" + state}, raw)
			}
			env := envMap{"CLAUDE_PROJECT_DIR": root, "DES_STATE_DIR": state}
			out := filepath.Join(t.TempDir(), "report.html")
			r := runCLI(t, env, "report", "--out", out)
			var rep report.Report
			j := runCLI(t, env, "report", "--format", "json")
			if r.code != 0 || j.code != 0 || json.Unmarshal([]byte(j.stdout), &rep) != nil {
				t.Fatalf("report: exit %d, %d\n%s%s", r.code, j.code, r.stderr, j.stderr)
			}
			if rep.Trail.Status != report.TrailIntact || len(rep.Events) == 0 || !strings.Contains(rep.Trail.Summary, fmt.Sprintf("%d line", len(rep.Events))) {
				t.Errorf("trail %+v with %d events", rep.Trail, len(rep.Events))
			}
			page, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			checkPage(t, string(page), len(rep.Events))
			if c.code != "" && testenv.IsLong() { // TestE2EReportOfARun opens one in the default run
				browse(t, out, len(rep.Events), c.code)
			}
		})
	}
}

// A trail edited by hand: the report says it is broken, where and how, as
// `audit verify` does, and still shows what the trail holds.
func TestE2EReportBrokenTrail(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS("testdata/isdlc-project")); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	for _, ev := range []string{"isdlc-out-of-order.json", "isdlc-advance.json"} {
		raw, err := os.ReadFile(filepath.Join("testdata", ev))
		if err != nil {
			t.Fatal(err)
		}
		runHookProcess(t, root, []string{"DES_STATE_DIR=" + state}, raw)
	}
	days, _ := filepath.Glob(filepath.Join(root, ".des/audit/audit-*.log"))
	data, err := os.ReadFile(days[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(days[0], []byte(strings.Replace(string(data), "08-code-review", "07-code-review", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	env := envMap{"CLAUDE_PROJECT_DIR": root, "DES_STATE_DIR": state}
	j := runCLI(t, env, "report", "--format", "json")
	var rep report.Report
	if err := json.Unmarshal([]byte(j.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	verify := runCLI(t, env, "audit", "verify")
	if rep.Trail.Status != report.TrailBroken || !strings.HasPrefix(verify.stdout, rep.Trail.Summary) || !strings.Contains(rep.Trail.Summary, ": edited: ") || len(rep.Events) == 0 {
		t.Errorf("trail %+v, %d events; audit verify: %s", rep.Trail, len(rep.Events), verify.stdout)
	}
	h := runCLI(t, env, "report")
	if !strings.Contains(h.stdout, `class="trail trail-broken"`) {
		t.Error("the page does not show the trail as broken")
	}
}
