package gate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// jsonDifference says where the JSON document now differs from allowed, as
// values: "" when they are the same value, whatever the formatting, key
// order or number spelling (1.0 and 1, 1e2 and 100). Otherwise it names the
// first difference by JSON pointer, with both sides, or says that now is
// not JSON.
func jsonDifference(allowed, now []byte) string {
	a, err := decodeJSON(allowed)
	if err != nil {
		return "what was allowed is not JSON"
	}
	b, err := decodeJSON(now)
	if err != nil {
		return "it is no longer JSON: " + err.Error()
	}
	return valueDifference("", a, b)
}

func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("data after the value")
	}
	return v, nil
}

func valueDifference(at string, a, b any) string {
	differ := func() string {
		ptr := at
		if ptr == "" {
			ptr = "/"
		}
		return fmt.Sprintf("at %s the write allowed %s, the file holds %s", ptr, short(a), short(b))
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return differ()
		}
		keys := make([]string, 0, len(x)+len(y))
		for k := range x {
			keys = append(keys, k)
		}
		for k := range y {
			if _, ok := x[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := at + "/" + strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
			xv, inX := x[k]
			yv, inY := y[k]
			switch {
			case !inY:
				return fmt.Sprintf("at %s the write allowed %s, the file has no such member", p, short(xv))
			case !inX:
				return fmt.Sprintf("at %s the file holds %s, which the write did not have", p, short(yv))
			}
			if d := valueDifference(p, xv, yv); d != "" {
				return d
			}
		}
		return ""
	case []any:
		y, ok := b.([]any)
		if !ok {
			return differ()
		}
		for i := range min(len(x), len(y)) {
			if d := valueDifference(at+"/"+strconv.Itoa(i), x[i], y[i]); d != "" {
				return d
			}
		}
		if len(x) != len(y) {
			return fmt.Sprintf("at %s the write allowed %d elements, the file holds %d", nonEmpty(at), len(x), len(y))
		}
		return ""
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return differ()
		}
		if x == y {
			return ""
		}
		rx, okx := new(big.Rat).SetString(string(x))
		ry, oky := new(big.Rat).SetString(string(y))
		if okx && oky && rx.Cmp(ry) == 0 {
			return ""
		}
		return differ()
	default: // string, bool, nil
		if a != b {
			return differ()
		}
		return ""
	}
}

func nonEmpty(ptr string) string {
	if ptr == "" {
		return "/"
	}
	return ptr
}

// short is a value as JSON, cut to a length a message can hold.
func short(v any) string {
	raw, _ := json.Marshal(v)
	if len(raw) > 80 {
		return string(raw[:77]) + "..."
	}
	return string(raw)
}
