package isdlc

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParsePlanV2(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "tasks-v2.md"))
	if err != nil {
		t.Fatal(err)
	}
	format, sections := ParsePlan(data)
	if format != "v2.0" {
		t.Errorf("format = %q, want v2.0", format)
	}
	want := []Section{
		{Title: "Progress", Line: 7},
		{Title: "Phase 05: Test Strategy - COMPLETE", Line: 12, Tasks: []Task{
			{ID: "T0001", Line: 14, Traces: true},
			{ID: "T0002", Line: 15, Traces: true},
		}},
		{Title: "Phase 06: Implementation - PENDING", Line: 17, Tasks: []Task{
			{ID: "T0003", Line: 19, Traces: true, Files: []string{"src/export/csv.js", "src/export/index.js"}},
			{ID: "T0004", Line: 21, Traces: true, Files: []string{"src/routes/export.js"}, BlockedBy: []string{"T0003"}},
			{ID: "T0005", Line: 24, Files: []string{"src/export/stream.js"}, BlockedBy: []string{"T0003", "T0004"}},
			{ID: "T0006", Line: 27, Traces: true, Files: []string{"src/audit/export-log.js"}, BlockedBy: []string{"T0004"}},
		}},
		{Title: "Phase 16: Quality Loop - PENDING", Line: 36, Tasks: []Task{
			{ID: "T0007", Line: 38, Traces: true},
		}},
		{Title: "Dependency Graph", Line: 40},
	}
	if d := cmp.Diff(want, sections); d != "" {
		t.Errorf("sections (-want +got):\n%s", d)
	}
}

func TestParsePlanLines(t *testing.T) {
	tests := []struct {
		name       string
		text       string
		wantFormat string
		want       []Section
	}{
		{"v1 plan without format", "# Plan\n\n## Phase 06: Implementation\n- [ ] T1 do it\n", "",
			[]Section{{Title: "Phase 06: Implementation", Line: 3, Tasks: []Task{{ID: "T1", Line: 4}}}}},
		{"bold format line, CRLF", "# Plan\r\n**Format:** v2.1\r\n## A\r\n- [x] T0009: done | traces: FR-9\r\n  files: a.go\r\n", "v2.1",
			[]Section{{Title: "A", Line: 3, Tasks: []Task{{ID: "T0009", Line: 4, Traces: true, Files: []string{"a.go"}}}}}},
		{"format past line 20 does not count", strings.Repeat("\n", 20) + "Format: v2.0\n", "", nil},
		{"tasks before any heading", "- [ ] T0001 first\n  blocked_by: T0002 T0003\n## B\n", "",
			[]Section{{Tasks: []Task{{ID: "T0001", Line: 1, BlockedBy: []string{"T0002", "T0003"}}}}, {Title: "B", Line: 3}}},
		{"not tasks", "## A\n- [ ] Task T0001\n- T0002 no box\n- [ ]T0003 glued\n- [ ] t0004 lower\n- [ ] T12a mixed\n", "",
			[]Section{{Title: "A", Line: 1}}},
		{"sub-lines end at an unindented line", "## A\n- [ ] T1 x\nnote\n  files: stray.go\n", "",
			[]Section{{Title: "A", Line: 1, Tasks: []Task{{ID: "T1", Line: 2}}}}},
		{"sub-lines across blank lines, bulleted, any case", "## A\n- [ ] T1 x\n\n  - Files: a.go (CREATE), b.go(MODIFY) ,\n\tBLOCKED_BY: [T2,T3]\n  files: c.go\n", "",
			[]Section{{Title: "A", Line: 1, Tasks: []Task{{ID: "T1", Line: 2, Files: []string{"a.go", "b.go", "c.go"}, BlockedBy: []string{"T2", "T3"}}}}}},
		{"traces needs the pipe", "## A\n- [ ] T1 traces: FR-1\n- [ ] T2 x |traces: FR-1\n", "",
			[]Section{{Title: "A", Line: 1, Tasks: []Task{{ID: "T1", Line: 2}, {ID: "T2", Line: 3}}}}},
		{"### is no section", "## A\n### B\n- [ ] T1 x\n", "",
			[]Section{{Title: "A", Line: 1, Tasks: []Task{{ID: "T1", Line: 3}}}}},
		{"nested task", "## A\n- [ ] T1 x\n  - [ ] T2 y\n    files: y.go\n", "",
			[]Section{{Title: "A", Line: 1, Tasks: []Task{{ID: "T1", Line: 2}, {ID: "T2", Line: 3, Files: []string{"y.go"}}}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			format, got := ParsePlan([]byte(tc.text))
			if format != tc.wantFormat {
				t.Errorf("format = %q, want %q", format, tc.wantFormat)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("sections (-want +got):\n%s", d)
			}
		})
	}
}

func TestFindPlan(t *testing.T) {
	tests := []struct {
		name     string
		project  string
		files    []string
		dirs     []string
		wantPath string
		wantCand []string
	}{
		{"none", "", nil, nil, "", []string{"docs/isdlc/tasks.md", ".isdlc/tasks.md"}},
		{"docs first", "", []string{"docs/isdlc/tasks.md", ".isdlc/tasks.md"}, nil, "docs/isdlc/tasks.md", nil},
		{"legacy", "", []string{".isdlc/tasks.md"}, nil, ".isdlc/tasks.md", nil},
		{"a directory is no plan", "", []string{".isdlc/tasks.md"}, []string{"docs/isdlc/tasks.md"}, ".isdlc/tasks.md", nil},
		{"monorepo project", "api", []string{"docs/isdlc/tasks.md", ".isdlc/projects/api/tasks.md"}, nil, ".isdlc/projects/api/tasks.md",
			[]string{"docs/isdlc/projects/api/tasks.md", ".isdlc/projects/api/tasks.md"}},
		{"monorepo ignores the root plan", "api", []string{"docs/isdlc/tasks.md", "docs/isdlc/projects/web/tasks.md"}, nil, "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for _, f := range tc.files {
				write(t, root, f, "Format: v2.0\n## Phase 06: Implementation\n- [ ] T1 x\n")
			}
			for _, d := range tc.dirs {
				if err := os.MkdirAll(filepath.Join(root, filepath.FromSlash(d)), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			r, err := os.OpenRoot(root)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			p := findPlan(r, tc.project)
			if p.Path != tc.wantPath {
				t.Fatalf("path = %q, want %q", p.Path, tc.wantPath)
			}
			if tc.wantCand != nil {
				if d := cmp.Diff(tc.wantCand, p.Candidates); d != "" {
					t.Errorf("candidates (-want +got):\n%s", d)
				}
			}
			if p.Path != "" && (p.Format != "v2.0" || len(p.Sections) != 1) {
				t.Errorf("plan not parsed: %+v", p)
			}
		})
	}
}

func TestPlanTooLarge(t *testing.T) {
	root := t.TempDir()
	write(t, root, "docs/isdlc/tasks.md", "Format: v2.0\n"+strings.Repeat("x", MaxPlanBytes))
	r, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f := findPlan(r, "").facts()
	if f["exists"] != true || f["path"] != "docs/isdlc/tasks.md" || f["format"] != "" || !strings.Contains(f["error"].(string), "limit") {
		t.Fatalf("facts = %v, want an existing plan with an error and nothing parsed", f)
	}
}

var taskID = regexp.MustCompile(`^T\d+$`)

func FuzzParsePlan(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join("testdata", "tasks-v2.md")); err == nil {
		f.Add(data)
	}
	f.Add([]byte("Format: v2.0\n## A\n- [ ] T1 x | traces: a\n  files: a (CREATE), b\n  blocked_by: [T1]\n"))
	f.Add([]byte("- [x] T0 \r\n\t- files: ,,()\n## \n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		format, sections := ParsePlan(data)
		lines := strings.Count(string(data), "\n") + 1
		if format != "" && !strings.HasPrefix(format, "v") {
			t.Fatalf("format %q", format)
		}
		last := -1
		for i, s := range sections {
			if s.Line > lines || s.Line <= last || (s.Line == 0 && i > 0) {
				t.Fatalf("section %d at line %d (previous %d, %d lines)", i, s.Line, last, lines)
			}
			last = s.Line
			for _, task := range s.Tasks {
				if !taskID.MatchString(task.ID) || task.Line <= s.Line || task.Line > lines {
					t.Fatalf("task %+v in section at line %d", task, s.Line)
				}
				for _, f := range append(append([]string(nil), task.Files...), task.BlockedBy...) {
					if f == "" {
						t.Fatalf("empty file or dependency in %+v", task)
					}
				}
			}
		}
	})
}
