package decisionlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Document returns v as a JSON document of its own, so that masking it
// never touches the caller's value: objects (map[string]any) and arrays
// ([]any, []string) are copied, scalars kept, and any other value (a
// struct, a typed map) goes through encoding/json, as the policy engine
// would read it.
func Document(v any) (*any, error) {
	d, err := copyDoc(v)
	if err != nil {
		return nil, err
	}
	return &d, nil
}

func copyDoc(v any) (any, error) {
	switch x := v.(type) {
	case nil, string, bool, float64, int, int64, json.Number:
		return x, nil
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			c, err := copyDoc(e)
			if err != nil {
				return nil, err
			}
			m[k] = c
		}
		return m, nil
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			c, err := copyDoc(e)
			if err != nil {
				return nil, err
			}
			a[i] = c
		}
		return a, nil
	case []string:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = e
		}
		return a, nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var doc any
	if err := decodeNumbers(raw, &doc); err != nil {
		return nil, err
	}
	return doc, nil
}

// decodeNumbers decodes one JSON value into v, numbers kept as json.Number:
// an event read back, masked and written again keeps its numbers exact.
func decodeNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

// Mask erases from ev the values at pointers, as OPA's decision-log mask
// rules with the "remove" operation do: each pointer starts with /input or
// /result, its segments are object keys (URL-escaped when they hold a "/")
// or array indexes, and one that leads to a value appends the pointer to
// ev.Erased; one that leads nowhere is ignored. A bare /input or /result
// erases the whole document.
func Mask(ev *Event, pointers []string) {
	for _, p := range pointers {
		if erase(ev, p) {
			ev.Erased = append(ev.Erased, p)
		}
	}
}

// Segments splits a mask pointer into its keys, each URL-unescaped; ok is
// false when one does not unescape (it is then left as written), and the
// mask erases nothing at such a pointer.
func Segments(pointer string) (parts []string, ok bool) {
	parts = strings.Split(strings.TrimPrefix(pointer, "/"), "/")
	ok = true
	for i, p := range parts {
		s, err := url.PathUnescape(p)
		if err != nil {
			ok = false
			continue
		}
		parts[i] = s
	}
	return parts, ok
}

func erase(ev *Event, pointer string) bool {
	if !strings.HasPrefix(pointer, "/") {
		return false
	}
	parts, ok := Segments(pointer)
	if !ok {
		return false
	}
	var doc **any
	switch parts[0] {
	case "input":
		doc = &ev.Input
	case "result":
		doc = &ev.Result
	default:
		return false
	}
	if *doc == nil {
		return false
	}
	if len(parts) == 1 {
		*doc = nil
		return true
	}
	return remove(*doc, parts[1:])
}

// remove deletes the value at path below *node, shortening an array that
// holds it.
func remove(node *any, path []string) bool {
	key := path[0]
	switch v := (*node).(type) {
	case map[string]any:
		child, ok := v[key]
		if !ok {
			return false
		}
		if len(path) == 1 {
			delete(v, key)
			return true
		}
		ok = remove(&child, path[1:])
		v[key] = child
		return ok
	case []any:
		i, err := strconv.Atoi(key)
		if err != nil || i < 0 || i >= len(v) || strconv.Itoa(i) != key {
			return false
		}
		if len(path) == 1 {
			*node = slices.Delete(v, i, i+1)
			return true
		}
		return remove(&v[i], path[1:])
	}
	return false
}

// encode is ev as one JSON line (with its newline) of at most limit bytes:
// an event over the limit loses its input, then its result, and says so in
// Erased ("/input", "/result"), as OPA does with events over its upload
// limit. An event over the limit without either is kept whole: what is left
// (labels, ids, metrics) is des's own and small.
func encode(ev Event, limit int) ([]byte, error) {
	for {
		line, err := json.Marshal(ev)
		if err != nil {
			return nil, fmt.Errorf("decision %s: %w", ev.DecisionID, err)
		}
		line = append(line, '\n')
		switch {
		case len(line) <= limit:
			return line, nil
		case ev.Input != nil:
			ev.Input = nil
			ev.Erased = append(slices.Clone(ev.Erased), "/input")
		case ev.Result != nil:
			ev.Result = nil
			ev.Erased = append(slices.Clone(ev.Erased), "/result")
		default:
			return line, nil
		}
	}
}
