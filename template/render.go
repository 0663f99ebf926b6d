package template

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"text/template"
	"text/template/parse"
)

// Data is what a template renders from. Values must be JSON-shaped (what
// encoding/json decodes into an any) or maps with string keys, slices, basic
// values and fmt.Stringers; Render rejects anything else.
type Data struct {
	StepFile string         // project-relative path of the step file ("" for research)
	Step     map[string]any // the step file as parsed JSON (nil for research)
	Agent    map[string]any // agent configuration: at least "name"; may have "role", "instructions" ...
	Extra    map[string]any // anything else a team template wants (e.g. "topic" for research)
}

// Rendered is a rendered prompt.
type Rendered struct {
	Name     string
	Text     string
	Sections []Section // as Parse finds them in Text, with token estimates
	Tokens   int       // EstimateTokens(Text)
}

// ErrUnknownTemplate is wrapped by Render when a Set has no template of that name.
var ErrUnknownTemplate = errors.New("unknown template")

// Set is an immutable set of named templates, safe for concurrent use. Its zero
// value holds no template.
//
// Templates are Go text/template with missingkey=zero, executed on a deep copy
// of the Data in which every string (map keys included) has gone through
// Neutralize: text from a step file or agent configuration can never form a
// marker. A missing map key gives nil, which text/template prints as
// "<no value>": read optional fields with get, with or default. Functions:
//
//	get V K...      nested lookup by map key or list index; "" when missing or null
//	default A B...  the first argument that is not nil, "", an empty list or map
//	list V          V as a list: a list as is, nil or "" as empty, else [V]
//	join SEP LIST   strings.Join of the list's elements (a string is a one-element list)
//	json V          V as indented JSON
//	phases          the 14 canonical TDD phase names, in order
//
// Files may also hold {{define}} blocks; the blocks of the defaults
// ("des/task-context", "des/budget", "des/agent-name") can be called, or
// redefined, by team templates.
type Set struct {
	root  *template.Template // every template and block; never parsed again once built
	names []string           // renderable templates, sorted
}

//go:embed templates/*.md.tmpl templates/blocks.tmpl
var embedded embed.FS

const suffix = ".md.tmpl"

// defaults is parsed once: Sets are immutable, so one value can be shared.
var defaults = sync.OnceValue(func() *Set {
	s, err := new(Set).addBlocks(embedded, "templates/blocks.tmpl")
	if err == nil {
		s, err = s.addFS(embedded, []string{"templates/*" + suffix})
	}
	if err != nil {
		panic("template: embedded defaults: " + err.Error()) // a build defect, caught by the tests
	}
	return s
})

// Defaults returns the embedded default templates: execute-step, develop-task,
// baseline and research-topic.
func Defaults() *Set { return defaults() }

// ParseFS returns the defaults plus the team templates in fsys: every file
// matched by patterns (default "*.md.tmpl") whose name ends in ".md.tmpl"
// becomes the template <name>, replacing a default of that name. A pattern
// that matches no such file is an error, and so are two files of one name.
func ParseFS(fsys fs.FS, patterns ...string) (*Set, error) {
	if len(patterns) == 0 {
		patterns = []string{"*" + suffix}
	}
	return Defaults().addFS(fsys, patterns)
}

func (s *Set) addFS(fsys fs.FS, patterns []string) (*Set, error) {
	files := map[string]string{} // template name → file
	for _, pat := range patterns {
		matches, err := fs.Glob(fsys, pat)
		if err != nil {
			return nil, fmt.Errorf("template: pattern %q: %w", pat, err)
		}
		n := 0
		for _, m := range matches {
			name, ok := strings.CutSuffix(path.Base(m), suffix)
			if !ok {
				continue
			}
			n++
			if prev, dup := files[name]; dup && prev != m {
				return nil, fmt.Errorf("template: %s and %s both define template %q", prev, m, name)
			}
			files[name] = m
		}
		if n == 0 {
			return nil, fmt.Errorf("template: pattern %q matches no %s file", pat, suffix)
		}
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names) // deterministic: a later file's {{define}} wins
	for _, name := range names {
		text, err := fs.ReadFile(fsys, files[name])
		if err != nil {
			return nil, fmt.Errorf("template: %w", err)
		}
		if s, err = s.Add(name, string(text)); err != nil {
			return nil, fmt.Errorf("%s: %w", files[name], err)
		}
	}
	return s, nil
}

// addBlocks parses files holding only {{define}} blocks.
func (s *Set) addBlocks(fsys fs.FS, file string) (*Set, error) {
	text, err := fs.ReadFile(fsys, file)
	if err != nil {
		return nil, err
	}
	root := s.clone()
	if _, err := root.New(file).Parse(string(text)); err != nil {
		return nil, err
	}
	return &Set{root: root, names: s.names}, nil
}

// Add returns a new Set with the template name added, or replacing one of that
// name; s is unchanged. Names are letters, digits, '.', '_' and '-'. A parse
// error names the template and line; a template with nothing outside
// {{define}} blocks is an error.
func (s *Set) Add(name, text string) (*Set, error) {
	if s == nil {
		s = new(Set)
	}
	if !validName(name) {
		return nil, fmt.Errorf("template: invalid template name %q (want letters, digits, '.', '_', '-')", name)
	}
	// Parse alone first: text/template keeps an existing template when the
	// new text is empty, which would hide the mistake.
	probe, err := template.New(name).Funcs(funcs()).Parse(text)
	if err != nil {
		return nil, fmt.Errorf("add template %q: %w", name, err)
	}
	if probe.Tree == nil || parse.IsEmptyTree(probe.Tree.Root) {
		return nil, fmt.Errorf("add template %q: no text outside {{define}} blocks", name)
	}
	root := s.clone()
	if _, err := root.New(name).Parse(text); err != nil {
		return nil, fmt.Errorf("add template %q: %w", name, err)
	}
	names := slices.Clone(s.names)
	if !slices.Contains(names, name) {
		names = append(names, name)
		slices.Sort(names)
	}
	return &Set{root: root, names: names}, nil
}

func (s *Set) clone() *template.Template {
	if s.root == nil {
		return template.New("").Funcs(funcs()).Option("missingkey=zero")
	}
	root, err := s.root.Clone()
	if err != nil {
		panic(err) // Clone fails only after an html/template escape, never here
	}
	return root.Option("missingkey=zero")
}

func validName(name string) bool {
	if name == "" {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// Names returns the names of the templates Render accepts, sorted.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	return slices.Clone(s.names)
}

// Render executes the template name on a neutralized copy of data (see Set)
// and parses the result. An unknown name is an error wrapping
// ErrUnknownTemplate.
func (s *Set) Render(name string, data Data) (Rendered, error) {
	if s == nil || !slices.Contains(s.names, name) {
		return Rendered{}, fmt.Errorf("template: %w %q (have %s)", ErrUnknownTemplate, name, strings.Join(s.Names(), ", "))
	}
	safe, err := neutralizeData(data)
	if err != nil {
		return Rendered{}, fmt.Errorf("render template %q: %w", name, err)
	}
	var b strings.Builder
	if err := s.root.ExecuteTemplate(&b, name, safe); err != nil {
		return Rendered{}, fmt.Errorf("render template %q: %w", name, err)
	}
	text := b.String()
	return Rendered{Name: name, Text: text, Sections: Parse(text).Sections, Tokens: EstimateTokens(text)}, nil
}
