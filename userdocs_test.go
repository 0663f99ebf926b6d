package des_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// outsideSpec matches citations of a specification users do not have: the
// README and docs/reference.md are the documents users read, so messages,
// doc comments and docs point there instead.
var outsideSpec = regexp.MustCompile(`(?i)contract\s*\(?§|\bthe contract\b|\bcontract's\b|\bgate contract\b|CONTRACT\.md`)

// TestUserFacingTextCitesNoOutsideSpec fails when a file a user reads (the
// README, docs/*.md, the Rego policies and their messages, the Go sources
// with their doc comments and messages, the JSON Schemas' descriptions) cites "the contract" or "contract §N".
// Tests are left out: they are read by des's developers.
func TestUserFacingTextCitesNoOutsideSpec(t *testing.T) {
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case path == "README.md", strings.HasPrefix(path, "docs"+string(filepath.Separator)) && strings.HasSuffix(path, ".md"):
		case strings.HasSuffix(path, ".rego") && !strings.HasSuffix(path, "_test.rego"):
		case strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go"):
		case strings.HasSuffix(path, ".schema.json"): // their descriptions are documentation
		default:
			return nil
		}
		files = append(files, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 50 {
		t.Fatalf("found only %d user-facing files; is the test running at the module root?", len(files))
	}
	for _, path := range files {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(raw), "\n") {
			if m := outsideSpec.FindString(line); m != "" {
				t.Errorf("%s:%d cites %q, a document users do not have; point to docs/reference.md or the README instead:\n\t%s",
					path, i+1, m, strings.TrimSpace(line))
			}
		}
	}
}
