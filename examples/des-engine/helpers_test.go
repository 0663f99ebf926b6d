package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/internal/testenv"
)

// envMap is a fixed environment for run's lookupEnv.
type envMap map[string]string

func (m envMap) lookup(k string) (string, bool) {
	v, ok := m[k]
	return v, ok
}

// corpusDir is the shared corpus of real hook payloads, relative to this
// package's directory.
const corpusDir = "../../../shared/corpus/claude-code-hooks"

// requireCorpus returns the corpus directory, or skips when it is absent.
func requireCorpus(t *testing.T) string { return testenv.Shared(t, "corpus/claude-code-hooks") }

// maxInput is the most the hook reads from stdin (docs/reference.md).
const maxInput = 8 << 20

// sizedEvent returns a valid, routed PreToolUse Write event of exactly n bytes.
func sizedEvent(t *testing.T, n int) []byte {
	t.Helper()
	head := `{"hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"a","content":"`
	tail := `"}}`
	pad := n - len(head) - len(tail)
	if pad < 0 {
		t.Fatalf("n = %d too small", n)
	}
	return []byte(head + strings.Repeat("a", pad) + tail)
}

// settingsPath and sandboxPath write a path as des-hook settings writes it
// in permissions.deny and in sandbox.filesystem.denyWrite.
func settingsPath(p string) string {
	p = filepath.ToSlash(filepath.Clean(p))
	if strings.HasPrefix(p, "/") {
		return "/" + p
	}
	return "/" + strings.TrimPrefix(p, "./")
}

func sandboxPath(p string) string {
	p = filepath.ToSlash(filepath.Clean(p))
	if strings.HasPrefix(p, "/") {
		return "/" + p
	}
	return "./" + strings.TrimPrefix(p, "./")
}
