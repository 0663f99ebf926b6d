package datadoc

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Patch is one data file a team adds on top of the built-in data: Doc is its
// content, already placed at the file's path under data.
type Patch struct {
	File string // shown in errors
	Doc  map[string]any
}

// ConflictError is a value of a team data file that cannot be applied: two
// files set it differently, or it is a document only the program sets.
type ConflictError struct {
	File  string   // the data file
	Path  []string // the value's path under data
	Other string   // the other file that sets the value differently; "" for a reserved path
}

func (e *ConflictError) Error() string {
	if e.Other == "" {
		return fmt.Sprintf("%s cannot be set by a data file: des sets it from its settings (.des/config.json, DES_* variables); set the value there and remove it from this file", Ref(e.Path))
	}
	return fmt.Sprintf("%s is set here and, to another value, in %s: keep it in one of the two files", Ref(e.Path), e.Other)
}

var ident = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// Ref writes a path under data as a Rego reference: data.des.sections.origins["ad-hoc"].
func Ref(path []string) string {
	var b strings.Builder
	b.WriteString("data")
	for _, p := range path {
		if ident().MatchString(p) {
			b.WriteString("." + p)
			continue
		}
		q, _ := json.Marshal(p)
		b.WriteString("[" + string(q) + "]")
	}
	return b.String()
}

// Apply applies each patch to base as a JSON merge patch (RFC 7396): objects
// merge key by key, null removes the key, and any other value (a string, a
// number, an array) replaces the one in base whole. The patches must agree:
// where two set the same value differently, or one sets a value inside what
// another replaces, the result would depend on their order, and Apply
// returns a *ConflictError naming both files without changing base. No
// patch may set a value at or below one of the reserved paths (each a list
// of keys), which the program sets itself.
func Apply(base map[string]any, patches []Patch, reserved ...[]string) error {
	type mark struct {
		file  string
		leaf  bool
		value any
	}
	seen := map[string]mark{}
	var check func(file string, path []string, v any) error
	check = func(file string, path []string, v any) error {
		for _, r := range reserved {
			if slices.Equal(path, r) {
				return &ConflictError{File: file, Path: slices.Clone(path)}
			}
		}
		obj, isObj := v.(map[string]any)
		key := strings.Join(path, "\x00")
		if prev, ok := seen[key]; ok && prev.file != file {
			same := !isObj && prev.leaf && reflect.DeepEqual(prev.value, v)
			if (isObj && prev.leaf) || (!isObj && !same) {
				return &ConflictError{File: file, Path: slices.Clone(path), Other: prev.file}
			}
		} else if !ok {
			seen[key] = mark{file: file, leaf: !isObj, value: v}
		}
		for _, k := range sortedKeys(obj) {
			if err := check(file, append(path, k), obj[k]); err != nil {
				return err
			}
		}
		return nil
	}
	for _, p := range patches {
		for _, k := range sortedKeys(p.Doc) {
			if err := check(p.File, []string{k}, p.Doc[k]); err != nil {
				return err
			}
		}
	}
	for _, p := range patches {
		mergePatch(base, p.Doc)
	}
	return nil
}

// mergePatch applies patch to target in place (RFC 7396, section 2).
func mergePatch(target, patch map[string]any) {
	for k, v := range patch {
		switch pv := v.(type) {
		case nil:
			delete(target, k)
		case map[string]any:
			cur, ok := target[k].(map[string]any)
			if !ok {
				cur = map[string]any{}
				target[k] = cur
			}
			mergePatch(cur, pv)
		default:
			target[k] = v
		}
	}
}

func sortedKeys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }
