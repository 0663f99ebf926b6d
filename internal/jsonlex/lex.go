// Package jsonlex reads the tokens of a JSON document: whitespace, the
// brackets, commas and colons between values, strings (unescaped), numbers
// and literals, with their byte offsets. It is the one JSON scanner des
// writes by hand; gate parses a document with it straight into the
// policy's values, and internal/jsonsplice indexes a document's values by
// offset to edit it in place. Parsers are recursive descents over its
// methods, which accept exactly what encoding/json accepts and decode
// strings as encoding/json does.
package jsonlex

import (
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth bounds nesting as encoding/json does: 10,000 open containers.
const MaxDepth = 10000

// Error is a syntax error at a byte offset of the document.
type Error struct {
	Offset       int    // where, in bytes from the start
	Line, Column int    // the same, 1-based, as a person editing the file counts (columns in bytes)
	Msg          string // what, e.g. "expected ':'"
}

func (e *Error) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

// Kind is the kind of value a token starts.
type Kind uint8

// The kinds of JSON values.
const (
	Object Kind = iota + 1
	Array
	String
	Number
	True
	False
	Null
)

// Lexer reads data from its position on. The zero Lexer reads an empty
// document; New starts one at the beginning of data.
type Lexer struct {
	data  []byte
	pos   int
	depth int // containers opened and not yet closed
}

// New returns a Lexer at the start of data.
func New(data []byte) Lexer { return Lexer{data: data} }

// Pos is the offset of the next byte to read.
func (l *Lexer) Pos() int { return l.pos }

// Fail is a syntax error at the position.
func (l *Lexer) Fail(what string) *Error { return l.FailAt(l.pos, what) }

// FailAt is a syntax error at offset off.
func (l *Lexer) FailAt(off int, what string) *Error {
	off = max(0, min(off, len(l.data)))
	line, col := 1, off+1
	for i, c := range l.data[:off] {
		if c == '\n' {
			line, col = line+1, off-i
		}
	}
	return &Error{Offset: off, Line: line, Column: col, Msg: what}
}

// SkipSpace moves past JSON whitespace.
func (l *Lexer) SkipSpace() {
	for l.pos < len(l.data) {
		switch l.data[l.pos] {
		case ' ', '\t', '\n', '\r':
			l.pos++
		default:
			return
		}
	}
}

// Peek skips whitespace and tells what kind of value starts there, from
// its first byte, without reading it.
func (l *Lexer) Peek() (Kind, error) {
	l.SkipSpace()
	if l.pos >= len(l.data) {
		return 0, l.Fail("unexpected end")
	}
	switch c := l.data[l.pos]; {
	case c == '{':
		return Object, nil
	case c == '[':
		return Array, nil
	case c == '"':
		return String, nil
	case c == 't':
		return True, nil
	case c == 'f':
		return False, nil
	case c == 'n':
		return Null, nil
	case c == '-' || (c >= '0' && c <= '9'):
		return Number, nil
	default:
		return 0, l.Fail(fmt.Sprintf("unexpected %q", c))
	}
}

// End skips whitespace and fails unless the document ends there.
func (l *Lexer) End() error {
	if l.SkipSpace(); l.pos != len(l.data) {
		return l.Fail("data after the value")
	}
	return nil
}

// Open moves past the '{' or '[' that Peek found, and past the closing
// bracket too when the container is empty (then empty is true).
func (l *Lexer) Open() (empty bool, err error) {
	if l.depth >= MaxDepth {
		return false, l.Fail("nested too deeply")
	}
	closing := byte('}')
	if l.data[l.pos] == '[' {
		closing = ']'
	}
	l.depth++
	l.pos++
	l.SkipSpace()
	if l.pos < len(l.data) && l.data[l.pos] == closing {
		l.pos++
		l.depth--
		return true, nil
	}
	return false, nil
}

// More reads what follows a member or an element of the container that
// closing ('}' or ']') ends: a comma (more follow) or closing itself (the
// container ends; the position moves past it).
func (l *Lexer) More(closing byte) (more bool, err error) {
	l.SkipSpace()
	if l.pos >= len(l.data) {
		if closing == '}' {
			return false, l.Fail("unexpected end in an object")
		}
		return false, l.Fail("unexpected end in an array")
	}
	switch l.data[l.pos] {
	case ',':
		l.pos++
		return true, nil
	case closing:
		l.pos++
		l.depth--
		return false, nil
	}
	return false, l.Fail("expected ',' or '" + string(closing) + "'")
}

// Key reads an object member's key (after whitespace), up to its closing
// quote; Colon reads the colon after it.
func (l *Lexer) Key() (string, error) {
	if l.SkipSpace(); l.pos >= len(l.data) || l.data[l.pos] != '"' {
		return "", l.Fail("expected a key")
	}
	return l.Str()
}

// Colon reads the ':' between a key and its value.
func (l *Lexer) Colon() error {
	if l.SkipSpace(); l.pos >= len(l.data) || l.data[l.pos] != ':' {
		return l.Fail("expected ':'")
	}
	l.pos++
	return nil
}

// Literal reads the true, false or null that Peek found.
func (l *Lexer) Literal(k Kind) error {
	word := "null"
	switch k {
	case True:
		word = "true"
	case False:
		word = "false"
	}
	if len(l.data)-l.pos < len(word) || string(l.data[l.pos:l.pos+len(word)]) != word {
		return l.Fail("invalid literal")
	}
	l.pos += len(word)
	return nil
}

// Number reads the number that Peek found and returns its text: the bytes
// a number may hold, which must then spell one.
func (l *Lexer) Number() ([]byte, error) {
	start := l.pos
	for l.pos < len(l.data) {
		switch c := l.data[l.pos]; {
		case c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
			l.pos++
			continue
		}
		break
	}
	text := l.data[start:l.pos]
	if !validNumber(text) {
		return nil, l.FailAt(start, fmt.Sprintf("bad number %q", text))
	}
	return text, nil
}

// validNumber reports whether b is a JSON number:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i+1)
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return false
		}
		i = j
	}
	return i == len(b)
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// special marks the bytes that end the fast scan of a string: the quote,
// the backslash, control characters and the bytes of non-ASCII UTF-8.
var special = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c == '"' || c == '\\' || c < 0x20 || c >= 0x80
	}
	return t
}()

// Str reads the string at the position (its opening quote) and returns
// its value. The whole string is found first, so that an unterminated one
// says so rather than what it holds; a bad string is reported at its
// opening quote.
func (l *Lexer) Str() (string, error) {
	start := l.pos
	var escaped, other bool // backslashes; control or non-ASCII bytes
	for i := start + 1; ; {
		for i < len(l.data) && !special[l.data[i]] {
			i++
		}
		if i >= len(l.data) {
			l.pos = len(l.data)
			return "", l.Fail("unterminated string")
		}
		switch l.data[i] {
		case '"':
			l.pos = i + 1
			body := l.data[start+1 : i]
			if !escaped && (!other || plainUTF8(body)) {
				return string(body), nil // the common case: the bytes are the value
			}
			s, what := unquote(body)
			if what != "" {
				return "", l.FailAt(start, "bad string: "+what)
			}
			return s, nil
		case '\\':
			escaped = true
			i += 2
		default:
			other = true
			i++
		}
	}
}

// plainUTF8 reports whether b, which holds no quote or backslash, is its
// own value: valid UTF-8 without control characters.
func plainUTF8(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return false
		}
	}
	return utf8.Valid(b)
}

// unquote decodes a string's body as encoding/json does: escapes, invalid
// UTF-8 and lone surrogates become U+FFFD. what says why b is not a
// string's body.
func unquote(b []byte) (s string, what string) {
	out := make([]byte, 0, len(b)+utf8.UTFMax)
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == '\\':
			if i+1 >= len(b) {
				return "", "unterminated escape"
			}
			switch e := b[i+1]; e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, bad := hex4(b[i+2:])
				if r < 0 {
					return "", "invalid character " + quoteChar(bad) + ` in \u hexadecimal character escape`
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if r2, _ := hex4(u4(b[i:])); r2 >= 0 {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							out = utf8.AppendRune(out, dec) // a valid pair
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				out = utf8.AppendRune(out, r)
				continue
			default:
				return "", "invalid character " + quoteChar(e) + " in string escape code"
			}
			i += 2
		case c < 0x20:
			return "", "invalid character " + quoteChar(c) + " in string literal"
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			out = utf8.AppendRune(out, r) // RuneError for an invalid byte
			i += size
		}
	}
	return string(out), ""
}

// hex4 reads the four hex digits of a \u escape; on failure r is -1 and
// bad the byte that is no hex digit (the closing quote past the end).
func hex4(b []byte) (r rune, bad byte) {
	for i := range 4 {
		if i >= len(b) {
			return -1, '"'
		}
		c := b[i]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1, c
		}
		r = r*16 + rune(c)
	}
	return r, 0
}

// u4 is the digits of the \u escape b starts with, or nothing.
func u4(b []byte) []byte {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return nil
	}
	return b[2:6]
}

// quoteChar formats c for a message as encoding/json does.
func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	s := strconv.Quote(string(c))
	return "'" + s[1:len(s)-1] + "'"
}
