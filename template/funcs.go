package template

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"text/template"
)

// funcs returns the template functions documented on Set. It builds a fresh
// map each time so that no caller can change another's functions.
func funcs() template.FuncMap {
	return template.FuncMap{
		"get":     get,
		"default": firstNonEmpty,
		"list":    list,
		"join":    join,
		"json":    toJSON,
		"phases":  phaseNames,
	}
}

// phaseNames returns the 14 canonical TDD phases in order.
func phaseNames() []string {
	return []string{
		"PREPARE", "RED_ACCEPTANCE", "RED_UNIT", "GREEN_UNIT", "CHECK_ACCEPTANCE",
		"GREEN_ACCEPTANCE", "REVIEW", "REFACTOR_L1", "REFACTOR_L2", "REFACTOR_L3",
		"REFACTOR_L4", "POST_REFACTOR_REVIEW", "FINAL_VALIDATE", "COMMIT",
	}
}

// get walks v by map keys (strings) and list indexes (ints). Missing, null or
// mistyped steps give "", so templates can chain lookups on partial files.
func get(v any, keys ...any) any {
	for _, k := range keys {
		switch c := v.(type) {
		case map[string]any:
			s, ok := k.(string)
			if !ok {
				return ""
			}
			v = c[s]
		case []any:
			i, ok := k.(int)
			if !ok || i < 0 || i >= len(c) {
				return ""
			}
			v = c[i]
		default:
			return ""
		}
	}
	if v == nil {
		return ""
	}
	return v
}

func empty(v any) bool {
	switch c := v.(type) {
	case nil:
		return true
	case string:
		return c == ""
	case []any:
		return len(c) == 0
	case []string:
		return len(c) == 0
	case map[string]any:
		return len(c) == 0
	}
	return false
}

// firstNonEmpty is "default". In a pipeline the piped value comes last, so
// prefer the call form: default (get .Step "x") "fallback".
func firstNonEmpty(vals ...any) any {
	for _, v := range vals {
		if !empty(v) {
			return v
		}
	}
	return ""
}

func list(v any) []any {
	switch c := v.(type) {
	case []any:
		return c
	case []string:
		out := make([]any, len(c))
		for i, s := range c {
			out[i] = s
		}
		return out
	}
	if empty(v) {
		return nil
	}
	return []any{v}
}

func join(sep string, v any) string {
	var parts []string
	for _, e := range list(v) {
		parts = append(parts, fmt.Sprint(e))
	}
	return strings.Join(parts, sep)
}

func toJSON(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the data is already neutralized; keep "<", "&" readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// maxDepth bounds the copy, so a self-referencing map is an error, not a hang.
const maxDepth = 1000

// neutralizeData deep-copies d, passing every string through Neutralize.
func neutralizeData(d Data) (Data, error) {
	out := Data{StepFile: Neutralize(d.StepFile)}
	for _, f := range []struct {
		name     string
		src, dst *map[string]any
	}{{"Step", &d.Step, &out.Step}, {"Agent", &d.Agent, &out.Agent}, {"Extra", &d.Extra, &out.Extra}} {
		if *f.src == nil {
			continue
		}
		v, err := neutralize(*f.src, f.name, 0)
		if err != nil {
			return Data{}, err
		}
		*f.dst = v.(map[string]any)
	}
	return out, nil
}

func neutralize(v any, at string, depth int) (any, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%s: nested deeper than %d levels", at, maxDepth)
	}
	switch c := v.(type) {
	case nil, bool, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return v, nil
	case string:
		return Neutralize(c), nil
	case json.Number:
		return json.Number(Neutralize(string(c))), nil
	case map[string]any:
		m := make(map[string]any, len(c))
		for k, e := range c {
			n, err := neutralize(e, at+"."+k, depth+1)
			if err != nil {
				return nil, err
			}
			m[Neutralize(k)] = n
		}
		return m, nil
	case []any:
		l := make([]any, len(c))
		for i, e := range c {
			n, err := neutralize(e, fmt.Sprintf("%s[%d]", at, i), depth+1)
			if err != nil {
				return nil, err
			}
			l[i] = n
		}
		return l, nil
	}
	rv := reflect.ValueOf(v)
	if (rv.Kind() == reflect.Pointer || rv.Kind() == reflect.Interface) && rv.IsNil() {
		return nil, nil
	}
	// A template prints these through their methods, so the method's text is
	// what must be neutralized.
	if s, ok := v.(fmt.Stringer); ok {
		return Neutralize(s.String()), nil
	}
	if e, ok := v.(error); ok {
		return Neutralize(e.Error()), nil
	}
	switch rv.Kind() {
	case reflect.String:
		return Neutralize(rv.String()), nil
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return v, nil
	case reflect.Pointer:
		return neutralize(rv.Elem().Interface(), at, depth+1)
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return nil, nil
		}
		l := make([]any, rv.Len())
		for i := range l {
			n, err := neutralize(rv.Index(i).Interface(), fmt.Sprintf("%s[%d]", at, i), depth+1)
			if err != nil {
				return nil, err
			}
			l[i] = n
		}
		return l, nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			break
		}
		m := make(map[string]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			k := it.Key().String()
			n, err := neutralize(it.Value().Interface(), at+"."+k, depth+1)
			if err != nil {
				return nil, err
			}
			m[Neutralize(k)] = n
		}
		return m, nil
	}
	return nil, fmt.Errorf("%s: unsupported value of type %T (use maps with string keys, lists, strings, numbers, booleans)", at, v)
}
