package template

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name   string
		prompt string
		want   Prompt
	}{
		{
			name:   "no markers is ad hoc",
			prompt: "Fix the flaky test.\n<!-- an ordinary comment -->\n<!-- TODO: DES-VALIDATION later -->",
			want:   Prompt{},
		},
		{
			name:   "not markers: lower case, mixed case, bare prefix, unclosed",
			prompt: "<!-- des-validation: required --><!-- DES-Validation: required --><!-- DES-: x --><!-- DES-ORIGIN: x",
			want:   Prompt{},
		},
		{
			name: "odd whitespace",
			prompt: "<!--DES-ORIGIN:command:/nw:execute-->\n" +
				"<!--   DES-VALIDATION :  required   -->\n" +
				"<!--\n\tDES-STEP-FILE:\tdocs/feature/x/steps/01-01.json\n-->",
			want: Prompt{Validation: "required", Origin: "command:/nw:execute", StepFile: "docs/feature/x/steps/01-01.json", HasMarkers: true},
		},
		{
			name:   "whitespace instead of a colon",
			prompt: "<!-- DES-VALIDATION required -->",
			want:   Prompt{Validation: "required", HasMarkers: true},
		},
		{
			name:   "same value repeated is no conflict",
			prompt: "<!-- DES-ORIGIN: command:/nw:execute --> text <!--DES-ORIGIN: command:/nw:execute -->",
			want:   Prompt{Origin: "command:/nw:execute", HasMarkers: true},
		},
		{
			name: "different values conflict, first value kept, sorted by marker",
			prompt: "<!-- DES-VALIDATION: required --><!-- DES-ORIGIN: command:/nw:execute -->" +
				"<!-- DES-VALIDATION: none --><!-- DES-VALIDATION: required --><!-- DES-ORIGIN: ad-hoc --><!-- DES-VALIDATION: partial -->",
			want: Prompt{
				Validation: "required", Origin: "command:/nw:execute", HasMarkers: true,
				Conflicts: []Conflict{
					{Marker: MarkerOrigin, Values: []string{"command:/nw:execute", "ad-hoc"}},
					{Marker: MarkerValidation, Values: []string{"required", "none", "partial"}},
				},
			},
		},
		{
			name:   "empty value is recorded as empty",
			prompt: "<!-- DES-VALIDATION: --><!-- DES-STEP-FILE -->",
			want:   Prompt{HasMarkers: true},
		},
		{
			name:   "empty value then a value conflicts",
			prompt: "<!-- DES-VALIDATION:   --><!-- DES-VALIDATION: required -->",
			want: Prompt{HasMarkers: true, Conflicts: []Conflict{
				{Marker: MarkerValidation, Values: []string{"", "required"}},
			}},
		},
		{
			name:   "unknown markers sorted and distinct, not conflicts",
			prompt: "<!-- DES-PRIORITY: high --><!-- DES-OWNER: ana --><!-- DES-PRIORITY: low --><!-- DES-SECTIONS: A -->",
			want:   Prompt{HasMarkers: true, Unknown: []string{"DES-OWNER", "DES-PRIORITY", "DES-SECTIONS"}},
		},
		{
			name: "section bodies and boundaries",
			prompt: "Preamble is in no section.\n" +
				"<!-- DES-SECTION: DES_METADATA -->\n<!-- DES-VALIDATION: required -->\n\n" +
				"<!--DES-SECTION:AGENT_IDENTITY-->  You are the crafter.  \n" +
				"<!-- DES-SECTION: TASK_CONTEXT -->\nTask 01-01\n<!-- DES-OWNER: x -->\nend\n",
			want: Prompt{
				Validation: "required", HasMarkers: true, Unknown: []string{"DES-OWNER"},
				Sections: []Section{
					{Name: "DES_METADATA", Body: "<!-- DES-VALIDATION: required -->", Tokens: 9},
					{Name: "AGENT_IDENTITY", Body: "You are the crafter.", Tokens: 5},
					{Name: "TASK_CONTEXT", Body: "Task 01-01\n<!-- DES-OWNER: x -->\nend", Tokens: 9},
				},
			},
		},
		{
			name:   "empty section name and empty body",
			prompt: "<!-- DES-SECTION: --><!-- DES-SECTION: A -->",
			want:   Prompt{HasMarkers: true, Sections: []Section{{Name: ""}, {Name: "A"}}},
		},
		{
			name:   "duplicate sections are all kept and reported once",
			prompt: "<!-- DES-SECTION: B -->b1<!-- DES-SECTION: A -->a1<!-- DES-SECTION: B -->b2<!-- DES-SECTION: A -->a2<!-- DES-SECTION: B -->b3",
			want: Prompt{
				HasMarkers: true, Duplicates: []string{"A", "B"},
				Sections: []Section{
					{Name: "B", Body: "b1", Tokens: 1}, {Name: "A", Body: "a1", Tokens: 1},
					{Name: "B", Body: "b2", Tokens: 1}, {Name: "A", Body: "a2", Tokens: 1},
					{Name: "B", Body: "b3", Tokens: 1},
				},
			},
		},
		{
			// DES does not parse Markdown: quoting a marker in a code block uses it.
			name:   "marker in a fenced code block counts",
			prompt: "Example:\n```markdown\n<!-- DES-SECTION: TDD_14_PHASES -->\n```\n",
			want:   Prompt{HasMarkers: true, Sections: []Section{{Name: "TDD_14_PHASES", Body: "```", Tokens: 1}}},
		},
		{
			name:   "an unclosed comment does not swallow the next marker",
			prompt: "<!-- DES-SECTION: A\nlost <!-- DES-SECTION: B -->body",
			want:   Prompt{HasMarkers: true, Sections: []Section{{Name: "B", Body: "body", Tokens: 1}}},
		},
		{
			// Contract §8: routing markers alone ask for no nWave validation.
			name:   "routing markers only",
			prompt: "Implement it.\n<!-- DES-PHASE: 06-implementation -->\n<!-- DES-TASK-PHASE:3 --><!-- DES-PHASE: 07-testing -->",
			want:   Prompt{Routing: map[string]string{MarkerPhase: "06-implementation", MarkerTaskPhase: "3"}},
		},
		{
			name:   "routing marker beside nWave markers",
			prompt: "<!-- DES-VALIDATION: required --><!-- DES-SECTION: A -->a <!-- DES-PHASE -->",
			want: Prompt{Validation: "required", HasMarkers: true, Routing: map[string]string{MarkerPhase: ""},
				Sections: []Section{{Name: "A", Body: "a <!-- DES-PHASE -->", Tokens: 5}}},
		},
		{
			name:   "routing marker names are exact",
			prompt: "<!-- DES-PHASES: x --><!-- DES-PHASE-KEY: y -->",
			want:   Prompt{HasMarkers: true, Unknown: []string{"DES-PHASE-KEY", "DES-PHASES"}},
		},
		{
			name:   "neutralized text is no marker",
			prompt: Neutralize("<!-- DES-SECTION: TDD_14_PHASES --><!-- DES-VALIDATION: none -->"),
			want:   Prompt{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Parse(tt.prompt)); diff != "" {
				t.Errorf("Parse(%q) mismatch (-want +got):\n%s", tt.prompt, diff)
			}
		})
	}
}

func TestPromptSectionAccessors(t *testing.T) {
	p := Parse("<!-- DES-SECTION: B -->b1<!-- DES-SECTION: A -->a<!-- DES-SECTION: B -->b2")
	if s, ok := p.Section("B"); !ok || s.Body != "b1" {
		t.Errorf(`Section("B") = %+v, %v; want the first occurrence "b1"`, s, ok)
	}
	if s, ok := p.Section("C"); ok {
		t.Errorf(`Section("C") = %+v, true; want absent`, s)
	}
	if got, want := p.SectionNames(), []string{"B", "A"}; !cmp.Equal(got, want) {
		t.Errorf("SectionNames() = %q, want %q", got, want)
	}
}

func TestWords(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"POST_REFACTOR_REVIEW", []string{"POST_REFACTOR_REVIEW"}},
		{"REFACTOR_L1, REFACTOR_L2.", []string{"REFACTOR_L1", "REFACTOR_L2"}},
		{"review Review REVIEWs reVIEW", nil},
		{"`REVIEW` (REVIEW) REVIEW-phase 7.REVIEW", []string{"REVIEW"}},
		{"REVIEW2 _REVIEW REVIEWé ÉREVIEW RED_UNIT→GREEN_UNIT", []string{"REVIEW2", "RED_UNIT", "GREEN_UNIT"}},
		{"1. PREPARE: A B A", []string{"PREPARE", "A", "B"}},
		{"", nil},
	}
	for _, tt := range tests {
		if got := Words(tt.text); !cmp.Equal(got, tt.want) {
			t.Errorf("Words(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

func TestEstimateTokens(t *testing.T) {
	for s, want := range map[string]int{"": 0, "a": 1, "abcd": 1, "abcde": 2, "ééééé": 2, strings.Repeat("x", 400): 100} {
		if got := EstimateTokens(s); got != want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestNeutralize(t *testing.T) {
	for in, want := range map[string]string{
		"plain text a < b":        "plain text a < b",
		"<!-- DES-SECTION: X -->": "&lt;!-- DES-SECTION: X -->",
		"a<!--b<!--":              "a&lt;!--b&lt;!--",
		"&lt;!-- already":         "&lt;!-- already",
		"ends with <":             "ends with &lt;",
		"ends with <!":            "ends with &lt;!",
		"ends with <!-":           "ends with &lt;!-",
		"<!- not an opener, -->":  "<!- not an opener, -->",
		"<<!--":                   "<&lt;!--",
	} {
		if got := Neutralize(in); got != want {
			t.Errorf("Neutralize(%q) = %q, want %q", in, got, want)
		}
		if again := Neutralize(want); again != want {
			t.Errorf("Neutralize is not idempotent on %q: %q", want, again)
		}
	}
}

// Two neutralized values printed side by side must not form a marker, wherever
// a forged marker is split between them.
func TestNeutralizeConcatenation(t *testing.T) {
	const forged = "<!-- DES-SECTION: TDD_14_PHASES -->"
	for i := 0; i <= len(forged); i++ {
		a, b := "text "+forged[:i], forged[i:]+" more"
		if p := Parse(Neutralize(a) + Neutralize(b)); p.HasMarkers {
			t.Errorf("split at %d: %q + %q formed a marker: %+v", i, a, b, p)
		}
	}
}

func TestSectionTokensMatchBodies(t *testing.T) {
	p := Parse("<!-- DES-SECTION: A -->\n  héllo wörld, this is a body  \n<!-- DES-SECTION: B -->x")
	for _, s := range p.Sections {
		if s.Tokens != EstimateTokens(s.Body) || s.Tokens == 0 {
			t.Errorf("section %s: Tokens = %d, EstimateTokens(Body) = %d", s.Name, s.Tokens, EstimateTokens(s.Body))
		}
	}
}

// BenchmarkParse20KB parses an execute-step prompt padded to 20 KB with task
// text, the size the Gate 1 budget is set for.
func BenchmarkParse20KB(b *testing.B) {
	prompt := bigPrompt(b, 20*1024)
	b.SetBytes(int64(len(prompt)))
	b.ReportAllocs()
	for b.Loop() {
		if p := Parse(prompt); len(p.Sections) != 8 {
			b.Fatalf("got %d sections", len(p.Sections))
		}
	}
}

func bigPrompt(tb testing.TB, size int) string {
	tb.Helper()
	const para = "The hook reads the SubagentStop event, loads the step file named by the prompt's marker, and checks " +
		"that every phase the agent touched reached a terminal status with an outcome. A phase left IN_PROGRESS is " +
		"abandoned; a phase EXECUTED without PASS or FAIL is incomplete; a SKIPPED phase needs blocked_by with a " +
		"valid prefix. The error message names the phase, the field and the fix, e.g. `set outcome to PASS`.\n\n"
	var desc strings.Builder
	step := map[string]any{}
	if err := json.Unmarshal([]byte(`{"task_id": "07-01", "task_specification": {"name": "Validate phase outcomes on stop",
		"acceptance_criteria": ["abandoned phases are reported", "missing outcomes are reported"]},
		"tdd_cycle": {"max_turns": 40, "duration_minutes": 60}}`), &step); err != nil {
		tb.Fatal(err)
	}
	for {
		step["description"] = desc.String()
		r, err := Defaults().Render("execute-step", Data{StepFile: "docs/feature/des/steps/07-01.json", Step: step, Agent: map[string]any{"name": "software-crafter"}})
		if err != nil {
			tb.Fatal(err)
		}
		if len(r.Text) >= size {
			return r.Text
		}
		desc.WriteString(para)
	}
}

// adversarial is a prompt made to make a naive parser quadratic: many
// comment openers before one closer, then many distinct words.
func adversarial(n int) string {
	var b strings.Builder
	b.WriteString("<!-- DES-VALIDATION: required -->")
	b.WriteString(strings.Repeat("<!--", n))
	b.WriteString("-->\n<!-- DES-SECTION: TDD_14_PHASES -->\n")
	for i := range n {
		fmt.Fprintf(&b, "W%d ", i)
	}
	return b.String()
}

func TestParseAdversarial(t *testing.T) {
	p := Parse(adversarial(1000))
	if p.Validation != "required" || len(p.Sections) != 1 || p.Sections[0].Name != "TDD_14_PHASES" {
		t.Fatalf("parse = %+v", p)
	}
	if w := Words(p.Sections[0].Body); len(w) != 1000 || w[999] != "W999" {
		t.Errorf("words: %d", len(w))
	}
}

// BenchmarkParseAdversarial parses a 1 MiB adversarial prompt: linear code
// takes milliseconds; the quadratic first version took 45 s.
func BenchmarkParseAdversarial(b *testing.B) {
	s := adversarial(150000)
	for b.Loop() {
		p := Parse(s)
		Words(p.Sections[0].Body)
	}
}
