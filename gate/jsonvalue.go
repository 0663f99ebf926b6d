package gate

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/deterministic-exec/des/internal/datadoc"
	"github.com/deterministic-exec/des/internal/jsonlex"
)

// jsonValue parses one JSON document straight into the policy's value type.
// It is what ast.InterfaceToValue of the document decoded by encoding/json
// (with UseNumber) gives, without the generic Go value in between: Gate 3
// hands the policy hundreds of whole step files per commit, and the two
// conversions cost twice this one (measured in docs/performance.md). As
// with encoding/json, a repeated key keeps its last value.
func jsonValue(data []byte) (ast.Value, error) {
	p := jsonParser{lx: jsonlex.New(data)}
	t, err := p.value()
	if err == nil {
		err = p.lx.End()
	}
	if se, ok := err.(*jsonlex.Error); ok { // the lexer's errors come unwrapped
		// Where, as a person editing the file counts: line and column.
		return nil, fmt.Errorf("%w at %s: %s", errJSONSyntax, datadoc.Position(data, se.Offset), se.Msg)
	}
	if err != nil {
		return nil, err
	}
	return t.Value, nil
}

var errJSONSyntax = errors.New("invalid JSON")

type jsonParser struct{ lx jsonlex.Lexer }

// value reads one value as a term; strings, booleans and small integers
// come from OPA's interned terms, as ast.InterfaceToValue would give them.
func (p *jsonParser) value() (*ast.Term, error) {
	k, err := p.lx.Peek()
	if err != nil {
		return nil, err
	}
	switch k {
	case jsonlex.Object:
		return p.object()
	case jsonlex.Array:
		return p.array()
	case jsonlex.String:
		s, err := p.lx.Str()
		if err != nil {
			return nil, err
		}
		return ast.InternedTerm(s), nil
	case jsonlex.Number:
		return p.number()
	}
	if err := p.lx.Literal(k); err != nil {
		return nil, err
	}
	switch k {
	case jsonlex.True:
		return ast.InternedTerm(true), nil
	case jsonlex.False:
		return ast.InternedTerm(false), nil
	}
	return ast.NullTerm(), nil
}

func (p *jsonParser) object() (*ast.Term, error) {
	empty, err := p.lx.Open()
	if err != nil {
		return nil, err
	}
	if empty {
		return ast.ObjectTerm(), nil
	}
	var kvs [][2]*ast.Term
	var index map[string]int // built only when a key repeats
	for {
		key, err := p.lx.Key()
		if err != nil {
			return nil, err
		}
		if err := p.lx.Colon(); err != nil {
			return nil, err
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		kv := [2]*ast.Term{ast.InternedTerm(key), v}
		if i, dup := p.seen(&index, kvs, key); dup {
			kvs[i] = kv // the last occurrence wins, as in encoding/json
		} else {
			kvs = append(kvs, kv)
		}
		more, err := p.lx.More('}')
		if err != nil {
			return nil, err
		}
		if !more {
			return ast.ObjectTerm(kvs...), nil
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

func (p *jsonParser) array() (*ast.Term, error) {
	empty, err := p.lx.Open()
	if err != nil {
		return nil, err
	}
	if empty {
		return ast.ArrayTerm(), nil
	}
	var terms []*ast.Term
	for {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		terms = append(terms, v)
		more, err := p.lx.More(']')
		if err != nil {
			return nil, err
		}
		if !more {
			return ast.ArrayTerm(terms...), nil
		}
	}
}

func (p *jsonParser) number() (*ast.Term, error) {
	text, err := p.lx.Number()
	if err != nil {
		return nil, err
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
