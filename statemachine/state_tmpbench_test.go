package statemachine_test

import (
	"encoding/json"
	"testing"

	"github.com/deterministic-exec/des/statemachine"
)

func BenchmarkTmpParseOnly(b *testing.B) {
	data := stateDoc(b, 50<<10)
	for b.Loop() {
		statemachine.ParseState(data)
	}
}

func BenchmarkTmpFactsRecompute(b *testing.B) {
	data := stateDoc(b, 50<<10)
	s, _ := statemachine.ParseState(data)
	s.Facts()
	for b.Loop() {
		s.Facts()
	}
}

func BenchmarkTmpObject(b *testing.B) {
	data := stateDoc(b, 50<<10)
	for b.Loop() {
		statemachine.ParseObject(data)
	}
}
func BenchmarkTmpJSONValid(b *testing.B) {
	data := stateDoc(b, 50<<10)
	for b.Loop() {
		json.Valid(data)
	}
}
