package gate

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/deterministic-exec/des/internal/datadoc"
)

// jsonValue parses one JSON document straight into the policy's value type.
// It is what ast.InterfaceToValue of the document decoded by encoding/json
// (with UseNumber) gives, without the generic Go value in between: Gate 3
// hands the policy hundreds of whole step files per commit, and the two
// conversions cost twice this one (measured in docs/performance.md). As
// with encoding/json, a repeated key keeps its last value.
func jsonValue(data []byte) (ast.Value, error) {
	p := jsonParser{data: data}
	t, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if p.skipSpace(); p.pos != len(p.data) {
		return nil, p.fail("data after the value")
	}
	return t.Value, nil
}

// jsonMaxDepth bounds nesting, as encoding/json does (10,000 levels).
const jsonMaxDepth = 10000

var errJSONSyntax = errors.New("invalid JSON")

type jsonParser struct {
	data []byte
	pos  int
}

func (p *jsonParser) fail(what string) error { return p.failAt(p.pos, what) }

// failAt says where, as a person editing the file counts: line and column.
func (p *jsonParser) failAt(pos int, what string) error {
	return fmt.Errorf("%w at %s: %s", errJSONSyntax, datadoc.Position(p.data, pos), what)
}

func (p *jsonParser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// value reads one value as a term; strings, booleans and small integers
// come from OPA's interned terms, as ast.InterfaceToValue would give them.
func (p *jsonParser) value(depth int) (*ast.Term, error) {
	if depth >= jsonMaxDepth {
		return nil, p.fail("nested too deeply")
	}
	p.skipSpace()
	if p.pos >= len(p.data) {
		return nil, p.fail("unexpected end")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return ast.InternedTerm(s), nil
	case c == 't':
		return p.literal("true", ast.InternedTerm(true))
	case c == 'f':
		return p.literal("false", ast.InternedTerm(false))
	case c == 'n':
		return p.literal("null", ast.NullTerm())
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return nil, p.fail(fmt.Sprintf("unexpected %q", c))
	}
}

func (p *jsonParser) literal(word string, t *ast.Term) (*ast.Term, error) {
	if len(p.data)-p.pos < len(word) || string(p.data[p.pos:p.pos+len(word)]) != word {
		return nil, p.fail("invalid literal")
	}
	p.pos += len(word)
	return t, nil
}

func (p *jsonParser) object(depth int) (*ast.Term, error) {
	p.pos++ // {
	var kvs [][2]*ast.Term
	var index map[string]int // built only when a key repeats
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return ast.ObjectTerm(), nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.fail("expected a key")
		}
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.fail("expected ':'")
		}
		p.pos++
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		kv := [2]*ast.Term{ast.InternedTerm(key), v}
		if i, dup := p.seen(&index, kvs, key); dup {
			kvs[i] = kv // the last occurrence wins, as in encoding/json
		} else {
			kvs = append(kvs, kv)
		}
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.fail("unexpected end in an object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return ast.ObjectTerm(kvs...), nil
		default:
			return nil, p.fail("expected ',' or '}'")
		}
	}
}

// seen reports where key already is in kvs. Small objects are searched;
// the index is built once an object grows.
func (p *jsonParser) seen(index *map[string]int, kvs [][2]*ast.Term, key string) (int, bool) {
	if len(kvs) < 16 {
		for i, kv := range kvs {
			if string(kv[0].Value.(ast.String)) == key {
				return i, true
			}
		}
		return 0, false
	}
	if *index == nil {
		*index = make(map[string]int, len(kvs)*2)
		for i, kv := range kvs {
			(*index)[string(kv[0].Value.(ast.String))] = i
		}
	}
	i, ok := (*index)[key]
	if !ok {
		(*index)[key] = len(kvs)
	}
	return i, ok
}

func (p *jsonParser) array(depth int) (*ast.Term, error) {
	p.pos++ // [
	var terms []*ast.Term
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return ast.ArrayTerm(), nil
	}
	for {
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		terms = append(terms, v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.fail("unexpected end in an array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return ast.ArrayTerm(terms...), nil
		default:
			return nil, p.fail("expected ',' or ']'")
		}
	}
}

// str reads a string token. One without escapes is taken as it is, after
// a check that it is valid UTF-8 text without control characters; one
// with escapes is left to encoding/json, so both decode alike.
func (p *jsonParser) str() (string, error) {
	start := p.pos
	p.pos++ // opening quote
	escaped := false
	for p.pos < len(p.data) {
		switch c := p.data[p.pos]; {
		case c == '"':
			p.pos++
			raw := p.data[start:p.pos]
			if !escaped && jsonPlain(raw[1:len(raw)-1]) {
				return string(raw[1 : len(raw)-1]), nil
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return "", fmt.Errorf("%w: %w", p.failAt(start, "bad string"), err)
			}
			return s, nil
		case c == '\\':
			escaped = true
			p.pos += 2
		default:
			p.pos++
		}
	}
	return "", p.fail("unterminated string")
}

// jsonPlain reports whether b is ASCII text without control characters:
// such a string means exactly its bytes. Other bytes (UTF-8, which
// encoding/json checks and repairs) take the slow path.
func jsonPlain(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c >= 0x80 {
			return false
		}
	}
	return true
}

func (p *jsonParser) number() (*ast.Term, error) {
	start := p.pos
	for p.pos < len(p.data) {
		switch c := p.data[p.pos]; {
		case c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
			p.pos++
			continue
		}
		break
	}
	text := p.data[start:p.pos]
	if !json.Valid(text) {
		return nil, p.failAt(start, fmt.Sprintf("bad number %q", text))
	}
	if t := ast.InternedIntNumberTermFromString(string(text)); t != nil {
		return t, nil
	}
	v, err := ast.InterfaceToValue(json.Number(text))
	if err != nil {
		return nil, err
	}
	return ast.NewTerm(v), nil
}
