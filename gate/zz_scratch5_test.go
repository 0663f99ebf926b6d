package gate_test

import (
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/deterministic-exec/des/statemachine"
)

func BenchmarkScratchCorpusParse(b *testing.B) {
	files := stepCorpus(b)
	b.Run("ParseStep", func(b *testing.B) {
		for b.Loop() {
			for _, f := range files {
				statemachine.ParseStep(f.Content)
			}
		}
	})
	b.Run("ParseStep+Document", func(b *testing.B) {
		for b.Loop() {
			for _, f := range files {
				s, _ := statemachine.ParseStep(f.Content)
				s.Document()
			}
		}
	})
	var docs []map[string]any
	for _, f := range files {
		s, _ := statemachine.ParseStep(f.Content)
		docs = append(docs, s.Document())
	}
	b.Run("IVT", func(b *testing.B) {
		for b.Loop() {
			for _, d := range docs {
				ast.InterfaceToValue(d)
			}
		}
	})
}
