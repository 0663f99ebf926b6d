package report

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

//go:embed page.html.tmpl
var pageTemplate string

// Colour is a theme's pair of colours for one kind: the text (and marker)
// colour, and the background of its badge.
type Colour struct{ FG, BG string }

// Theme is the page's palette in one scheme.
type Theme struct {
	Background, Text, Muted, Border, Panel string
	Kinds                                  map[string]Colour
}

// Themes are the light and dark palettes. Each kind's colour is its own
// text on the page background and on its badge: both pairs keep a contrast
// ratio of at least 4.5 (WCAG AA for text), which the tests check.
func Themes() map[string]Theme {
	return map[string]Theme{
		"light": {Background: "#ffffff", Text: "#1b1f24", Muted: "#57606a", Border: "#d0d7de", Panel: "#f6f8fa", Kinds: map[string]Colour{
			KindDeny: {"#a40e26", "#ffebe9"}, KindWarn: {"#7d4e00", "#fff8c5"}, KindPass: {"#116329", "#dafbe1"},
			KindWaived: {"#6639ba", "#fbefff"}, KindEscal: {"#953800", "#fff1e5"}, KindRestore: {"#0550ae", "#ddf4ff"},
			KindSync: {"#166a70", "#e0f7f7"}, KindError: {"#82071e", "#ffd8d3"}, KindInfo: {"#57606a", "#eaeef2"},
		}},
		"dark": {Background: "#0d1117", Text: "#e6edf3", Muted: "#9198a1", Border: "#3d444d", Panel: "#161b22", Kinds: map[string]Colour{
			KindDeny: {"#ff9492", "#3c1618"}, KindWarn: {"#e3b341", "#341a00"}, KindPass: {"#56d364", "#0f2d19"},
			KindWaived: {"#d2a8ff", "#2b1a4a"}, KindEscal: {"#ffa657", "#3d1d00"}, KindRestore: {"#79c0ff", "#0c2d6b"},
			KindSync: {"#56d4dd", "#04302f"}, KindError: {"#ffa198", "#490202"}, KindInfo: {"#9198a1", "#21262d"},
		}},
	}
}

// Contrast is the WCAG 2 contrast ratio of two #rrggbb colours.
func Contrast(a, b string) float64 {
	la, lb := luminance(a), luminance(b)
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

func luminance(hex string) float64 {
	var r, g, b int
	fmt.Sscanf(strings.TrimPrefix(hex, "#"), "%02x%02x%02x", &r, &g, &b)
	lin := func(c int) float64 {
		s := float64(c) / 255
		if s <= 0.03928 {
			return s / 12.92
		}
		return math.Pow((s+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(r) + 0.7152*lin(g) + 0.0722*lin(b)
}

// css is the themes as CSS custom properties.
func css() template.CSS {
	var b strings.Builder
	th := Themes()
	write := func(sel string, t Theme) {
		fmt.Fprintf(&b, "%s{--bg:%s;--fg:%s;--muted:%s;--border:%s;--panel:%s;", sel, t.Background, t.Text, t.Muted, t.Border, t.Panel)
		for _, k := range slices.Sorted(maps.Keys(t.Kinds)) {
			fmt.Fprintf(&b, "--%s:%s;--%s-bg:%s;", k, t.Kinds[k].FG, k, t.Kinds[k].BG)
		}
		b.WriteString("}\n")
	}
	write(":root,:root[data-theme=light]", th["light"])
	write(":root[data-theme=dark]", th["dark"])
	b.WriteString("@media (prefers-color-scheme: dark){")
	write(":root:not([data-theme=light])", th["dark"])
	b.WriteString("}\n")
	return template.CSS(b.String())
}

// page is what the template reads. The timeline and the event list are
// drawn by the page's script from Data, a compact copy of the events: a
// table of 10,000 rows and as many markers, written out as HTML, take
// Chromium seconds to parse; the script draws the markers by time bucket and
// the rows a page at a time.
type page struct {
	*Report
	CSS      template.CSS
	Kinds    []string
	Start    time.Time
	End      time.Time
	Sessions []string
	StepList []string
	PhaseSet []string
	CodeSet  []string
	Data     template.JS
	// Integrity are the events of kind restore and sync, and restores that
	// failed.
	Integrity  []Event
	LaneLabels map[string]string
}

// pageData is the script's copy of the events.
type pageData struct {
	Lanes []string `json:"lanes"` // lane ids, in the order of the lane rows
	Kinds []string `json:"kinds"`
	Span  int64    `json:"span"` // milliseconds from the first event to the last
	// Events are rows of: seq, milliseconds since the first event, lane
	// index, kind index, event, what happened, session, step, phase, codes
	// (space-separated), attested (1 or 0), time as shown, lane label,
	// messages (newline-separated).
	Events [][]any `json:"events"`
}

// shownTime is how the page writes a time, in the template and the data.
const shownTime = "2006-01-02 15:04:05Z"

// WriteHTML writes the report as one HTML page.
func (r *Report) WriteHTML(w io.Writer) error {
	kinds := []string{KindDeny, KindWarn, KindWaived, KindEscal, KindRestore, KindSync, KindError, KindPass, KindInfo}
	t, err := template.New("page").Funcs(template.FuncMap{
		"ts":    func(t time.Time) string { return t.UTC().Format(shownTime) },
		"join":  strings.Join,
		"lower": strings.ToLower,
		// Classes from a fixed set: a status or severity a line des did not
		// write could otherwise add classes of its own.
		"phaseClass": func(status string) string {
			if slices.Contains([]string{"NOT_EXECUTED", "IN_PROGRESS", "EXECUTED", "SKIPPED", "FAILED"}, status) {
				return "ph-" + status
			}
			return "ph-other"
		},
		"kindClass": func(kind string) string {
			if slices.Contains(kinds, kind) {
				return "k-" + kind
			}
			return "k-" + KindInfo
		},
	}).Parse(pageTemplate)
	if err != nil {
		return err
	}
	p := page{Report: r, CSS: css(), Kinds: kinds, LaneLabels: map[string]string{}}
	if n := len(r.Events); n > 0 {
		p.Start, p.End = r.Events[0].Time, r.Events[0].Time
		for _, e := range r.Events {
			p.Start, p.End = minTime(p.Start, e.Time), maxTime(p.End, e.Time)
		}
	}
	d := pageData{Kinds: p.Kinds, Span: p.End.Sub(p.Start).Milliseconds(), Events: make([][]any, 0, len(r.Events))}
	laneIndex, kindIndex := map[string]int{}, map[string]int{}
	for i, l := range r.Lanes {
		laneIndex[l.ID] = i
		d.Lanes = append(d.Lanes, l.ID)
		p.LaneLabels[l.ID] = l.Label
	}
	for i, k := range p.Kinds {
		kindIndex[k] = i
	}
	steps, phases, codes, sessions := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, e := range r.Events {
		attested := 0
		if e.Attested {
			attested = 1
		}
		d.Events = append(d.Events, []any{e.Seq, e.Time.Sub(p.Start).Milliseconds(), laneIndex[e.Lane], kindIndex[e.Kind], e.Event, e.What,
			e.Session, e.Step, e.Phase, strings.Join(e.Codes, " "), attested, e.Time.UTC().Format(shownTime), p.LaneLabels[e.Lane],
			strings.Join(e.Messages, "\n")})
		if e.Kind == KindRestore || e.Kind == KindSync || e.Event == "INTEGRITY_VIOLATION" {
			p.Integrity = append(p.Integrity, e)
		}
		if e.Step != "" {
			steps[e.Step] = true
		}
		if e.Phase != "" {
			phases[e.Phase] = true
		}
		for _, c := range e.Codes {
			codes[c] = true
		}
		if e.Session != "" {
			sessions[e.Session] = true
		}
	}
	p.StepList, p.PhaseSet, p.CodeSet, p.Sessions = slices.Sorted(maps.Keys(steps)), slices.Sorted(maps.Keys(phases)), slices.Sorted(maps.Keys(codes)), slices.Sorted(maps.Keys(sessions))
	// encoding/json escapes <, > and & in strings: no text of an event can
	// end the script element that holds them.
	raw, err := json.Marshal(d)
	if err != nil {
		return err
	}
	p.Data = template.JS(raw)
	return t.Execute(w, p)
}
