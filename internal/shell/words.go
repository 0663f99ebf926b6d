package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// word is one command word after brace expansion.
type word struct {
	val  string       // the value, quotes removed; valid when lit
	src  string       // as written; for a non-literal word, its literal parts unquoted and each expansion as written
	lit  bool         // the value is known statically
	proc bool         // a process substitution <(...) or >(...): a pipe, never a document
	word *syntax.Word // nil in the fallback scan and after brace expansion
}

func litArg(v string) word { return word{val: v, src: v, lit: true} }

// maxBraces bounds brace expansion of one word.
const maxBraces = 256

func (a *analyzer) words(ws []*syntax.Word) []word {
	out := make([]word, 0, len(ws))
	for _, w := range ws {
		if len(w.Parts) == 1 {
			if _, ok := w.Parts[0].(*syntax.ProcSubst); ok {
				out = append(out, word{src: a.source(w), proc: true})
				continue
			}
		}
		if hasBrace(w) && manyBraces(w) {
			out = append(out, word{src: a.source(w), word: w})
			continue
		}
		if hasBrace(w) && syntax.SplitBraces(w) {
			vals, ok := expandBraces(w.Parts)
			if !ok {
				out = append(out, word{src: a.source(w), word: w})
				continue
			}
			for _, v := range vals {
				out = append(out, word{val: v, src: v, lit: true})
			}
			continue
		}
		v, ok := wordValue(w.Parts)
		if ok {
			out = append(out, word{val: v, src: a.source(w), lit: true, word: w})
		} else {
			out = append(out, word{src: a.shape(w.Parts), word: w})
		}
	}
	return out
}

// shape renders a word DES cannot resolve: literal text unquoted, each
// expansion or substitution as written ("$D"/x gives $D/x).
func (a *analyzer) shape(parts []syntax.WordPart) string {
	var sb strings.Builder
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			writeUnquoted(&sb, p.Value, false)
		case *syntax.SglQuoted:
			if p.Dollar {
				sb.WriteString(a.source(p))
			} else {
				sb.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					dblQuoted(&sb, l.Value)
				} else {
					sb.WriteString(a.source(q))
				}
			}
		default:
			sb.WriteString(a.source(p))
		}
	}
	return sb.String()
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

// expandBraces expands {a,b} alternatives; sequences {1..9} and very
// large products are left to Dynamic.
func expandBraces(parts []syntax.WordPart) ([]string, bool) {
	outs := []string{""}
	for _, p := range parts {
		be, ok := p.(*syntax.BraceExp)
		if !ok {
			v, ok := wordValue([]syntax.WordPart{p})
			if !ok {
				return nil, false
			}
			for i := range outs {
				outs[i] += v
			}
			continue
		}
		if be.Sequence {
			return nil, false
		}
		var alts []string
		for _, e := range be.Elems {
			vs, ok := expandBraces(e.Parts)
			if !ok {
				return nil, false
			}
			alts = append(alts, vs...)
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
	return outs, true
}

// wordValue is the static value of a word, or false when it depends on
// run time (expansions other than $HOME, substitutions, globs).
func wordValue(parts []syntax.WordPart) (string, bool) {
	if len(parts) == 1 { // most words: no copy needed
		switch p := parts[0].(type) {
		case *syntax.Lit:
			if !strings.ContainsAny(p.Value, `\*?[`) {
				return p.Value, true
			}
		case *syntax.SglQuoted:
			if !p.Dollar {
				return p.Value, true
			}
		case *syntax.DblQuoted:
			if len(p.Parts) == 0 {
				return "", true
			}
			if l, ok := p.Parts[0].(*syntax.Lit); ok && len(p.Parts) == 1 && !strings.Contains(l.Value, `\`) {
				return l.Value, true
			}
		}
	}
	var sb strings.Builder
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if !writeUnquoted(&sb, p.Value, true) {
				return "", false
			}
		case *syntax.SglQuoted:
			if p.Dollar && strings.Contains(p.Value, `\`) {
				return "", false // $'..' escapes: rare in paths, not worth decoding
			}
			sb.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				switch q := q.(type) {
				case *syntax.Lit:
					dblQuoted(&sb, q.Value)
				case *syntax.ParamExp:
					if !isHome(q) {
						return "", false
					}
					sb.WriteString("$HOME")
				default:
					return "", false
				}
			}
		case *syntax.ParamExp:
			if !isHome(p) {
				return "", false
			}
			sb.WriteString("$HOME")
		default:
			return "", false
		}
	}
	return sb.String(), true
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

func isHome(p *syntax.ParamExp) bool {
	return p.Param != nil && p.Param.Value == "HOME" && p.Flags == nil && !p.Excl && !p.Length &&
		!p.Width && !p.IsSet && p.NestedParam == nil && p.Index == nil && len(p.Modifiers) == 0 &&
		p.Slice == nil && p.Repl == nil && p.Names == 0 && p.Exp == nil
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
