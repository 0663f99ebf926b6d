package jsonlex_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/internal/jsonlex"
)

// walk reads one value with the lexer, as its users do; strs collects the
// decoded strings, in order.
func walk(lx *jsonlex.Lexer, strs *[]string) error {
	k, err := lx.Peek()
	if err != nil {
		return err
	}
	switch k {
	case jsonlex.Object, jsonlex.Array:
		closing := byte(']')
		if k == jsonlex.Object {
			closing = '}'
		}
		empty, err := lx.Open()
		if err != nil || empty {
			return err
		}
		for {
			if k == jsonlex.Object {
				key, err := lx.Key()
				if err != nil {
					return err
				}
				*strs = append(*strs, key)
				if err := lx.Colon(); err != nil {
					return err
				}
			}
			if err := walk(lx, strs); err != nil {
				return err
			}
			if more, err := lx.More(closing); err != nil || !more {
				return err
			}
		}
	case jsonlex.String:
		s, err := lx.Str()
		*strs = append(*strs, s)
		return err
	case jsonlex.Number:
		_, err := lx.Number()
		return err
	}
	return lx.Literal(k)
}

func parse(data []byte) ([]string, error) {
	lx := jsonlex.New(data)
	var strs []string
	err := walk(&lx, &strs)
	if err == nil {
		err = lx.End()
	}
	return strs, err
}

// jsonStrings is the reference: the strings encoding/json decodes, keys
// and values in document order.
func jsonStrings(t *testing.T, data []byte) []string {
	dec := json.NewDecoder(strings.NewReader(string(data)))
	var out []string
	for {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		if s, ok := tok.(string); ok {
			out = append(out, s)
		}
	}
}

func check(t *testing.T, data []byte) {
	t.Helper()
	strs, err := parse(data)
	valid := json.Valid(data)
	if (err == nil) != valid {
		t.Fatalf("%q: lexer error %v, encoding/json valid %v", data, err, valid)
	}
	if !valid {
		return
	}
	want := jsonStrings(t, data)
	if strings.Join(strs, "\x00|") != strings.Join(want, "\x00|") {
		t.Fatalf("%q: strings %q, encoding/json %q", data, strs, want)
	}
}

var seeds = []string{
	`{}`, `[]`, `""`, `0`, `-0.5e+3`, `1E9`, `true`, `null`, ` [ false ] `,
	`{"a": [1, {"b": "c"}], "a": 2}`, `"caf\u00e9 \"q\" \\ \/ \b\f\n\r\t"`, `"\ud83d\ude00 \ud83d \ude00 \ud83dx"`,
	`"naïve"`, "\"bad \xff \xed\xa0\x80 byte\"", "\"\xef\xbf\xbd\"",
	`01`, `1.`, `.5`, `-`, `1e`, `+1`, `tru`, `nul`, `[1,]`, `{"a" 1}`, `{"a":1,}`, `[1 2]`, `{"a":1} x`,
	`"\x"`, `"\u12"`, `"\u12g4"`, `"\'"`, "\"\x01\"", `"open`, `"\`, `{1:2}`, `]`, ``, ` `,
}

func TestAgainstEncodingJSON(t *testing.T) {
	for _, s := range seeds {
		check(t, []byte(s))
	}
}

// FuzzLexer: the lexer accepts exactly what encoding/json accepts, and
// decodes every string as it does.
func FuzzLexer(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { check(t, data) })
}

func TestErrorsSayWhere(t *testing.T) {
	for in, want := range map[string]string{
		"{\n  \"a\": tru}":     "line 2, column 8: invalid literal",
		"{\n  \"a\": 01}":      `line 2, column 8: bad number "01"`,
		"[1,\n \"x\x01\"]":     `line 2, column 2: bad string: invalid character '\x01' in string literal`,
		"{\"a\": 1}\n\n  x":    "line 3, column 3: data after the value",
		"{\n  \"a\": \"open\n": "line 3, column 1: unterminated string",
		`{"a" 1}`:              "line 1, column 6: expected ':'",
		`{"a": 1 "b"}`:         "line 1, column 9: expected ',' or '}'",
		`[1 2]`:                "line 1, column 4: expected ',' or ']'",
		`{1: 2}`:               "line 1, column 2: expected a key",
		`[1,`:                  "line 1, column 4: unexpected end",
		`[1`:                   "line 1, column 3: unexpected end in an array",
		`"\q"`:                 `line 1, column 1: bad string: invalid character 'q' in string escape code`,
		`"\u00zz"`:             `line 1, column 1: bad string: invalid character 'z' in \u hexadecimal character escape`,
		`?`:                    "line 1, column 1: unexpected '?'",
	} {
		_, err := parse([]byte(in))
		var le *jsonlex.Error
		if err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %q", in, err, want)
		} else if !errors.As(err, &le) || le.Offset < 0 || le.Offset > len(in) {
			t.Errorf("%q: %#v is not a positioned *Error", in, err)
		}
	}
}

// Nesting stops where encoding/json's does: 10,000 containers deep.
func TestMaxDepth(t *testing.T) {
	for _, n := range []int{jsonlex.MaxDepth, jsonlex.MaxDepth + 1} {
		doc := []byte(strings.Repeat("[", n) + "1" + strings.Repeat("]", n))
		_, err := parse(doc)
		if (err == nil) != json.Valid(doc) {
			t.Errorf("depth %d: lexer error %v, encoding/json valid %v", n, err, json.Valid(doc))
		}
		if n > jsonlex.MaxDepth && (err == nil || !strings.Contains(err.Error(), "nested too deeply")) {
			t.Errorf("depth %d: %v, want nested too deeply", n, err)
		}
	}
}
