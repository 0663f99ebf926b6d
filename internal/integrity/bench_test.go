package integrity

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// corpusProject is a git repository holding the 300 real step files of
// ../shared/corpus/nwave-steps (as steps/NN-NN.json in 10 directories), DES's
// settings, a team policy, 50 run records, a workflow state and Claude
// Code settings.
func corpusProject(b *testing.B) string {
	b.Helper()
	src := filepath.Join("..", "..", "..", "shared", "corpus", "nwave-steps")
	files, _ := filepath.Glob(filepath.Join(src, "*.json"))
	if len(files) == 0 {
		b.Skipf("no step files in %s (the shared corpus beside the project)", src)
	}
	root := b.TempDir()
	if out, err := exec.Command("git", "init", "-q", root).CombinedOutput(); err != nil {
		b.Skipf("git init: %v %s", err, out)
	}
	for i, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		p := filepath.Join(root, "docs", "feature", fmt.Sprintf("f%d", i%10), "steps", fmt.Sprintf("%02d-%02d.json", i/10, i%10))
		mustWrite(b, p, data)
	}
	for i := range 50 {
		mustWrite(b, filepath.Join(root, ".des", "runs", fmt.Sprintf("toolu_%d.json", i)), []byte(`{"step_file": "x"}`))
	}
	mustWrite(b, filepath.Join(root, ".des", "config.json"), []byte(`{}`))
	mustWrite(b, filepath.Join(root, ".des", "policies", "team.rego"), []byte("package des.team\n"))
	mustWrite(b, filepath.Join(root, ".isdlc", "state.json"), []byte(`{"state_version": 3}`))
	mustWrite(b, filepath.Join(root, ".claude", "settings.json"), []byte(`{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "/opt/des/hook"}]}]}}`))
	for i := range 200 { // the project's own source, walked for step files
		mustWrite(b, filepath.Join(root, "src", fmt.Sprintf("p%d", i%20), fmt.Sprintf("f%d.go", i)), []byte("package p\n"))
	}
	// Files as a project has them: written some time ago (a file written
	// in the last two seconds is hashed at every check, see sameStat).
	old := time.Now().Add(-time.Hour)
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			_ = os.Chtimes(p, old, old)
		}
		return nil
	})
	return root
}

func mustWrite(b *testing.B, p string, data []byte) {
	b.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkCall is the effect check's cost per Bash call that changes
// nothing: Begin (baseline refreshed from disk: a stat per watched path)
// then End (a stat per watched path, the protected directories listed).
// Sub-benchmarks time each half; "first" is the first baseline of a
// project (every file read, hashed and copied, the tree walked).
func BenchmarkCall(b *testing.B) {
	root := corpusProject(b)
	ctx := context.Background()
	newChecker := func() *Checker {
		return New(Options{Root: root, StateDir: b.TempDir()})
	}
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			c := newChecker()
			b.StartTimer()
			if _, err := c.Begin(ctx, "toolu_x", nil, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	c := newChecker()
	if _, err := c.Begin(ctx, "toolu_0", nil, 0); err != nil {
		b.Fatal(err)
	}
	if _, err := c.End(ctx, "toolu_0", false); err != nil {
		b.Fatal(err)
	}
	b.Run("begin+end", func(b *testing.B) {
		for b.Loop() {
			if _, err := c.Begin(ctx, "toolu_1", nil, 0); err != nil {
				b.Fatal(err)
			}
			rep, err := c.End(ctx, "toolu_1", false)
			if err != nil || len(rep.Changes) > 0 {
				b.Fatal(rep, err)
			}
		}
	})
	b.Run("end", func(b *testing.B) {
		for b.Loop() {
			if _, err := c.End(ctx, "toolu_2", false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("end-restores-one", func(b *testing.B) {
		p := filepath.Join(root, ".des", "config.json")
		for b.Loop() {
			b.StopTimer()
			if err := os.WriteFile(p, []byte(`{"x": 1}`), 0o644); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			rep, err := c.End(ctx, "toolu_3", false)
			if err != nil || len(rep.Changes) != 1 {
				b.Fatal(rep, err)
			}
		}
	})
}
