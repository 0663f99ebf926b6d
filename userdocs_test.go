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
	t.Parallel()
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

// The README's "Use it from Go" code is checkEveryGate of example_test.go,
// which Example_useFromGo compiles and runs, and the output the README
// shows is the example's.
func TestReadmeGoCodeIsTheExample(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	example, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	between := func(s, begin, end string) string {
		t.Helper()
		_, after, ok := strings.Cut(s, begin)
		if !ok {
			t.Fatalf("no %q", begin)
		}
		inside, _, ok := strings.Cut(after, end)
		if !ok {
			t.Fatalf("no %q after %q", end, begin)
		}
		return inside
	}
	section := between(string(readme), "## Use it from Go\n", "\n## ")
	code := between(string(example), "// README \"Use it from Go\" begins.\n\n", "\n\n// README \"Use it from Go\" ends.")
	if shown := between(section, "```go\n", "\n```"); shown != code {
		t.Errorf("README's Go code differs from checkEveryGate in example_test.go; copy it over.\nREADME:\n%s\nexample_test.go:\n%s", shown, code)
	}
	var want []string
	output := between(string(example), "func Example_useFromGo()", "\n}\n")
	_, output, _ = strings.Cut(output, "// Output:\n")
	for _, l := range strings.Split(output, "\n") {
		want = append(want, strings.TrimPrefix(strings.TrimSpace(l), "// "))
	}
	if shown := between(section, "```text\n", "\n```"); shown != strings.Join(want, "\n") {
		t.Errorf("README's output of the Go code differs from Example_useFromGo's:\nREADME:\n%s\nexample:\n%s", shown, strings.Join(want, "\n"))
	}
}
