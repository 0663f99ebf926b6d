package template

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Marker names DES reads. Names are case-sensitive.
const (
	MarkerValidation = "DES-VALIDATION"
	MarkerOrigin     = "DES-ORIGIN"
	MarkerStepFile   = "DES-STEP-FILE"
	MarkerSection    = "DES-SECTION"

	// Routing markers say where a delegation goes, not how to validate it:
	// DES-PHASE names the phase of a multi-phase workflow a prompt delegates
	// to, DES-TASK-PHASE the task graph's phase. A prompt
	// whose only DES markers are routing markers is not validated by Gate 1.
	MarkerPhase     = "DES-PHASE"
	MarkerTaskPhase = "DES-TASK-PHASE"
)

// IsRouting reports whether name is a routing marker.
func IsRouting(name string) bool { return name == MarkerPhase || name == MarkerTaskPhase }

// Prompt is what DES reads from a prompt.
type Prompt struct {
	Validation, Origin, StepFile string // values of the metadata markers (first occurrence), "" when absent or empty
	// HasMarkers reports a DES-* marker other than a routing marker, known
	// or not: the prompt asks for nWave validation (Gate 1 is in charge).
	// A prompt whose only markers are routing markers has it false.
	HasMarkers bool
	// Routing maps each routing marker present (MarkerPhase,
	// MarkerTaskPhase) to its value (first occurrence; "" when empty); nil
	// when there is none.
	Routing    map[string]string
	Conflicts  []Conflict // metadata markers given twice with different values, sorted by marker
	Unknown    []string   // names of unknown DES-* markers, sorted, distinct; never a routing marker
	Sections   []Section  // in prompt order, duplicates included
	Duplicates []string   // section names that appear more than once, sorted
}

// Conflict is a metadata marker given more than once with different values.
type Conflict struct {
	Marker string
	Values []string // distinct, in order of appearance
}

// Section is the text a DES-SECTION marker introduces.
type Section struct {
	Name   string
	Body   string // text after the marker up to the next section marker, trimmed
	Tokens int    // EstimateTokens(Body)
}

// Parse reads the DES markers of prompt. It never fails: what it finds is
// reported, and the policy decides what is acceptable.
//
// A marker is an HTML comment "<!--" ... "-->" whose text, after optional
// whitespace, starts with an upper-case name "DES-[A-Z0-9_-]+" followed by
// ":" (optionally surrounded by whitespace), whitespace, or the end of the
// comment; the value is the rest of the comment, trimmed ("" when there is
// none). A comment runs to the first "-->"; when another "<!--" comes first,
// the earlier opener is ignored, so an unclosed comment cannot swallow the next
// marker. DES does not parse Markdown: a marker inside a fenced code block
// counts like any other.
//
// A section's body runs from the end of its marker to the start of the next
// DES-SECTION marker or the end of the prompt, and keeps any other marker it
// holds.
func Parse(prompt string) Prompt {
	var p Prompt
	meta := map[string][]string{} // metadata marker → distinct values in order
	var sec *Section
	var secStart int
	closeSection := func(end int) {
		if sec != nil {
			sec.Body = strings.TrimSpace(prompt[secStart:end])
			sec.Tokens = EstimateTokens(sec.Body)
			p.Sections = append(p.Sections, *sec)
			sec = nil
		}
	}
	// One pass: the positions of the next "<!--" and the next "-->" are
	// kept and searched again only once passed, so a prompt made of many
	// openers and one closer costs linear time, not quadratic (a slow parse
	// would let the hook time out, and Claude Code would go on).
	nextOpen, nextClose := -1, -1
	find := func(cached *int, from int, token string) int {
		if *cached == len(prompt) || (*cached >= from && *cached >= 0) {
			return *cached
		}
		if j := strings.Index(prompt[from:], token); j >= 0 {
			*cached = from + j
		} else {
			*cached = len(prompt)
		}
		return *cached
	}
	seenMeta := map[string]bool{}
	seenUnknown := map[string]bool{}
	for i := 0; ; {
		open := find(&nextOpen, i, "<!--")
		if open == len(prompt) {
			break
		}
		inner := open + len("<!--")
		closer := find(&nextClose, inner, "-->")
		if closer == len(prompt) {
			break
		}
		if after := find(&nextOpen, inner, "<!--"); after < closer {
			i = after // an unclosed comment must not swallow the next marker
			continue
		}
		text := prompt[inner:closer]
		i = closer + len("-->")
		name, value, ok := marker(text)
		if !ok {
			continue
		}
		if IsRouting(name) {
			if _, seen := p.Routing[name]; !seen {
				if p.Routing == nil {
					p.Routing = map[string]string{}
				}
				p.Routing[name] = value
			}
			continue
		}
		p.HasMarkers = true
		switch name {
		case MarkerValidation, MarkerOrigin, MarkerStepFile:
			if key := name + "\x00" + value; !seenMeta[key] {
				seenMeta[key] = true
				meta[name] = append(meta[name], value)
			}
		case MarkerSection:
			closeSection(open)
			sec, secStart = &Section{Name: value}, i
		default:
			if !seenUnknown[name] {
				seenUnknown[name] = true
				p.Unknown = append(p.Unknown, name)
			}
		}
	}
	closeSection(len(prompt))

	first := func(vals []string) string {
		if len(vals) == 0 {
			return ""
		}
		return vals[0]
	}
	p.Validation, p.Origin, p.StepFile = first(meta[MarkerValidation]), first(meta[MarkerOrigin]), first(meta[MarkerStepFile])
	for _, name := range []string{MarkerOrigin, MarkerStepFile, MarkerValidation} { // sorted
		if len(meta[name]) > 1 {
			p.Conflicts = append(p.Conflicts, Conflict{Marker: name, Values: meta[name]})
		}
	}
	slices.Sort(p.Unknown)
	seen := make(map[string]int, len(p.Sections))
	for _, s := range p.Sections {
		if seen[s.Name]++; seen[s.Name] == 2 {
			p.Duplicates = append(p.Duplicates, s.Name)
		}
	}
	slices.Sort(p.Duplicates)
	return p
}

// marker splits the text of a comment into a DES marker name and value.
func marker(text string) (name, value string, ok bool) {
	t := strings.TrimLeftFunc(text, unicode.IsSpace)
	if !strings.HasPrefix(t, "DES-") {
		return "", "", false
	}
	n := len("DES-")
	for n < len(t) && (t[n] >= 'A' && t[n] <= 'Z' || t[n] >= '0' && t[n] <= '9' || t[n] == '_' || t[n] == '-') {
		n++
	}
	if n == len("DES-") {
		return "", "", false
	}
	name, rest := t[:n], t[n:]
	if rest != "" {
		// The name must end at a separator: "DES-Validation" is not "DES-V".
		if r, _ := utf8.DecodeRuneInString(rest); r != ':' && !unicode.IsSpace(r) {
			return "", "", false
		}
		rest = strings.TrimSpace(rest)
		rest = strings.TrimSpace(strings.TrimPrefix(rest, ":"))
	}
	return name, rest, true
}

// Section returns the first section called name.
func (p Prompt) Section(name string) (Section, bool) {
	for _, s := range p.Sections {
		if s.Name == name {
			return s, true
		}
	}
	return Section{}, false
}

// SectionNames returns the distinct section names in order of first appearance.
func (p Prompt) SectionNames() []string {
	var names []string
	seen := make(map[string]bool, len(p.Sections))
	for _, s := range p.Sections {
		if !seen[s.Name] {
			seen[s.Name] = true
			names = append(names, s.Name)
		}
	}
	return names
}

// Words returns the distinct identifier-like words of text in order of first
// appearance: maximal runs of letters, digits and '_' that consist only of
// [A-Z][A-Z0-9_]*. "POST_REFACTOR_REVIEW" is one word and does not yield
// "REVIEW"; "REFACTOR_L1," yields "REFACTOR_L1"; "Review" and "REVIEWs" yield
// nothing. It is how a section is checked for whole-word phase names.
func Words(text string) []string {
	var words []string
	seen := map[string]bool{}
	isWord := func(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		if !isWord(r) {
			i += size
			continue
		}
		start, upper := i, r >= 'A' && r <= 'Z'
		for i < len(text) {
			r, size = utf8.DecodeRuneInString(text[i:])
			if !isWord(r) {
				break
			}
			upper = upper && (r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_')
			i += size
		}
		if w := text[start:i]; upper && !seen[w] {
			seen[w] = true
			words = append(words, w)
		}
	}
	return words
}

// EstimateTokens returns ceil(runes/4), a rough estimate of the tokens s costs
// a model. It is not a tokenizer: use it for budgets and reports, not limits
// that must be exact.
func EstimateTokens(s string) int { return (utf8.RuneCountInString(s) + 3) / 4 }

// Neutralize makes s unable to form a DES marker wherever it is interpolated:
// every "<!--" becomes "&lt;!--", so s cannot open a comment. A "<", "<!" or
// "<!-" at the very end of s is escaped the same way ("&lt;", ...), so that
// two values printed side by side cannot join into an opener either. The
// result still reads the same to a model.
func Neutralize(s string) string {
	s = strings.ReplaceAll(s, "<!--", "&lt;!--")
	for _, tail := range [...]string{"<!-", "<!", "<"} {
		if strings.HasSuffix(s, tail) {
			return s[:len(s)-len(tail)] + "&lt;" + tail[1:]
		}
	}
	return s
}
