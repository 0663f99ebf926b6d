package isdlc

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/deterministic-exec/des/internal/fileio"
)

// Plan is the task plan found (or not) among the candidates.
type Plan struct {
	Candidates []string // slash paths relative to the root, in the order tried
	Path       string   // the first candidate that is a regular file; "" none
	Err        error    // the plan exists but could not be read (too large, ...)
	Format     string   // "v2.0" for a `Format: v2.0` line in the first 20 lines
	Sections   []Section
}

// Section is a `## ` heading and the tasks below it. Tasks above the first
// heading are in a section with title "" and line 0.
type Section struct {
	Title string // the text after "## "
	Line  int    // 1-based
	Tasks []Task
}

// Task is a list line `- [ ] T0001 …` (any box: [x], [X], [BLOCKED]) with
// the `files:` and `blocked_by:` sub-lines indented below it.
type Task struct {
	ID        string
	Line      int
	Files     []string // "(CREATE)"-style suffixes stripped
	Traces    bool     // the line has "| traces:"
	BlockedBy []string
}

// planCandidates are the task plan locations, in order. In a monorepo the
// project's own plan is the plan (as iSDLC's resolveTasksPath has it); the
// root plan would be another project's, so it does not count.
func planCandidates(project string) []string {
	if project != "" {
		return []string{"docs/isdlc/projects/" + project + "/tasks.md", ".isdlc/projects/" + project + "/tasks.md"}
	}
	return []string{"docs/isdlc/tasks.md", ".isdlc/tasks.md"}
}

func findPlan(root *os.Root, project string) Plan {
	p := Plan{Candidates: planCandidates(project)}
	for _, c := range p.Candidates {
		fi, err := root.Stat(filepath.FromSlash(c))
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		p.Path = c
		data, err := fileio.ReadBoundedIn(root, c, MaxPlanBytes)
		if err != nil {
			p.Err = err
			return p
		}
		p.Format, p.Sections = ParsePlan(data)
		return p
	}
	return p
}

func (p Plan) facts() map[string]any {
	cands := make([]any, len(p.Candidates))
	for i, c := range p.Candidates {
		cands[i] = c
	}
	if p.Path == "" {
		return map[string]any{"exists": false, "candidates": cands}
	}
	secs := make([]any, 0, len(p.Sections))
	for _, s := range p.Sections {
		tasks := make([]any, 0, len(s.Tasks))
		for _, t := range s.Tasks {
			tasks = append(tasks, map[string]any{
				"id": t.ID, "line": t.Line, "files": strs(t.Files),
				"traces": t.Traces, "blocked_by": strs(t.BlockedBy),
			})
		}
		secs = append(secs, map[string]any{"title": s.Title, "line": s.Line, "tasks": tasks})
	}
	f := map[string]any{"exists": true, "path": p.Path, "candidates": cands, "format": p.Format, "sections": secs}
	if p.Err != nil {
		f["error"] = "task plan " + p.Path + " cannot be read: " + p.Err.Error()
	}
	return f
}

func strs(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

var (
	formatLine = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[\s>*_#-]*Format[*_]*:[*_]*\s*(v[0-9][0-9A-Za-z.]*)`)
	})
	taskLine   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*[-*]\s+\[[^\]]*\]\s+(T\d+):?(?:\s|$)`) })
	subLine    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:[-*]\s+)?(?i:(files|blocked_by)):(.*)$`) })
	fileSuffix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\s*\([^()]*\)\s*$`) })
)

// formatLines is how far down the plan a `Format:` line counts.
const formatLines = 20

// ParsePlan reads the structure of an iSDLC tasks.md as facts: its format,
// its sections and their tasks. It judges nothing (which section is the
// implementation one, whether files are missing or blocked_by has a cycle
// is Rego's).
func ParsePlan(data []byte) (format string, sections []Section) {
	var cur *Task // the task sub-lines attach to
	lines := strings.Split(string(data), "\n")
	for i, line := range lines {
		line = strings.TrimSuffix(line, "\r")
		n := i + 1
		if i < formatLines && format == "" {
			if m := formatLine().FindStringSubmatch(line); m != nil {
				format = m[1]
			}
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		if title, ok := strings.CutPrefix(line, "## "); ok {
			sections = append(sections, Section{Title: strings.TrimSpace(title), Line: n})
			cur = nil
			continue
		}
		if m := taskLine().FindStringSubmatch(line); m != nil {
			if len(sections) == 0 {
				sections = append(sections, Section{})
			}
			s := &sections[len(sections)-1]
			s.Tasks = append(s.Tasks, Task{ID: m[1], Line: n, Traces: strings.Contains(line, "| traces:")})
			cur = &s.Tasks[len(s.Tasks)-1]
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			cur = nil // a line of its own ends the task's sub-lines
			continue
		}
		if cur == nil {
			continue
		}
		m := subLine().FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		if strings.EqualFold(m[1], "files") {
			for _, f := range strings.Split(m[2], ",") {
				f = strings.Trim(fileSuffix().ReplaceAllString(strings.TrimSpace(f), ""), " `")
				if f != "" {
					cur.Files = append(cur.Files, f)
				}
			}
		} else {
			deps := strings.NewReplacer("[", " ", "]", " ", ",", " ").Replace(m[2])
			cur.BlockedBy = append(cur.BlockedBy, strings.Fields(deps)...)
		}
	}
	return format, sections
}
