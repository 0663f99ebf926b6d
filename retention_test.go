package des

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/deterministic-exec/des/audit"
)

// The retention setting reaches the audit trail: the Engine's first append
// of a day archives day files past DES_AUDIT_LOG_RETENTION_DAYS.
func TestAuditRetentionSetting(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	auditDir := filepath.Join(root, ".des", "audit")
	old := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	seed, err := audit.Open(auditDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Time{old, old.AddDate(0, 0, 5)} {
		if err := seed.Append(t.Context(), audit.Entry{Time: d, Event: audit.HookError, Fields: map[string]any{"error": "x"}}); err != nil {
			t.Fatal(err)
		}
	}
	now := old.AddDate(0, 0, 10)
	e, err := New(t.Context(), WithRoot(root), WithLazyPolicies(), WithClock(func() time.Time { return now }),
		WithEnv(env(map[string]string{"DES_AUDIT_LOG_RETENTION_DAYS": "7"})))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Audit().Append(t.Context(), audit.Entry{Event: audit.HookError, Fields: map[string]any{"error": "y"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(auditDir, audit.ArchiveDir, audit.ArchiveName(old))); err != nil {
		t.Errorf("day file 10 days old not archived: %v", err)
	}
	if _, err := os.Stat(filepath.Join(auditDir, audit.FileName(old.AddDate(0, 0, 5)))); err != nil {
		t.Errorf("day file 5 days old archived: %v", err)
	}
	rep, err := audit.Verify(t.Context(), auditDir)
	if err != nil || !rep.Intact() || rep.Lines != 3 {
		t.Errorf("Verify = %+v, %v", rep, err)
	}
}
