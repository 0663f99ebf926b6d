package channel

import (
	"os"
	"strings"
	"testing"
	"time"
)

func TestFallbackRecord(t *testing.T) {
	dir := t.TempDir()
	if _, ok, err := ReadFallback(dir, "k"); ok || err != nil {
		t.Fatalf("no record: %v, %v", ok, err)
	}
	long := strings.Repeat("x", 3*maxWhy)
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	if err := WriteFallback(dir, "k", Fallback{Time: at, Cause: CausePeerMismatch, Why: "pid 1\x1b[31m runs " + long, Socket: "/s"}); err != nil {
		t.Fatal(err)
	}
	f, ok, err := ReadFallback(dir, "k")
	if !ok || err != nil || !f.Time.Equal(at) || f.Cause != CausePeerMismatch || f.Socket != "/s" {
		t.Fatalf("read back %+v, %v, %v", f, ok, err)
	}
	if strings.ContainsRune(f.Why, 0x1b) || !strings.HasPrefix(f.Why, "pid 1 [31m runs x") || len(f.Why) > maxWhy+len("…") {
		t.Errorf("why not bounded or not printable: %d bytes, %q…", len(f.Why), f.Why[:20])
	}
	// Only the record is left: the temporary file was renamed over it.
	if ents, _ := os.ReadDir(dir); len(ents) != 1 || ents[0].Name() != "fallback-k.json" {
		t.Errorf("directory holds %v", ents)
	}
	ClearFallback(dir, "k")
	if _, ok, _ := ReadFallback(dir, "k"); ok {
		t.Error("record left after ClearFallback")
	}
	// A file that is not a record, or too large, is an error, not a record.
	for _, junk := range []string{"not json", "{" + strings.Repeat(" ", maxFallbackFile) + "}"} {
		if err := os.WriteFile(FallbackPath(dir, "k"), []byte(junk), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := ReadFallback(dir, "k"); ok || err == nil {
			t.Errorf("junk of %d bytes read as a record", len(junk))
		}
	}
}
