package proctree

import (
	"os"
	"testing"
)

// BenchmarkLeftRunning is the look the effect check takes after each Bash
// call: every process read, those started since the call kept.
func BenchmarkLeftRunning(b *testing.B) {
	tr := Tree{}
	if !tr.Supported() {
		b.Skip("no Linux /proc")
	}
	self, err := tr.Read(os.Getpid())
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		all, err := tr.All()
		if err != nil {
			b.Fatal(err)
		}
		tr.LeftRunning(all, Call{UID: os.Getuid(), Since: self.Start, Origin: []Ref{self.Ref}, Command: "sleep 1 &"})
	}
}
