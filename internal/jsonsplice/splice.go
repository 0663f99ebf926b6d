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
	key      string
	keyStart int // the opening quote of the key
	val      *Span
}

// scanSpans indexes a document known to be valid JSON.
func Scan(data []byte) (*Span, error) {
	s := &scanner{data: data}
	v, err := s.value()
	if err != nil {
		return nil, err
	}
	return v, nil
}

type scanner struct {
	data []byte
	pos  int
}

var errScan = errors.New("malformed JSON")

func (s *scanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// next reads what follows a member or an element: a comma (more follow)
// or the closing bracket (the container ends; pos moves past it).
func (s *scanner) next(closing byte) (more bool, err error) {
	s.ws()
	if s.pos >= len(s.data) {
		return false, errScan
	}
	switch s.data[s.pos] {
	case ',':
		s.pos++
		return true, nil
	case closing:
		s.pos++
		return false, nil
	}
	return false, errScan
}

func (s *scanner) value() (*Span, error) {
	s.ws()
	if s.pos >= len(s.data) {
		return nil, errScan
	}
	start := s.pos
	switch s.data[s.pos] {
	case '{':
		sp := &Span{start: start, object: true}
		s.pos++
		s.ws()
		if s.pos < len(s.data) && s.data[s.pos] == '}' {
			s.pos++
			sp.end = s.pos
			return sp, nil
		}
		for {
			s.ws()
			ks := s.pos
			if err := s.str(); err != nil {
				return nil, err
			}
			var key string
			if err := json.Unmarshal(s.data[ks:s.pos], &key); err != nil {
				return nil, errScan
			}
			s.ws()
			if s.pos >= len(s.data) || s.data[s.pos] != ':' {
				return nil, errScan
			}
			s.pos++
			v, err := s.value()
			if err != nil {
				return nil, err
			}
			sp.members = append(sp.members, member{key: key, keyStart: ks, val: v})
			more, err := s.next('}')
			if err != nil {
				return nil, err
			}
			if !more {
				sp.end = s.pos
				return sp, nil
			}
		}
	case '[':
		sp := &Span{start: start}
		s.pos++
		s.ws()
		if s.pos < len(s.data) && s.data[s.pos] == ']' {
			s.pos++
			sp.end = s.pos
			return sp, nil
		}
		for {
			v, err := s.value()
			if err != nil {
				return nil, err
			}
			sp.Elems = append(sp.Elems, v)
			more, err := s.next(']')
			if err != nil {
				return nil, err
			}
			if !more {
				sp.end = s.pos
				return sp, nil
			}
		}
	case '"':
		if err := s.str(); err != nil {
			return nil, err
		}
	default:
		// A number or a literal runs to the next delimiter.
		for s.pos < len(s.data) {
			c := s.data[s.pos]
			if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				break
			}
			s.pos++
		}
	}
	return &Span{start: start, end: s.pos}, nil
}

func (s *scanner) str() error {
	if s.pos >= len(s.data) || s.data[s.pos] != '"' {
		return errScan
	}
	for s.pos++; s.pos < len(s.data); s.pos++ {
		switch s.data[s.pos] {
		case '\\':
			s.pos++
		case '"':
			s.pos++
			return nil
		}
	}
	return errScan
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
	colon := string(data[first.keyStart+len(quoteKey(data, first.keyStart)) : first.val.start]) // e.g. ": "
	return Edit{last.val.end, last.val.end, "," + indent + string(k) + colon + val}
}

// quoteKey returns the bytes of the quoted key starting at i.
func quoteKey(data []byte, i int) []byte {
	s := &scanner{data: data, pos: i}
	if s.str() != nil {
		return data[i:i]
	}
	return data[i:s.pos]
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
