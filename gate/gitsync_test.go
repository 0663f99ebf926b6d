package gate

import (
	"context"
	"os"
	"testing"
)

func TestForgetStateMemory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := DocumentWrite{StateDir: t.TempDir()}
	if err := ForgetStateMemory(ctx, d.StateDir, ".isdlc/state.json"); err != nil {
		t.Fatalf("no memory: %v", err)
	}
	if err := d.keepSeen(ctx, ".isdlc/state.json", map[string]any{"phases": map[string]any{"01": "completed"}}); err != nil {
		t.Fatal(err)
	}
	if seen, err := d.readSeen(".isdlc/state.json"); err != nil || seen == nil {
		t.Fatalf("memory = %v, %v", seen, err)
	}
	if err := ForgetStateMemory(ctx, d.StateDir, ".isdlc/state.json"); err != nil {
		t.Fatal(err)
	}
	if seen, err := d.readSeen(".isdlc/state.json"); err != nil || seen != nil {
		t.Fatalf("memory after forgetting = %v, %v", seen, err)
	}
	if _, err := os.Stat(d.memoryPath(".isdlc/state.json")); !os.IsNotExist(err) {
		t.Fatalf("memory file: %v", err)
	}
}
