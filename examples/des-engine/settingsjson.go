package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// jsonObject is a JSON object that keeps its keys in the order it read
// them and its values as they were written, so that des can rewrite a
// user's settings file without reordering it or losing keys it does not
// know. Only the members des changes are decoded.
type jsonObject struct {
	members []jsonMember
}

type jsonMember struct {
	key string
	val json.RawMessage
}

// parseJSONObject reads one JSON object; anything else, or anything after
// it, is an error. Blank input is an empty object (an empty settings file).
func parseJSONObject(raw []byte) (*jsonObject, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return &jsonObject{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	o := &jsonObject{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("object key %v is not a string", tok)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		o.members = append(o.members, jsonMember{key, v})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the JSON object")
	}
	return o, nil
}

// index is the position of key's last occurrence (the one encoding/json,
// and so most readers, take), -1 when absent.
func (o *jsonObject) index(key string) int {
	for i := len(o.members) - 1; i >= 0; i-- {
		if o.members[i].key == key {
			return i
		}
	}
	return -1
}

func (o *jsonObject) get(key string) (json.RawMessage, bool) {
	if i := o.index(key); i >= 0 {
		return o.members[i].val, true
	}
	return nil, false
}

// set replaces key's value where it stands, or appends it.
func (o *jsonObject) set(key string, v json.RawMessage) {
	if i := o.index(key); i >= 0 {
		o.members[i].val = v
		return
	}
	o.members = append(o.members, jsonMember{key, v})
}

func (o *jsonObject) remove(key string) {
	kept := o.members[:0]
	for _, m := range o.members {
		if m.key != key {
			kept = append(kept, m)
		}
	}
	o.members = kept
}

// marshal writes the object compactly, in its order.
func (o *jsonObject) marshal() json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o.members {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(encodeJSON(m.key))
		b.WriteByte(':')
		b.Write(bytes.TrimSpace(m.val))
	}
	b.WriteByte('}')
	return b.Bytes()
}

// render is the object as a settings file: two-space indentation, as
// Claude Code writes its own, and a final newline.
func (o *jsonObject) render() ([]byte, error) {
	var out bytes.Buffer
	if err := json.Indent(&out, o.marshal(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// encodeJSON marshals v without HTML escaping: settings hold shell
// commands, where "&" and ">" read better as themselves.
func encodeJSON(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("encodeJSON(%T): %v", v, err)) // only des's own plain values come here
	}
	return bytes.TrimRight(b.Bytes(), "\n")
}

// sameJSON reports whether two JSON texts are the same value with the same
// key order, whitespace and escaping aside.
func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	ca, cb := encodeJSON(x), encodeJSON(y)
	return bytes.Equal(ca, cb) && keyOrder(a) == keyOrder(b)
}

// keyOrder lists an object's keys as written, for sameJSON: a des entry
// whose keys a user reordered is still rewritten once, then left alone.
func keyOrder(raw json.RawMessage) string {
	o, err := parseJSONObject(raw)
	if err != nil {
		return ""
	}
	var b bytes.Buffer
	for _, m := range o.members {
		b.WriteString(m.key)
		b.WriteByte(0)
		b.WriteString(keyOrder(m.val))
		b.WriteByte(1)
	}
	return b.String()
}

// isNull reports a JSON null (a key set to null counts as absent).
func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// getPath returns the value at a path of object keys; exists is false when
// any step is absent or null. A step that is not an object is an error.
func getPath(o *jsonObject, path ...string) (json.RawMessage, bool, error) {
	v, ok := o.get(path[0])
	if !ok || isNull(v) {
		return nil, false, nil
	}
	if len(path) == 1 {
		return v, true, nil
	}
	child, err := parseJSONObject(v)
	if err != nil {
		return nil, false, fmt.Errorf("%s is not a JSON object", path[0])
	}
	return getPath(child, path[1:]...)
}

// setPath sets the value at a path of object keys, making the objects
// missing on the way (appended after the keys already there).
func setPath(o *jsonObject, v json.RawMessage, path ...string) error {
	if len(path) == 1 {
		o.set(path[0], v)
		return nil
	}
	child := &jsonObject{}
	if raw, ok := o.get(path[0]); ok && !isNull(raw) {
		c, err := parseJSONObject(raw)
		if err != nil {
			return fmt.Errorf("%s is not a JSON object", path[0])
		}
		child = c
	}
	if err := setPath(child, v, path[1:]...); err != nil {
		return err
	}
	o.set(path[0], child.marshal())
	return nil
}

// removePath removes the value at a path; objects it leaves empty on the
// way are removed too (des made them, or they held only des's entries).
func removePath(o *jsonObject, path ...string) error {
	if len(path) == 1 {
		o.remove(path[0])
		return nil
	}
	raw, ok := o.get(path[0])
	if !ok || isNull(raw) {
		return nil
	}
	child, err := parseJSONObject(raw)
	if err != nil {
		return fmt.Errorf("%s is not a JSON object", path[0])
	}
	if err := removePath(child, path[1:]...); err != nil {
		return err
	}
	if len(child.members) == 0 {
		o.remove(path[0])
	} else {
		o.set(path[0], child.marshal())
	}
	return nil
}
