// Package datadoc reads and merges OPA data documents (JSON-like maps): Decode
// parses one with its numbers kept exact and syntax errors located by line and
// column; Merge merges the data files of the built-in bundle: objects merge
// key by key, and a leaf defined twice is a conflict, never silently
// overwritten; Apply lays a team's data files over that as JSON merge
// patches, refusing two files that disagree.
package datadoc

import (
	"fmt"
	"sort"
)

// Merge merges src into dst. A key present on both sides whose values are
// not both objects is a conflict, reported with its path under data.
func Merge(dst, src map[string]any) error { return merge(dst, src, "") }

func merge(dst, src map[string]any, at string) error {
	keys := make([]string, 0, len(src))
	for k := range src {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the first conflict reported is the same on every run
	for _, k := range keys {
		v := src[k]
		cur, exists := dst[k]
		if !exists {
			dst[k] = v
			continue
		}
		curObj, ok1 := cur.(map[string]any)
		newObj, ok2 := v.(map[string]any)
		if !ok1 || !ok2 {
			return fmt.Errorf("data%s.%s is defined by more than one source", at, k)
		}
		if err := merge(curObj, newObj, at+"."+k); err != nil {
			return err
		}
	}
	return nil
}
