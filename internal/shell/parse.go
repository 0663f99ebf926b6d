package shell

import (
	"strings"
)

// measure is what DES reads of a command before parsing it, cheaply and
// in one pass.
type measure struct {
	depth  int // an over-estimate of how deeply the parse tree nests
	tokens int // an over-estimate of the parser's tokens (words and operators)
}

// exprOps are the characters that may be binary operators inside an
// arithmetic or test expression: each may nest the tree one level more.
const exprOps = "&|+-*/%<>=!^,?:~"

// measureSrc over-estimates how deeply src nests and how many tokens it
// has: brackets, backticks and compound-command keywords open a level,
// their closers close one; inside [ ], (( )), $(( )) and after let every
// operator character nests one level more until its bracket (or the let
// statement) closes. It skips only the bodies of here-documents with a
// quoted delimiter (literal text, often whole source files); other
// quoting is ignored, so the estimate is cheap and errs high.
func measureSrc(src string) measure {
	type level struct {
		expr    bool // an arithmetic or test expression
		let     bool // opened by let or [: closed by the end of the line (let: of the statement) at the latest
		bracket bool // opened by [
		ops     int  // operator levels counted in it
	}
	var m measure
	var levels []level
	depth := 0
	i0 := -1 // the index being read, for open
	open := func(expr, let bool) {
		depth++
		levels = append(levels, level{expr: expr, let: let, bracket: expr && !let && i0 >= 0 && src[i0] == '['})
		if depth > m.depth {
			m.depth = depth
		}
	}
	closeOne := func() {
		if n := len(levels); n > 0 {
			depth -= 1 + levels[n-1].ops
			levels = levels[:n-1]
		}
	}
	inExpr := func() bool { return len(levels) > 0 && levels[len(levels)-1].expr }
	endLets := func() {
		for len(levels) > 0 && levels[len(levels)-1].let {
			closeOne()
		}
	}
	endLine := func() {
		for len(levels) > 0 && (levels[len(levels)-1].let || levels[len(levels)-1].bracket) {
			closeOne()
		}
	}
	inTick, inWord := false, false
	var literal []string // quoted here-document delimiters whose bodies start at the next newline
	for i := 0; i < len(src); i++ {
		c := src[i]
		i0 = i
		if c == ' ' || c == '\t' || c == '\n' {
			inWord = false
		} else if !inWord {
			inWord = true
			m.tokens++
		}
		switch {
		case c == '<' && strings.HasPrefix(src[i:], "<<") && !strings.HasPrefix(src[i:], "<<<"):
			m.tokens++
			if d, n := quotedHeredoc(src[i+2:]); n > 0 {
				literal = append(literal, d)
				i += 1 + n
			}
		case c == '\n' && len(literal) > 0:
			endLine()
			i = skipBodies(src, i, literal)
			literal = literal[:0]
		case c == '\n':
			m.tokens++
			endLine()
		case c == ';':
			m.tokens++
			endLets()
		case c == '(':
			m.tokens++
			open(inExpr() || i > 0 && src[i-1] == '(', false)
		case c == '[':
			m.tokens++
			open(true, false)
		case c == '{':
			m.tokens++
			open(false, false)
		case c == ')' || c == '}' || c == ']':
			m.tokens++
			endLets()
			closeOne()
		case c == '`':
			m.tokens++
			if inTick {
				closeOne()
			} else {
				open(false, false)
			}
			inTick = !inTick
		case c == '!' && (i == 0 || space(src[i-1])) && (i+1 == len(src) || space(src[i+1])):
			open(false, false)
		case strings.IndexByte(exprOps, c) >= 0:
			m.tokens++
			if inExpr() {
				levels[len(levels)-1].ops++
				depth++
				if depth > m.depth {
					m.depth = depth
				}
			}
		case c == '$':
			m.tokens++
		case c >= 'a' && c <= 'z' && (i == 0 || !identByte(src[i-1])):
			j := i
			for j < len(src) && identByte(src[j]) {
				j++
			}
			switch src[i:j] {
			case "if", "while", "until", "for", "case", "select", "time", "coproc", "function":
				open(false, false)
			case "fi", "done", "esac":
				closeOne()
			case "let":
				open(true, true)
			}
			i = j - 1
		}
	}
	return m
}

// nestingDepth is measureSrc's depth.
func nestingDepth(src string) int { return measureSrc(src).depth }

// quotedHeredoc reads the delimiter after << when it is quoted ('EOF',
// "EOF", \EOF, optionally after - and blanks): it returns the delimiter and
// how many bytes it took, or 0 when the delimiter is not quoted.
func quotedHeredoc(s string) (string, int) {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	if i >= len(s) {
		return "", 0
	}
	switch q := s[i]; q {
	case '\'', '"':
		end := strings.IndexByte(s[i+1:], q)
		if end <= 0 || strings.ContainsAny(s[i+1:i+1+end], "\n$`\\") {
			return "", 0
		}
		return s[i+1 : i+1+end], i + 2 + end
	case '\\':
		j := i + 1
		for j < len(s) && identByte(s[j]) {
			j++
		}
		if j == i+1 {
			return "", 0
		}
		return s[i+1 : j], j
	}
	return "", 0
}

// skipBodies skips the here-document bodies that start after the
// newline at nl and returns the index of the newline ending the last one.
func skipBodies(src string, nl int, delims []string) int {
	i := nl
	for _, d := range delims {
		for i < len(src) {
			end := strings.IndexByte(src[i+1:], '\n')
			line := src[i+1:]
			if end >= 0 {
				line = src[i+1 : i+1+end]
			}
			if end < 0 {
				return len(src)
			}
			i += end + 1
			if strings.TrimLeft(line, "\t") == d {
				break
			}
		}
	}
	return i
}

func space(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == ';' }

func identByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
