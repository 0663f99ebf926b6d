package decisionlog

import (
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkAppend is the cost of one logged decision past its evaluation:
// the input copied, masked, encoded and appended (one file a day).
func BenchmarkAppend(b *testing.B) {
	in := map[string]any{
		"tool":   "Write",
		"writes": []any{map[string]any{"path": ".des/config.json", "tool": "Write"}},
		"call":   map[string]any{"prompt": strings.Repeat("a prompt ", 200), "subagent_type": "coder"},
	}
	res := map[string]any{"deny": []any{map[string]any{"code": "DES-PROTECTED-PATH", "msg": strings.Repeat("m", 200)}}, "warn": []any{}}
	b.Run("document", func(b *testing.B) {
		for b.Loop() {
			if _, err := Document(in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("append", func(b *testing.B) {
		l := Open(filepath.Join(b.TempDir(), "d"), Options{Mask: []string{"/input/call/prompt"}, MaxBytes: 1 << 40})
		for b.Loop() {
			ev := sampleEvent(b, in, res)
			if err := l.Append(ev); err != nil {
				b.Fatal(err)
			}
		}
	})
}
