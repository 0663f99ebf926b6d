package decisionlog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// AuditHeads reads the des_audit_head of each event, passing over lines
// that do not parse and lines longer than any event des writes.
func TestAuditHeads(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sum := strings.Repeat("ab", 32)
	head := `{"timestamp":"2026-11-25T18:00:00Z","des_audit_head":{"dir":"/p/.des/audit","seq":%s,"sha256":"` + sum + `"}}`
	lines := []string{
		strings.Replace(head, "%s", "3", 1),
		`{"timestamp":"2026-11-25T18:00:01Z","decision_id":"x"}`,
		`{"des_audit_head": not json`,
		`{"pad":"` + strings.Repeat("x", MaxRecordBytes+1) + `","des_audit_head":{"seq":9}}`,
		strings.Replace(head, "%s", "4", 1),
	}
	os.WriteFile(filepath.Join(dir, "2026-11-25.jsonl"), []byte(strings.Join(lines, "\n")), 0o644) // the last line without its newline
	os.WriteFile(filepath.Join(dir, "2026-11-24.jsonl"), []byte(strings.Replace(head, "%s", "1", 1)+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte(strings.Replace(head, "%s", "7", 1)+"\n"), 0o644)
	heads, err := AuditHeads(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for _, h := range heads {
		got = append(got, h.Seq)
		if h.Dir != "/p/.des/audit" || h.SHA256 != sum || h.Time.IsZero() {
			t.Errorf("head %+v", h)
		}
	}
	if len(got) != 3 || got[0] != 1 || got[1] != 3 || got[2] != 4 || heads[2].Line != 5 || filepath.Base(heads[2].File) != "2026-11-25.jsonl" {
		t.Errorf("heads %+v", heads)
	}
	if heads, err := AuditHeads(filepath.Join(dir, "none")); err != nil || heads != nil {
		t.Errorf("no log: %v, %v", heads, err)
	}
}
