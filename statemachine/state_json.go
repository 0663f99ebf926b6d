package statemachine

import (
	"bytes"
	"errors"
)

// A workflow state is parsed on every guarded write, twice (the disk and
// the incoming document), and is mostly long strings: summaries, notes,
// reports. encoding/json's validator, which ParseObject uses, steps through
// a state machine byte by byte, and ParseObject then splits the members in
// another pass, which the facts would walk again at each level. Here one
// validation with fast paths for strings is followed by one walk that
// splits the members and extracts the facts, skipping strings with a
// vectorised search for their closing quote. FuzzValidJSON holds validJSON
// to json.Valid's verdict, and FuzzParseStateDoc parseStateDoc to
// ParseObject and stateFacts.

// parseStateDoc is ParseObject (same object, same errors), faster, and
// computes the facts (stateFacts) in the same pass.
func parseStateDoc(data []byte) (*Object, map[string]any, error) {
	t := trimSpace(data)
	if len(t) == 0 || t[0] != '{' || !validJSON(t) {
		_, err := ParseObject(data) // it names what is wrong
		if err == nil {
			err = errors.New("internal error: validJSON rejected a valid JSON object")
		}
		return nil, nil, err
	}
	// The members alias the text: copy it so the caller may reuse its buffer.
	t = bytes.Clone(t)
	o := &Object{}
	facts := make(map[string]any, len(stateFactFields))
	walkObject(t, 0, func(rawKey []byte, i int) int {
		end := putFact(facts, stateFactFields, rawKey, t, i)
		o.members = append(o.members, member{rawKey: rawKey, value: t[i:end]})
		return end
	})
	return o, facts, nil
}

// maxJSONDepth is encoding/json's nesting limit: json.Valid rejects deeper
// documents, and so does validJSON.
const maxJSONDepth = 10000

// jsonStringStop marks the bytes that end the fast scan of a string: the
// closing quote, a backslash, and the control characters JSON forbids in
// strings.
var jsonStringStop = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// validJSON reports whether data is exactly one JSON value, surrounded by
// optional whitespace: json.Valid's verdict. Like json.Valid, it does not
// check that strings are valid UTF-8.
func validJSON(data []byte) bool {
	var stack []byte // the open containers, '{' or '['
	i := skipSpace(data, 0)
	for {
		// A value starts at i.
		if i >= len(data) {
			return false
		}
		var ok bool
		switch c := data[i]; {
		case c == '{' || c == '[':
			if len(stack) == maxJSONDepth {
				return false
			}
			stack = append(stack, c)
			i = skipSpace(data, i+1)
			if i < len(data) && data[i] == c+2 { // '{'+2 == '}', '['+2 == ']'
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if c == '{' {
				if i, ok = validMemberKey(data, i); !ok {
					return false
				}
			}
			continue // the first member's value or the first element
		case c == '"':
			if i, ok = validString(data, i); !ok {
				return false
			}
		case c == '-' || (c >= '0' && c <= '9'):
			if i, ok = validNumber(data, i); !ok {
				return false
			}
		case c == 't':
			if !bytes.HasPrefix(data[i:], []byte("true")) {
				return false
			}
			i += 4
		case c == 'f':
			if !bytes.HasPrefix(data[i:], []byte("false")) {
				return false
			}
			i += 5
		case c == 'n':
			if !bytes.HasPrefix(data[i:], []byte("null")) {
				return false
			}
			i += 4
		default:
			return false
		}
		// A value ended at i: close containers until the next value.
		for {
			i = skipSpace(data, i)
			if len(stack) == 0 {
				return i == len(data)
			}
			if i >= len(data) {
				return false
			}
			top := stack[len(stack)-1]
			if data[i] == top+2 {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if data[i] != ',' {
				return false
			}
			i = skipSpace(data, i+1)
			if top == '{' {
				if i, ok = validMemberKey(data, i); !ok {
					return false
				}
			}
			break
		}
	}
}

// validMemberKey checks `"key" :` at i and returns the offset of the value.
func validMemberKey(data []byte, i int) (int, bool) {
	if i >= len(data) || data[i] != '"' {
		return 0, false
	}
	i, ok := validString(data, i)
	if !ok {
		return 0, false
	}
	i = skipSpace(data, i)
	if i >= len(data) || data[i] != ':' {
		return 0, false
	}
	return skipSpace(data, i+1), true
}

// validString checks the string starting at data[i] and returns the offset
// just past it.
func validString(data []byte, i int) (int, bool) {
	for i++; i < len(data); i++ {
		c := data[i]
		if !jsonStringStop[c] {
			continue
		}
		switch c {
		case '"':
			return i + 1, true
		case '\\':
			i++
			if i >= len(data) {
				return 0, false
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(data) {
					return 0, false
				}
				for _, h := range data[i+1 : i+5] {
					if !isHex(h) {
						return 0, false
					}
				}
				i += 4
			default:
				return 0, false
			}
		default: // a control character
			return 0, false
		}
	}
	return 0, false
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// validNumber checks the number starting at data[i] and returns the offset
// just past it; what follows is for the caller to judge.
func validNumber(data []byte, i int) (int, bool) {
	if data[i] == '-' {
		i++
	}
	switch {
	case i >= len(data):
		return 0, false
	case data[i] == '0':
		i++
	case data[i] >= '1' && data[i] <= '9':
		i = skipDigits(data, i)
	default:
		return 0, false
	}
	if i < len(data) && data[i] == '.' {
		j := skipDigits(data, i+1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := skipDigits(data, i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

func skipDigits(data []byte, i int) int {
	for i < len(data) && data[i] >= '0' && data[i] <= '9' {
		i++
	}
	return i
}

// walkObject walks the members of the valid JSON object starting at
// data[i]: fn gets each member's key, as written, and the offset of its
// value, and returns the offset just past the value. walkObject returns the
// offset just past the object.
func walkObject(data []byte, i int, fn func(rawKey []byte, value int) (end int)) int {
	i = skipSpace(data, i+1) // past '{'
	for {
		switch data[i] {
		case '}':
			return i + 1
		case ',':
			i = skipSpace(data, i+1)
		}
		kStart, kEnd := i, scanString(data, i)
		i = skipSpace(data, kEnd) + 1 // past ':'
		i = skipSpace(data, fn(data[kStart:kEnd], skipSpace(data, i)))
	}
}
