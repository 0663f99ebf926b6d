package statemachine_test

import (
	"os"
	"path/filepath"
	"testing"
)

// corpusDir holds 300 real step files from the nWave project's history (see
// ../../shared/corpus/README.md).
const corpusDir = "../../shared/corpus/nwave-steps"

// corpusFiles returns the corpus step files, or skips the test when the
// corpus is not checked out beside the repository.
func corpusFiles(tb testing.TB) []string {
	tb.Helper()
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.json"))
	if err != nil {
		tb.Fatal(err)
	}
	if len(files) == 0 {
		if _, err := os.Stat(corpusDir); err != nil {
			tb.Skipf("step corpus not available (%v): it lives in shared/corpus beside the repository", err)
		}
		tb.Fatalf("no step files in %s", corpusDir)
	}
	return files
}

func readFile(tb testing.TB, path string) []byte {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}
