package des_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/internal/integrity"
)

// A new turn removes run records older than a day while a Bash call is in
// flight: its effect check takes the removals for des's own and restores
// none of them; a record the call itself removes is still restored.
func TestUserPromptPrunesOldRunRecords(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	runs := filepath.Join(root, des.RunsDir)
	if err := os.MkdirAll(runs, 0o755); err != nil {
		t.Fatal(err)
	}
	old := []string{"toolu_old.json", "prompt-aa.json", "toolu_old.stop.json"}
	for _, name := range append(old, "toolu_new.json") {
		if err := os.WriteFile(filepath.Join(runs, name), []byte(`{"step_file": "docs/steps/01-01.json"}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	chk := integrity.New(integrity.Options{Root: root, StateDir: t.TempDir()})
	ctx := context.Background()
	if _, err := chk.Begin(ctx, "toolu_bash", nil, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(runs, "toolu_new.json")); err != nil { // the call in flight
		t.Fatal(err)
	}
	// The turn starts a day and more after the records were written.
	later := time.Now().Add(gate.RunRetention + time.Minute)
	eng, err := des.New(ctx, des.WithRoot(root), des.WithWrites(chk), des.WithClock(func() time.Time { return later }),
		des.WithEnv(func(string) (string, bool) { return "", false }))
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.UserPrompt(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	rep, err := chk.End(ctx, "toolu_bash", false)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range old {
		if _, err := os.Lstat(filepath.Join(runs, name)); !os.IsNotExist(err) {
			t.Errorf("%s: %v, want it removed (report %+v)", name, err, rep)
		}
	}
	if _, err := os.Stat(filepath.Join(runs, "toolu_new.json")); err != nil {
		t.Errorf("the record the call removed was not restored: %v", err)
	}
}
