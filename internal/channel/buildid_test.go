package channel

import (
	"bytes"
	"debug/elf"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// sectionBuildID reads the note the way the previous version did, through
// debug/elf's section table: the reference the program-header read must match.
func sectionBuildID(t *testing.T, path string) string {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := f.Section(".note.go.buildid")
	if s == nil {
		t.Fatalf("%s: no .note.go.buildid section", path)
	}
	data, err := s.Data()
	if err != nil {
		t.Fatal(err)
	}
	id, ok := goNote(data, f.ByteOrder)
	if !ok {
		t.Fatalf("%s: malformed note", path)
	}
	return id
}

func TestBuildIDMatchesSectionTable(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ELF only")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	want := sectionBuildID(t, exe)
	if got, err := ReadBuildID(exe); err != nil || got != want {
		t.Fatalf("ReadBuildID = %q, %v; the section table says %q", got, err, want)
	}
	// Cut short: the note is gone, and that is an error, not a panic or an
	// empty ID.
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 10, 63, 64, 200, 1000} {
		p := filepath.Join(t.TempDir(), "cut")
		if err := os.WriteFile(p, data[:n], 0o755); err != nil {
			t.Fatal(err)
		}
		if id, err := ReadBuildID(p); err == nil {
			t.Errorf("first %d bytes: build ID %q, want an error", n, id)
		}
	}
}

func FuzzElfGoBuildID(f *testing.F) {
	if exe, err := os.Executable(); err == nil {
		if data, err := os.ReadFile(exe); err == nil && len(data) > headRead {
			f.Add(data[:headRead])
		}
	}
	f.Add([]byte("\x7fELF\x02\x01"))
	f.Fuzz(func(t *testing.T, head []byte) {
		id, why := elfGoBuildID(bytes.NewReader(head), head)
		if (id == "") == (why == "") {
			t.Fatalf("id %q and why %q", id, why)
		}
	})
}
