// Package jsonsplice edits a JSON document in place: des rewrites a task
// graph or a workflow state by splicing the few values it changes into the
// bytes on disk, so that everything else a team wrote (unknown fields, key
// order, formatting, number spellings) survives exactly.
package jsonsplice

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/deterministic-exec/des/internal/jsonlex"
)

// Span is a JSON value in the source: data[start:end]. An object's members
// are listed in order; an array's elements likewise.
type Span struct {
	start, end int
	members    []member // objects
	Elems      []*Span  // arrays
	object     bool
}

type member struct {
	key              string
	keyStart, keyEnd int // the key's quotes: data[keyStart:keyEnd] is "key"
	val              *Span
}

// Scan indexes a document, which must be valid JSON (what encoding/json
// reads); an error says where it is not.
func Scan(data []byte) (*Span, error) {
	lx := jsonlex.New(data)
	v, err := value(&lx)
	if err == nil {
		err = lx.End()
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errScan, err)
	}
	return v, nil
}

var errScan = errors.New("malformed JSON")

func value(lx *jsonlex.Lexer) (*Span, error) {
	k, err := lx.Peek()
	if err != nil {
		return nil, err
	}
	sp := &Span{start: lx.Pos()}
	switch k {
	case jsonlex.Object:
		sp.object = true
		err = members(lx, sp)
	case jsonlex.Array:
		err = elems(lx, sp)
	case jsonlex.String:
		_, err = lx.Str()
	case jsonlex.Number:
		_, err = lx.Number()
	default:
		err = lx.Literal(k)
	}
	if err != nil {
		return nil, err
	}
	sp.end = lx.Pos()
	return sp, nil
}

func members(lx *jsonlex.Lexer, sp *Span) error {
	empty, err := lx.Open()
	if err != nil || empty {
		return err
	}
	for {
		lx.SkipSpace()
		m := member{keyStart: lx.Pos()}
		if m.key, err = lx.Key(); err != nil {
			return err
		}
		m.keyEnd = lx.Pos()
		if err := lx.Colon(); err != nil {
			return err
		}
		if m.val, err = value(lx); err != nil {
			return err
		}
		sp.members = append(sp.members, m)
		if more, err := lx.More('}'); err != nil || !more {
			return err
		}
	}
}

func elems(lx *jsonlex.Lexer, sp *Span) error {
	empty, err := lx.Open()
	if err != nil || empty {
		return err
	}
	for {
		v, err := value(lx)
		if err != nil {
			return err
		}
		sp.Elems = append(sp.Elems, v)
		if more, err := lx.More(']'); err != nil || !more {
			return err
		}
	}
}

// get returns the value of key in an object Span: the last member of that
// name, as encoding/json reads duplicates.
func (sp *Span) Get(key string) *Span {
	for i := len(sp.members) - 1; i >= 0; i-- {
		if sp.members[i].key == key {
			return sp.members[i].val
		}
	}
	return nil
}

// Edit replaces data[start:end] with text.
type Edit struct {
	start, end int
	text       string
}

// Set is the Edit that makes key of object sp hold the JSON text val:
// the value replaced in place when the key is present (null included),
// else a member appended after the last one, in the layout of the first.
func Set(data []byte, sp *Span, key, val string) Edit {
	if v := sp.Get(key); v != nil {
		return Edit{v.start, v.end, val}
	}
	k, _ := json.Marshal(key)
	if len(sp.members) == 0 {
		return Edit{sp.start + 1, sp.start + 1, string(k) + ": " + val}
	}
	first, last := sp.members[0], sp.members[len(sp.members)-1]
	indent := string(data[sp.start+1 : first.keyStart]) // e.g. "\n    "
	if indent == "" {
		indent = " "
	}
	colon := string(data[first.keyEnd:first.val.start]) // e.g. ": "
	return Edit{last.val.end, last.val.end, "," + indent + string(k) + colon + val}
}

// apply makes the edits, which must not overlap.
func Apply(data []byte, edits []Edit) ([]byte, error) {
	slices.SortStableFunc(edits, func(a, b Edit) int { return a.start - b.start })
	out := make([]byte, 0, len(data)+64)
	pos := 0
	for _, e := range edits {
		if e.start < pos {
			return nil, fmt.Errorf("overlapping edits at offset %d", e.start)
		}
		out = append(out, data[pos:e.start]...)
		out = append(out, e.text...)
		pos = e.end
	}
	return append(out, data[pos:]...), nil
}

// SetPath makes the member at path (object keys from the document's top)
// hold the JSON text val, creating the objects on the way that are missing.
// A value on the way that is not an object is an error: des does not
// replace what it did not write.
func SetPath(data []byte, path []string, val string) ([]byte, error) {
	if len(path) == 0 {
		return nil, errors.New("empty path")
	}
	sp, err := Scan(data)
	if err != nil {
		return nil, err
	}
	for i, key := range path {
		if !sp.object {
			return nil, fmt.Errorf("%s is not an object", pointer(path[:i]))
		}
		next := sp.Get(key)
		if i == len(path)-1 || next == nil {
			text := val
			for j := len(path) - 1; j > i; j-- {
				k, _ := json.Marshal(path[j])
				text = "{" + string(k) + ": " + text + "}"
			}
			return Apply(data, []Edit{Set(data, sp, key, text)})
		}
		sp = next
	}
	return data, nil
}

// pointer is path as a JSON pointer, for messages.
func pointer(path []string) string {
	out := ""
	for _, p := range path {
		out += "/" + p
	}
	if out == "" {
		return "the document"
	}
	return out
}
