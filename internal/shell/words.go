package shell

import (
	"path"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// word is one command word after brace expansion.
type word struct {
	val  string       // the value, quotes removed; valid when lit; the pattern when glob
	src  string       // as written; for a non-literal word, its literal parts unquoted and each unknown expansion as written
	lit  bool         // the value is known statically
	glob bool         // not lit, but known as a pattern (unquoted * ? [): val holds it, quoted metacharacters escaped
	proc bool         // a process substitution <(...) or >(...): a pipe, never a document
	word *syntax.Word // nil in the fallback scan and after brace expansion
}

func litArg(v string) word { return word{val: v, src: v, lit: true} }

// maxBraces bounds brace expansion of one word.
const maxBraces = 256

func (a *analyzer) words(ws []*syntax.Word, st *walkState) []word {
	out := make([]word, 0, len(ws))
	for _, w := range ws {
		if len(w.Parts) == 1 {
			if _, ok := w.Parts[0].(*syntax.ProcSubst); ok {
				out = append(out, word{src: a.source(w), proc: true, word: w})
				continue
			}
		}
		if hasBrace(w) && manyBraces(w) {
			out = append(out, word{src: a.source(w), word: w})
			continue
		}
		if src := a.source(w); hasBrace(w) && syntax.SplitBraces(w) {
			vals, ok := a.expandBraces(w.Parts, st)
			if !ok {
				out = append(out, word{src: src, word: w})
				continue
			}
			out = append(out, vals...)
			continue
		}
		out = append(out, a.value(w, st))
	}
	return out
}

// value is the static reading of a word in st.
func (a *analyzer) value(w *syntax.Word, st *walkState) word {
	e := a.expand(w.Parts, st, true)
	switch {
	case e.dyn:
		return word{src: a.shape(w.Parts, st), word: w}
	case e.glob:
		return word{val: e.pat.String(), src: a.shape(w.Parts, st), glob: true, word: w}
	}
	return word{val: e.val.String(), src: a.source(w), lit: true, word: w}
}

// shape renders a word DES cannot resolve: literal text unquoted, known
// variables substituted, each other expansion or substitution as written
// ("$D"/x gives $D/x).
func (a *analyzer) shape(parts []syntax.WordPart, st *walkState) string {
	var sb strings.Builder
	for i, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			v := p.Value
			if i == 0 && st != nil {
				if t, rest, ok := a.tilde(v, st); ok {
					sb.WriteString(t)
					v = rest
				}
			}
			writeUnquoted(&sb, v, false)
		case *syntax.SglQuoted:
			if p.Dollar {
				sb.WriteString(ansiC(p.Value))
			} else {
				sb.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				switch q := q.(type) {
				case *syntax.Lit:
					dblQuoted(&sb, q.Value)
				case *syntax.ParamExp:
					if v, ok := a.param(q, st); ok {
						sb.WriteString(v)
					} else {
						sb.WriteString(a.source(q))
					}
				default:
					sb.WriteString(a.source(q))
				}
			}
		case *syntax.ParamExp:
			if v, ok := a.param(p, st); ok {
				sb.WriteString(v)
			} else {
				sb.WriteString(a.source(p))
			}
		default:
			sb.WriteString(a.source(p))
		}
	}
	return sb.String()
}

// expansion is a word's parts read statically: val its value, pat the
// same as a pattern (quoted metacharacters escaped).
type expansion struct {
	val, pat  strings.Builder
	glob, dyn bool
}

func (e *expansion) quoted(s string) {
	e.val.WriteString(s)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '*' || c == '?' || c == '[' || c == '\\' {
			e.pat.WriteByte('\\')
		}
		e.pat.WriteByte(s[i])
	}
}

// unquoted adds the value of an unquoted expansion: it is split on blanks
// (DES gives up) and globbed.
func (e *expansion) unquoted(s string) {
	if strings.ContainsAny(s, " \t\n") {
		e.dyn = true
		return
	}
	e.val.WriteString(s)
	e.pat.WriteString(s)
	if strings.ContainsAny(s, "*?[") {
		e.glob = true
	}
}

// expand reads parts in st; top is set for a whole word (tilde expansion).
func (a *analyzer) expand(parts []syntax.WordPart, st *walkState, top bool) *expansion {
	e := &expansion{}
	for i, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			v := p.Value
			if i == 0 && top {
				t, rest, ok := a.tilde(v, st)
				switch {
				case ok && strings.HasPrefix(t, "~"):
					e.dyn = true // ~user, or no home given
				case ok:
					e.quoted(t)
					v = rest
				}
			}
			for j := 0; j < len(v); j++ {
				c := v[j]
				switch {
				case c == '\\' && j+1 < len(v):
					j++
					if v[j] != '\n' {
						e.quoted(v[j : j+1])
					}
				case c == '*' || c == '?' || c == '[' && strings.Contains(v[j:], "]"):
					e.glob = true
					e.val.WriteByte(c)
					e.pat.WriteByte(c)
				default:
					e.val.WriteByte(c)
					e.pat.WriteByte(c)
				}
			}
		case *syntax.SglQuoted:
			if p.Dollar {
				e.quoted(ansiC(p.Value))
			} else {
				e.quoted(p.Value)
			}
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				switch q := q.(type) {
				case *syntax.Lit:
					var sb strings.Builder
					dblQuoted(&sb, q.Value)
					e.quoted(sb.String())
				case *syntax.ParamExp:
					v, ok := a.param(q, st)
					if !ok {
						e.dyn = true
					}
					e.quoted(v)
				default:
					e.dyn = true
				}
			}
		case *syntax.ParamExp:
			v, ok := a.param(p, st)
			if !ok {
				e.dyn = true
			}
			e.unquoted(v)
		default:
			e.dyn = true
		}
	}
	return e
}

// tilde reads a leading ~, ~/..., ~+, ~- (and ~user) of an unquoted word:
// its expansion (or the prefix as written, starting with ~, when DES
// cannot know it) and the rest of v.
func (a *analyzer) tilde(v string, st *walkState) (string, string, bool) {
	if !strings.HasPrefix(v, "~") {
		return "", v, false
	}
	end := strings.IndexByte(v, '/')
	if end < 0 {
		end = len(v)
	}
	prefix, rest := v[:end], v[end:]
	var val string
	var ok bool
	switch prefix {
	case "~":
		val, ok = a.varValue("HOME", st)
	case "~+":
		val, ok = a.varValue("PWD", st)
	case "~-":
		val, ok = a.varValue("OLDPWD", st)
	}
	if !ok {
		return prefix, rest, true
	}
	return val, rest, true
}

// param is the value of a plain $NAME or ${NAME} DES knows.
func (a *analyzer) param(p *syntax.ParamExp, st *walkState) (string, bool) {
	if p.Param == nil || p.Flags != nil || p.Excl || p.Length || p.Width || p.IsSet || p.NestedParam != nil ||
		p.Index != nil || len(p.Modifiers) > 0 || p.Slice != nil || p.Repl != nil || p.Names != 0 || p.Exp != nil {
		return "", false
	}
	return a.varValue(p.Param.Value, st)
}

// varValue is a variable's value: assigned literally in the command, or
// HOME, PWD and OLDPWD from the options and the cds DES followed.
func (a *analyzer) varValue(name string, st *walkState) (string, bool) {
	if st == nil {
		return "", false
	}
	if b, ok := st.lookup(name); ok {
		return b.val, b.known
	}
	switch name {
	case "HOME":
		return a.cfg.home, a.cfg.home != ""
	case "PWD":
		return a.absDir(st.dir)
	case "OLDPWD":
		return a.absDir(st.old)
	}
	return "", false
}

// absDir is the one absolute directory of d, when DES knows it.
func (a *analyzer) absDir(d dirSet) (string, bool) {
	ls := d.list()
	if len(ls) != 1 || ls[0].unknown || d.over {
		return "", false
	}
	p := ls[0].path
	switch {
	case strings.HasPrefix(p, "/"):
		return p, true
	case isAbs(p) || a.cfg.cwd == "":
		return "", false
	case p == "":
		return a.cfg.cwd, true
	}
	return path.Join(a.cfg.cwd, p), true
}

// home is where a bare cd goes.
func (a *analyzer) home() location {
	if a.cfg.home != "" {
		return location{path: a.cfg.home}
	}
	return location{path: "~", unknown: true}
}

// ansiC decodes the body of $'...'.
func ansiC(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			sb.WriteByte(c)
			continue
		}
		i++
		switch c = s[i]; c {
		case 'a':
			sb.WriteByte(7)
		case 'b':
			sb.WriteByte(8)
		case 'e', 'E':
			sb.WriteByte(27)
		case 'f':
			sb.WriteByte(12)
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 't':
			sb.WriteByte('\t')
		case 'v':
			sb.WriteByte(11)
		case 'c':
			if i+1 < len(s) {
				i++
				sb.WriteByte(s[i] & 0x1f)
			}
		case 'x', 'u', 'U':
			max := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
			j := i + 1
			for j < len(s) && j-i-1 < max && isHex(s[j]) {
				j++
			}
			if j == i+1 {
				sb.WriteByte('\\')
				sb.WriteByte(c)
				continue
			}
			n, _ := strconv.ParseUint(s[i+1:j], 16, 32)
			if c == 'x' {
				sb.WriteByte(byte(n))
			} else {
				sb.WriteRune(rune(n))
			}
			i = j - 1
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j-i < 3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			n, _ := strconv.ParseUint(s[i:j], 8, 16)
			sb.WriteByte(byte(n))
			i = j - 1
		default: // \\ \' \" \? and unknown escapes
			if c != '\\' && c != '\'' && c != '"' && c != '?' {
				sb.WriteByte('\\')
			}
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hasBrace(w *syntax.Word) bool {
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok && strings.Contains(l.Value, "{") {
			return true
		}
	}
	return false
}

// manyBraces reports a word with more braces than DES expands (brace
// splitting is quadratic in them): such a word is left unresolved.
func manyBraces(w *syntax.Word) bool {
	n := 0
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok {
			n += strings.Count(l.Value, "{")
		}
	}
	return n > maxBraceGroups
}

// maxBraceGroups bounds the braces of one word DES expands.
const maxBraceGroups = 32

// expandBraces expands {a,b} alternatives into words; sequences {1..9},
// very large products and parts DES cannot read give false.
func (a *analyzer) expandBraces(parts []syntax.WordPart, st *walkState) ([]word, bool) {
	outs := []string{""}
	glob := false
	for i, p := range parts {
		be, ok := p.(*syntax.BraceExp)
		if !ok {
			e := a.expand([]syntax.WordPart{p}, st, i == 0)
			if e.dyn || e.glob {
				if !e.dyn {
					glob = true
				}
				if e.dyn {
					return nil, false
				}
			}
			v := e.val.String()
			if e.glob {
				v = e.pat.String()
			}
			for j := range outs {
				outs[j] += v
			}
			continue
		}
		if be.Sequence {
			return nil, false
		}
		var alts []string
		for _, el := range be.Elems {
			ws, ok := a.expandBraces(el.Parts, st)
			if !ok {
				return nil, false
			}
			for _, w := range ws {
				glob = glob || w.glob
				alts = append(alts, w.val)
			}
		}
		if len(outs)*len(alts) > maxBraces {
			return nil, false
		}
		next := make([]string, 0, len(outs)*len(alts))
		for _, o := range outs {
			for _, al := range alts {
				next = append(next, o+al)
			}
		}
		outs = next
	}
	ws := make([]word, len(outs))
	for i, v := range outs {
		ws[i] = word{val: v, src: v, lit: !glob, glob: glob}
	}
	return ws, true
}

// plainValue is the static value of a word without variables, or false
// when it depends on run time (expansions, substitutions, globs).
func plainValue(parts []syntax.WordPart) (string, bool) {
	a := &analyzer{}
	e := a.expand(parts, nil, false)
	if e.dyn || e.glob {
		return "", false
	}
	return e.val.String(), true
}

// writeUnquoted writes an unquoted literal with its backslashes removed; with
// globs set, an unescaped * ? [ makes the word a pattern (false).
func writeUnquoted(sb *strings.Builder, v string, globs bool) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\' && i+1 < len(v):
			i++
			if v[i] != '\n' {
				sb.WriteByte(v[i])
			}
		case globs && (c == '*' || c == '?' || c == '['):
			return false
		default:
			sb.WriteByte(c)
		}
	}
	return true
}

// dblQuoted writes a double-quoted (or unquoted here-document) literal:
// only \$ \` \" \\ and \newline are escapes there.
func dblQuoted(sb *strings.Builder, v string) {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\\' && i+1 < len(v) {
			switch v[i+1] {
			case '$', '`', '"', '\\':
				sb.WriteByte(v[i+1])
				i++
				continue
			case '\n':
				i++
				continue
			}
		}
		sb.WriteByte(c)
	}
}

// hole stands for text DES cannot know inside a script given to an
// interpreter; a string literal containing it is not literal.
const hole = "\x00"

// scriptText is the text a word gives an interpreter, with hole
// where the shell would substitute something.
func scriptText(parts []syntax.WordPart, hdoc bool) string {
	var sb strings.Builder
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if hdoc {
				dblQuoted(&sb, p.Value)
			} else {
				writeUnquoted(&sb, p.Value, false)
			}
		case *syntax.SglQuoted:
			sb.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					dblQuoted(&sb, l.Value)
				} else {
					sb.WriteString(hole)
				}
			}
		default:
			sb.WriteString(hole)
		}
	}
	return sb.String()
}

// scriptOf is the script text an argument gives an interpreter.
func scriptOf(arg word) string {
	switch {
	case arg.lit:
		return arg.val
	case arg.word != nil:
		return scriptText(arg.word.Parts, false)
	case arg.val != "":
		return arg.val // the fallback scan: the raw text, read conservatively
	}
	return hole
}

// attachedValue is the script glued to a flag (-e'...'), without the flag.
func attachedValue(arg word, flag string) string {
	text := scriptOf(arg)
	if len(text) < len(flag) {
		return hole
	}
	return text[len(flag):]
}
