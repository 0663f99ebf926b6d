// Package rego holds des's built-in policy bundle: the Rego files, their
// tests, the data tables and the bundle manifest, embedded in the binary.
//
// The directory is an ordinary OPA bundle (roots under "des", Rego v1), so
// `opa test rego/`, `opa check --strict rego/` and `opa build rego/` work on it
// as on any other. Package policy loads it; nothing else should need to.
package rego

import (
	"embed"
	"io/fs"
)

//go:embed .manifest des
var files embed.FS

// FS returns the bundle as a read-only file system rooted at the bundle
// directory: ".manifest" and "des/...". Test files (*_test.rego) are included;
// loaders that evaluate policy must skip them.
func FS() fs.FS { return files }
