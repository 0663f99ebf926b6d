package gate

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkJSONValue is jsonValue alone over the real step files (Gate 3
// converts each staged one), so a change to the parser shows without the
// policy's evaluation around it.
func BenchmarkJSONValue(b *testing.B) {
	paths, _ := filepath.Glob("../../shared/corpus/nwave-steps/*.json")
	if len(paths) == 0 {
		b.Skip("step corpus not found at ../../shared/corpus/nwave-steps")
	}
	var docs [][]byte
	var size int64
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		docs = append(docs, data)
		size += int64(len(data))
	}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		for _, d := range docs {
			if _, err := jsonValue(d); err != nil {
				b.Fatal(err)
			}
		}
	}
}
