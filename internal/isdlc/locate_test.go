package isdlc

import (
	"os"
	"path/filepath"
	"testing"
)

// Locate finds the state file Discover would, without reading it: a state
// that is no JSON object is still found.
func TestLocateAgreesWithDiscover(t *testing.T) {
	root := t.TempDir()
	if f, err := Locate(Options{Root: root}); err != nil || f != "" {
		t.Fatalf("no state: Locate = %q, %v", f, err)
	}
	if err := os.MkdirAll(filepath.Join(root, ".isdlc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".isdlc", "state.json"), []byte("[]"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Locate(Options{Root: root})
	w, derr := Discover(Options{Root: root})
	if err != nil || derr != nil || w == nil || f != w.StateFile || f != ".isdlc/state.json" {
		t.Fatalf("Locate = %q, %v; Discover = %+v, %v", f, err, w, derr)
	}
}

// HasState sees the state file Locate finds, from the root ("") as from a
// directory inside it, and nothing where there is none.
func TestHasState(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".isdlc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".isdlc", "state.json"), []byte(`{"active_workflow": {"current_phase": "06-implementation"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if !HasState(root, "", nil) || !HasState(root, filepath.Join(root, "src"), nil) || HasState(t.TempDir(), "", nil) {
		t.Fatal("HasState does not see .isdlc/state.json")
	}
}
