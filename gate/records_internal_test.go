package gate

import (
	"os"
	"path/filepath"
	"testing"
)

// The names of a record after the first are links to its file (creating a
// file costs far more than naming one on some disks); a name that exists
// already is replaced, as a rename replaces it, and nothing is left over.
func TestPutRecordsNamesOneFile(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, ".des", "runs")
	if err := putRecords(root, dir, []string{"toolu_1.json", "prompt-abc.json"}, []byte("first\n")); err != nil {
		t.Fatal(err)
	}
	if err := putRecords(root, dir, []string{"toolu_2.json", "prompt-abc.json"}, []byte("second\n")); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"toolu_1.json": "first\n", "toolu_2.json": "second\n", "prompt-abc.json": "second\n"} {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want %q", name, got, err, want)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Errorf("files left: %v", entries)
	}
	a, _ := os.Stat(filepath.Join(dir, "toolu_2.json"))
	b, _ := os.Stat(filepath.Join(dir, "prompt-abc.json"))
	if !os.SameFile(a, b) {
		t.Log("the names are separate files (no hard links here)")
	}
}
