package shell

import (
	"strings"
)

// nestingDepth over-estimates how deeply src nests: brackets, backticks
// and compound-command keywords open a level, their closers close one. It
// skips only the bodies of here-documents with a quoted delimiter (literal
// text, often whole source files); other quoting is ignored, so the estimate
// is cheap. A text crafted to fool it can at worst crash the hook, which
// Claude Code treats as a block.
func nestingDepth(src string) int {
	depth, deepest := 0, 0
	open := func() {
		depth++
		if depth > deepest {
			deepest = depth
		}
	}
	closeOne := func() {
		if depth > 0 {
			depth--
		}
	}
	inTick := false
	var literal []string // quoted here-document delimiters whose bodies start at the next newline
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '<' && strings.HasPrefix(src[i:], "<<") && !strings.HasPrefix(src[i:], "<<<"):
			if d, n := quotedHeredoc(src[i+2:]); n > 0 {
				literal = append(literal, d)
				i += 1 + n
			}
		case c == '\n' && len(literal) > 0:
			i = skipBodies(src, i, literal)
			literal = literal[:0]
		case c == '(' || c == '{' || c == '[':
			open()
		case c == ')' || c == '}' || c == ']':
			closeOne()
		case c == '`':
			if inTick {
				closeOne()
			} else {
				open()
			}
			inTick = !inTick
		case c == '!' && (i == 0 || space(src[i-1])) && (i+1 == len(src) || space(src[i+1])):
			open()
		case c >= 'a' && c <= 'z' && (i == 0 || !identByte(src[i-1])):
			j := i
			for j < len(src) && identByte(src[j]) {
				j++
			}
			switch src[i:j] {
			case "if", "while", "until", "for", "case", "select", "time", "coproc", "function":
				open()
			case "fi", "done", "esac":
				closeOne()
			}
			i = j - 1
		}
	}
	return deepest
}

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
