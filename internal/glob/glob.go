// Package glob matches slash-separated paths against patterns in which "**"
// spans directories: "src/auth/**/*.go" matches "src/auth/a/b/c.go" and
// "src/auth/c.go". Every other element follows path.Match ("*" and "?" stay
// inside one directory). OPA's glob.match with the "/" delimiter agrees, so
// a pattern means the same in Go and in Rego.
package glob

import (
	"path"
	"strings"
)

// Match reports whether name matches pattern. Both are slash-separated and
// cleaned of "./" prefixes; a malformed element (path.ErrBadPattern) never
// matches.
func Match(pattern, name string) bool {
	return match(split(pattern), split(name))
}

// Valid reports whether every element of pattern is well formed.
func Valid(pattern string) bool {
	for _, p := range split(pattern) {
		if p == "**" {
			continue
		}
		if _, err := path.Match(p, ""); err != nil {
			return false
		}
	}
	return true
}

func split(s string) []string {
	s = strings.TrimPrefix(path.Clean("/"+strings.TrimPrefix(s, "./")), "/")
	if s == "" {
		return nil
	}
	return strings.Split(s, "/")
}

func match(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for len(pat) > 0 && pat[0] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 0 {
				return true
			}
			for i := range len(name) + 1 {
				if match(pat, name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, err := path.Match(pat[0], name[0]); err != nil || !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}
