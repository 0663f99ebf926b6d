package statemachine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/deterministic-exec/des/internal/datadoc"
)

// Object is a JSON object that remembers its members in their original order
// and each value as it was written. DES rewrites documents it only partly
// understands (a step file carries many fields DES never reads), so an edit
// must leave every other member exactly where and as it was.
//
// Keys are compared exactly (case-sensitive). When a key is repeated, Get
// returns the last occurrence, as encoding/json (and so the policy input and
// the schema) would see it. The zero value is an empty object.
type Object struct {
	members []member
}

type member struct {
	rawKey []byte // the key as written, quotes, escapes and all
	value  json.RawMessage
}

// ErrNotObject is wrapped when a document, or a value on an edit path, is
// valid JSON but not an object.
var ErrNotObject = errors.New("not a JSON object")

// ParseObject parses data, which must be one JSON object (surrounding
// whitespace allowed). The member values are kept as written.
func ParseObject(data []byte) (*Object, error) {
	if !json.Valid(data) {
		// Decode names the syntax error and its line and column; Valid
		// does not.
		if _, err := datadoc.Decode(data); err != nil {
			return nil, fmt.Errorf("parse JSON object: %w", err)
		}
		return nil, errors.New("parse JSON object: invalid JSON")
	}
	data = trimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, fmt.Errorf("parse JSON object: %w (found %s)", ErrNotObject, kindOf(data))
	}
	// The members alias the text: copy it so the caller may reuse its buffer.
	return parseObjectTrusted(bytes.Clone(data)), nil
}

// parseObjectTrusted splits a valid JSON object (already checked by
// json.Valid) into members. It only finds where each token ends, so it is
// much cheaper than decoding.
func parseObjectTrusted(data []byte) *Object {
	o := &Object{}
	eachMember(data, func(rawKey []byte, value json.RawMessage) {
		o.members = append(o.members, member{rawKey: rawKey, value: value})
	})
	return o
}

// eachMember calls fn with each member of a valid JSON object, in order.
func eachMember(data []byte, fn func(rawKey []byte, value json.RawMessage)) {
	i := skipSpace(data, 0) + 1 // past '{'
	for {
		i = skipSpace(data, i)
		if data[i] == '}' {
			return
		}
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
		kEnd := scanString(data, i)
		rawKey := data[i:kEnd]
		i = skipSpace(data, kEnd) + 1 // past ':'
		i = skipSpace(data, i)
		vEnd := scanValue(data, i)
		fn(rawKey, data[i:vEnd])
		i = vEnd
	}
}

// rawGet returns the value of key (its last occurrence) in a valid JSON
// object without splitting out the other members.
func rawGet(data []byte, key string) (v json.RawMessage, ok bool) {
	eachMember(data, func(rawKey []byte, value json.RawMessage) {
		if keyIs(rawKey, key) {
			v, ok = value, true
		}
	})
	return v, ok
}

// parseArrayTrusted splits a valid JSON array into its elements.
func parseArrayTrusted(data []byte) []json.RawMessage {
	var out []json.RawMessage
	i := skipSpace(data, 0) + 1 // past '['
	for {
		i = skipSpace(data, i)
		if data[i] == ']' {
			return out
		}
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
		end := scanValue(data, i)
		out = append(out, data[i:end])
		i = end
	}
}

func decodeKey(raw []byte) string {
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner)
	}
	// Escapes or invalid UTF-8: decode as encoding/json does, so keys agree
	// with the generically decoded document.
	var s string
	_ = json.Unmarshal(raw, &s) // raw is a valid JSON string
	return s
}

// keyIs reports whether a raw key decodes to key, without allocating in the
// usual case of a plain key.
func keyIs(raw []byte, key string) bool {
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner) == key
	}
	return decodeKey(raw) == key
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(data []byte, i int) int {
	for i < len(data) && isSpace(data[i]) {
		i++
	}
	return i
}

func trimSpace(data []byte) []byte {
	return bytes.TrimFunc(data, func(r rune) bool { return r < utf8.RuneSelf && isSpace(byte(r)) })
}

// scanString returns the offset just past the string starting at data[i].
func scanString(data []byte, i int) int {
	j := i + 1
	for {
		k := bytes.IndexByte(data[j:], '"')
		if k < 0 {
			return len(data)
		}
		j += k
		// The quote closes the string unless an odd run of backslashes
		// escapes it. IndexByte finds quotes far faster than a byte loop.
		n := 0
		for b := j - 1; b > i && data[b] == '\\'; b-- {
			n++
		}
		if n%2 == 0 {
			return j + 1
		}
		j++
	}
}

// scanValue returns the offset just past the value starting at data[i].
func scanValue(data []byte, i int) int {
	switch data[i] {
	case '"':
		return scanString(data, i)
	case '{', '[':
		depth := 0
		for ; i < len(data); i++ {
			switch data[i] {
			case '"':
				i = scanString(data, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return len(data)
	default: // number, true, false, null
		for i < len(data) && !isSpace(data[i]) && data[i] != ',' && data[i] != '}' && data[i] != ']' {
			i++
		}
		return i
	}
}

// kindOf names the JSON type of a valid value, for messages.
func kindOf(v []byte) string {
	v = trimSpace(v)
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// isNull reports whether a raw value is absent or JSON null.
func isNull(v json.RawMessage) bool {
	v = trimSpace(v)
	return len(v) == 0 || v[0] == 'n'
}

func (o *Object) find(key string) int {
	for i := len(o.members) - 1; i >= 0; i-- {
		if keyIs(o.members[i].rawKey, key) {
			return i
		}
	}
	return -1
}

// Get returns the value of key as written, and whether the key is present.
func (o *Object) Get(key string) (json.RawMessage, bool) {
	if i := o.find(key); i >= 0 {
		return o.members[i].value, true
	}
	return nil, false
}

// Keys returns the keys in document order (a repeated key appears as often
// as it is written).
func (o *Object) Keys() []string {
	keys := make([]string, len(o.members))
	for i, m := range o.members {
		keys[i] = decodeKey(m.rawKey)
	}
	return keys
}

// Len returns the number of members.
func (o *Object) Len() int { return len(o.members) }

// Set replaces the value of key in place (its last occurrence) or appends
// key at the end. v is marshalled with encoding/json without HTML escaping;
// a json.RawMessage is used as is after a validity check, and an *Object
// nests.
func (o *Object) Set(key string, v any) error {
	raw, err := marshalValue(v)
	if err != nil {
		return fmt.Errorf("set %q: %w", key, err)
	}
	o.setRaw(key, raw)
	return nil
}

func (o *Object) setRaw(key string, raw json.RawMessage) {
	if i := o.find(key); i >= 0 {
		o.members[i].value = raw
		return
	}
	rawKey, _ := marshalValue(key) // a string always marshals
	o.members = append(o.members, member{rawKey: rawKey, value: raw})
}

// Delete removes every occurrence of key and reports whether there was one.
func (o *Object) Delete(key string) bool {
	n := len(o.members)
	o.members = deleteMembers(o.members, key)
	return len(o.members) != n
}

func deleteMembers(ms []member, key string) []member {
	out := ms[:0]
	for _, m := range ms {
		if !keyIs(m.rawKey, key) {
			out = append(out, m)
		}
	}
	return out
}

// GetPath returns the value at path, whose elements are object keys or, for
// arrays, decimal indexes (as in a JSON pointer). It reports false when any
// step is missing or has the wrong type.
func (o *Object) GetPath(path []string) (json.RawMessage, bool) {
	if len(path) == 0 {
		return o.appendJSON(nil), true
	}
	v, ok := o.Get(path[0])
	for _, p := range path[1:] {
		if !ok {
			return nil, false
		}
		v, ok = child(v, p)
	}
	return v, ok
}

// child returns the member or element p of the raw container v.
func child(v json.RawMessage, p string) (json.RawMessage, bool) {
	v = trimSpace(v)
	if len(v) == 0 {
		return nil, false
	}
	switch v[0] {
	case '{':
		return rawGet(v, p)
	case '[':
		i, err := strconv.Atoi(p)
		if err != nil || i < 0 {
			return nil, false
		}
		elems := parseArrayTrusted(v)
		if i >= len(elems) {
			return nil, false
		}
		return elems[i], true
	}
	return nil, false
}

// GetObject returns a copy of the object at path; false when it is absent,
// null or not an object. Edits to the copy reach o only through SetPath.
func (o *Object) GetObject(path []string) (*Object, bool) {
	v, ok := o.GetPath(path)
	if !ok {
		return nil, false
	}
	v = trimSpace(v)
	if len(v) == 0 || v[0] != '{' {
		return nil, false
	}
	return parseObjectTrusted(v), true
}

// SetPath sets the value at path (keys, or decimal indexes into arrays).
// Missing or null objects along the path are created; an index must exist;
// any other value in the way is an error and nothing changes.
func (o *Object) SetPath(path []string, v any) error {
	raw, err := marshalValue(v)
	if err != nil {
		return fmt.Errorf("set %s: %w", pointer(path), err)
	}
	return o.editPath(path, func(json.RawMessage) (json.RawMessage, error) { return raw, nil })
}

// AppendPath appends v to the array at path, creating the array (and any
// missing or null objects before it) when it is absent or null.
func (o *Object) AppendPath(path []string, v any) error {
	raw, err := marshalValue(v)
	if err != nil {
		return fmt.Errorf("append to %s: %w", pointer(path), err)
	}
	return o.editPath(path, func(old json.RawMessage) (json.RawMessage, error) {
		var elems []json.RawMessage
		switch t := trimSpace(old); {
		case isNull(t):
		case t[0] == '[':
			elems = parseArrayTrusted(t)
		default:
			return nil, fmt.Errorf("append to %s: want an array, found %s", pointer(path), kindOf(t))
		}
		return appendArray(nil, append(elems, raw)), nil
	})
}

// DeletePath removes the member at path; false when it was not there.
func (o *Object) DeletePath(path []string) bool {
	if len(path) == 0 {
		return false
	}
	if len(path) == 1 {
		return o.Delete(path[0])
	}
	parent, ok := o.GetObject(path[:len(path)-1])
	if !ok || !parent.Delete(path[len(path)-1]) {
		return false
	}
	return o.SetPath(path[:len(path)-1], parent) == nil
}

// editPath replaces the value at path with edit(old), where old is nil when
// the value is absent.
func (o *Object) editPath(path []string, edit func(old json.RawMessage) (json.RawMessage, error)) error {
	if len(path) == 0 {
		return errors.New("edit: empty path")
	}
	old, _ := o.Get(path[0])
	nv, err := editIn(old, path[1:], path[:1], edit)
	if err != nil {
		return err
	}
	o.setRaw(path[0], nv)
	return nil
}

func editIn(v json.RawMessage, rest, done []string, edit func(json.RawMessage) (json.RawMessage, error)) (json.RawMessage, error) {
	if len(rest) == 0 {
		return edit(v)
	}
	here := append(done[:len(done):len(done)], rest[0])
	t := trimSpace(v)
	switch {
	case isNull(t):
		obj := &Object{}
		nv, err := editIn(nil, rest[1:], here, edit)
		if err != nil {
			return nil, err
		}
		obj.setRaw(rest[0], nv)
		return obj.appendJSON(nil), nil
	case t[0] == '{':
		obj := parseObjectTrusted(t)
		old, _ := obj.Get(rest[0])
		nv, err := editIn(old, rest[1:], here, edit)
		if err != nil {
			return nil, err
		}
		obj.setRaw(rest[0], nv)
		return obj.appendJSON(nil), nil
	case t[0] == '[':
		elems := parseArrayTrusted(t)
		i, err := strconv.Atoi(rest[0])
		if err != nil || i < 0 || i >= len(elems) {
			return nil, fmt.Errorf("edit %s: no element %q in an array of %d", pointer(here), rest[0], len(elems))
		}
		nv, err := editIn(elems[i], rest[1:], here, edit)
		if err != nil {
			return nil, err
		}
		elems[i] = nv
		return appendArray(nil, elems), nil
	default:
		return nil, fmt.Errorf("edit %s: %w (found %s at %s)", pointer(here), ErrNotObject, kindOf(t), pointer(done))
	}
}

// pointer renders a path as a JSON pointer, for messages.
func pointer(path []string) string {
	var b bytes.Buffer
	for _, p := range path {
		b.WriteByte('/')
		for _, r := range p {
			switch r {
			case '~':
				b.WriteString("~0")
			case '/':
				b.WriteString("~1")
			default:
				b.WriteRune(r)
			}
		}
	}
	return b.String()
}

func marshalValue(v any) (json.RawMessage, error) {
	switch t := v.(type) {
	case json.RawMessage:
		if !json.Valid(t) {
			return nil, errors.New("invalid raw JSON value")
		}
		return t, nil
	case *Object:
		return t.appendJSON(nil), nil
	}
	// An Encoder, unlike Marshal, can leave <, > and & as they are: the
	// rewrite should not turn "a < b" in a note into "a \u003c b".
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func appendArray(dst []byte, elems []json.RawMessage) []byte {
	dst = append(dst, '[')
	for i, e := range elems {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, e...)
	}
	return append(dst, ']')
}

// appendJSON appends the object's JSON text: members as written, joined
// without added whitespace (values keep their own).
func (o *Object) appendJSON(dst []byte) []byte {
	dst = append(dst, '{')
	for i, m := range o.members {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, m.rawKey...)
		dst = append(dst, ':')
		dst = append(dst, m.value...)
	}
	return append(dst, '}')
}

// MarshalJSON returns the object's JSON text, so an Object can be nested in
// values given to Set or to encoding/json.
func (o *Object) MarshalJSON() ([]byte, error) { return o.appendJSON(nil), nil }

// Marshal returns the document indented with two spaces and ending with a
// newline, the layout of the step files DES and its users write. Strings,
// numbers and keys keep their original spelling; only whitespace between
// tokens changes.
func (o *Object) Marshal() ([]byte, error) {
	src := o.appendJSON(nil)
	var b bytes.Buffer
	b.Grow(len(src) + len(src)/2)
	if err := json.Indent(&b, src, "", "  "); err != nil {
		return nil, fmt.Errorf("marshal document: %w", err)
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}
