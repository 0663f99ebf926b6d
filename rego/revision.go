package rego

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"path"
	"strings"
	"sync"
)

// RevisionFile is the data file that records the bundle's revision, so an
// OPA server loaded with the bundle reports it as data.des.builtin.revision,
// and every gate package as builtin_revision.
const RevisionFile = "des/builtin/data.json"

// Revision returns the revision of the built-in policies: the SHA-256, in
// hex, of every policy and data file of the bundle (path and content), tests,
// the manifest and RevisionFile left out. RevisionFile records the same value
// (a test keeps them equal). des checks it when an OPA server decides: the
// facts one des release gathers are what its own policies read, so the
// server must run the same ones.
func Revision() string { return revision() }

var revision = sync.OnceValue(func() string {
	d, err := Digest(files)
	if err != nil {
		panic("rego: the embedded bundle cannot be read: " + err.Error())
	}
	return d
})

// Digest computes the revision of a bundle laid out as this one (for the
// test that keeps RevisionFile current, and for tools that check a copy).
func Digest(fsys fs.FS) (string, error) {
	h := sha256.New()
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		name := path.Base(p)
		if p == ".manifest" || p == RevisionFile || strings.HasSuffix(name, "_test.rego") ||
			!(strings.HasSuffix(name, ".rego") || name == "data.json" || name == "data.yaml" || name == "data.yml") {
			return nil
		}
		raw, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		h.Write([]byte(p))
		h.Write([]byte{0})
		h.Write(raw)
		h.Write([]byte{0})
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
