package shell

import (
	"strings"
)

// roughTok is a word, or a redirection operator (op set).
type roughTok struct {
	text string
	op   string
}

// fallback reads src without trusting its quoting: every piece between
// command separators is a command; quotes are dropped, so text the shell
// would have kept inside a string is read as code (conservative).
func (a *analyzer) fallback(src string, st *walkState) {
	a.res.Dynamic = true
	var args []word
	eachRoughCommand(src, func(cmd []roughTok) {
		if cap(args) < len(cmd) {
			args = make([]word, 0, len(cmd))
		}
		args = args[:0]
		for i := 0; i < len(cmd); i++ {
			t := cmd[i]
			if t.op == "" {
				args = append(args, word{val: t.text, src: t.text, lit: !strings.ContainsAny(t.text, "$*?[`")})
				continue
			}
			if i+1 >= len(cmd) || cmd[i+1].op != "" {
				continue
			}
			target := cmd[i+1].text
			i++
			switch t.op {
			case ">", ">>", ">|", "&>", "&>>", "<>":
			case ">&":
				if target == "-" || strings.Trim(strings.TrimSuffix(target, "-"), "0123456789") == "" {
					continue
				}
			default:
				continue // input and here-documents
			}
			a.writeArg(word{val: target, src: target, lit: !strings.ContainsAny(target, "$*?[`")}, st, HowRedirect)
		}
		// Pieces split at ; start with the keyword of the compound command.
		words := args
		for len(words) > 0 && roughKeywords[words[0].val] {
			words = words[1:]
		}
		a.run(words, st, callInfo{})
	})
}

var roughKeywords = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "fi": true, "do": true, "done": true,
	"while": true, "until": true, "!": true, "{": true, "}": true, "time": true, "esac": true,
}

// roughCommands splits src into commands of rough tokens, skipping the
// bodies of here-documents it recognises.
func roughCommands(src string) [][]roughTok {
	var cmds [][]roughTok
	eachRoughCommand(src, func(cmd []roughTok) {
		cmds = append(cmds, append([]roughTok(nil), cmd...))
	})
	return cmds
}

// eachRoughCommand calls f with each command of src as rough tokens (the
// slice is reused: f must not keep it), in one pass.
func eachRoughCommand(src string, f func([]roughTok)) {
	var cur []roughTok
	var word strings.Builder
	inWord := false
	var pending []string // here-document delimiters waiting for the end of the line
	wantDelim := false   // the next word follows << or <<-
	flush := func() {
		if inWord {
			cur = append(cur, roughTok{text: word.String()})
			if wantDelim {
				pending = append(pending, word.String())
				wantDelim = false
			}
		}
		word.Reset()
		inWord = false
	}
	endCmd := func() {
		flush()
		if len(cur) > 0 {
			f(cur)
		}
		cur = cur[:0]
	}
	op := func(o string) {
		// A descriptor number written just before the operator is not a word.
		if inWord && strings.Trim(word.String(), "0123456789") == "" {
			word.Reset()
			inWord = false
		}
		flush()
		cur = append(cur, roughTok{op: o})
		wantDelim = o == "<<" || o == "<<-"
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		next := byte(0)
		if i+1 < len(src) {
			next = src[i+1]
		}
		switch {
		case c == '\\' && i+1 < len(src):
			if next != '\n' {
				word.WriteByte(next)
				inWord = true
			}
			i++
		case c == '\'' || c == '"':
			inWord = true
		case c == ' ' || c == '\t' || c == '\r':
			flush()
		case c == '\n':
			// The bodies of here-documents started on this line follow it.
			endCmd()
			for _, d := range pending {
				for i+1 < len(src) {
					end := strings.IndexByte(src[i+1:], '\n')
					line := src[i+1:]
					if end >= 0 {
						line = src[i+1 : i+1+end]
					}
					if end < 0 {
						i = len(src) - 1
					} else {
						i += end + 1
					}
					if strings.TrimLeft(line, "\t") == d {
						break
					}
				}
			}
			pending = nil
		case c == ';' || c == '|' || c == '(' || c == ')' || c == '`':
			endCmd()
		case c == '&' && next == '>':
			if i+2 < len(src) && src[i+2] == '>' {
				op("&>>")
				i += 2
			} else {
				op("&>")
				i++
			}
		case c == '&':
			endCmd()
		case c == '$' && next == '(':
			endCmd()
			i++
		case c == '>':
			switch next {
			case '>':
				op(">>")
				i++
			case '|':
				op(">|")
				i++
			case '&':
				op(">&")
				i++
			default:
				op(">")
			}
		case c == '<':
			switch {
			case strings.HasPrefix(src[i:], "<<<"):
				op("<<<")
				i += 2
			case strings.HasPrefix(src[i:], "<<-"):
				op("<<-")
				i += 2
			case next == '<':
				op("<<")
				i++
			case next == '>':
				op("<>")
				i++
			case next == '&':
				op("<&")
				i++
			case next == '(':
				endCmd() // process substitution
				i++
			default:
				op("<")
			}
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	endCmd()
}
