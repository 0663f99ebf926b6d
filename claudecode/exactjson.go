package claudecode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Claude Code reads its tool input with JavaScript's JSON.parse: keys match
// exactly, and of two members with the same key the last wins. Go's
// encoding/json matches a struct field's key case-insensitively as well, so
// {"file_path":".des/config.json","FILE_PATH":"a.txt"} would be judged as a
// write to a.txt while Claude Code writes .des/config.json. Every object DES
// decides on is therefore decoded by decodeExact: members are matched to
// struct fields by their exact json tag, duplicates resolved last-wins.

// fieldTypeError is a member whose JSON type does not fit its field.
type fieldTypeError struct {
	Field string // the key, dotted below the decoded object
	Err   error
}

func (e *fieldTypeError) Error() string { return fmt.Sprintf("field %q: %v", e.Field, e.Err) }
func (e *fieldTypeError) Unwrap() error { return e.Err }

// decodeExact decodes the JSON object raw into the struct v points to,
// matching keys exactly. Structs nested in fields, slices and pointers are
// decoded the same way; other values (strings, numbers, json.RawMessage)
// by encoding/json. Members with no field are ignored. With lenient, a
// member of the wrong type is left zero and reported in the returned list
// instead of failing the whole object; otherwise it is the error.
func decodeExact(raw []byte, v any, lenient bool) ([]*fieldTypeError, error) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return nil, fmt.Errorf("decodeExact: %T is not a non-nil pointer", v)
	}
	var mistyped []*fieldTypeError
	err := decodeValueExact(raw, rv.Elem(), "", lenient, &mistyped)
	return mistyped, err
}

func decodeValueExact(raw []byte, dst reflect.Value, path string, lenient bool, mistyped *[]*fieldTypeError) error {
	raw = bytes.TrimSpace(raw)
	switch dst.Kind() {
	case reflect.Struct:
		if bytes.Equal(raw, []byte("null")) {
			return nil
		}
		// A map keeps keys exactly, and a later duplicate replaces an
		// earlier one, as JSON.parse does.
		var members map[string]json.RawMessage
		if err := json.Unmarshal(raw, &members); err != nil {
			return &fieldTypeError{Field: strings.TrimPrefix(path, "."), Err: err}
		}
		t := dst.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" || !f.IsExported() {
				continue
			}
			val, ok := members[name]
			if !ok {
				continue
			}
			if err := decodeValueExact(val, dst.Field(i), path+"."+name, lenient, mistyped); err != nil {
				var fe *fieldTypeError
				if !lenient || !asFieldTypeError(err, &fe) {
					return err
				}
				dst.Field(i).SetZero()
				*mistyped = append(*mistyped, fe)
			}
		}
		return nil
	case reflect.Slice:
		if dst.Type().Elem().Kind() != reflect.Struct {
			break
		}
		if bytes.Equal(raw, []byte("null")) {
			dst.SetZero()
			return nil
		}
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil {
			return &fieldTypeError{Field: strings.TrimPrefix(path, "."), Err: err}
		}
		out := reflect.MakeSlice(dst.Type(), len(elems), len(elems))
		for i, e := range elems {
			// An element of the wrong type fails the whole list: a list
			// with a hole is not what Claude Code would act on.
			if err := decodeValueExact(e, out.Index(i), fmt.Sprintf("%s[%d]", path, i), false, mistyped); err != nil {
				return err
			}
		}
		dst.Set(out)
		return nil
	case reflect.Pointer:
		if dst.Type().Elem().Kind() != reflect.Struct {
			break
		}
		if bytes.Equal(raw, []byte("null")) {
			dst.SetZero()
			return nil
		}
		p := reflect.New(dst.Type().Elem())
		if err := decodeValueExact(raw, p.Elem(), path, lenient, mistyped); err != nil {
			return err
		}
		dst.Set(p)
		return nil
	}
	if err := json.Unmarshal(raw, dst.Addr().Interface()); err != nil {
		return &fieldTypeError{Field: strings.TrimPrefix(path, "."), Err: err}
	}
	return nil
}

func asFieldTypeError(err error, target **fieldTypeError) bool {
	fe, ok := err.(*fieldTypeError)
	if ok {
		*target = fe
	}
	return ok
}
