//go:build unix

package isdlc

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A FIFO planted where a file is read would block an open for reading
// forever; every reader must stat first and refuse it.
func TestFIFOsDoNotHang(t *testing.T) {
	hash := strings.Repeat("cd", 20)
	tests := []struct {
		name  string
		files map[string]string
		fifo  string
		want  BranchFacts
	}{
		{"HEAD", map[string]string{"repo/.git/refs/heads/wf": hash}, "repo/.git/HEAD", BranchFacts{}},
		{".git file", nil, "repo/.git", BranchFacts{}},
		{"packed-refs", map[string]string{"repo/.git/HEAD": "ref: refs/heads/main\n"}, "repo/.git/packed-refs", BranchFacts{Readable: true, Current: "main"}},
		{"commondir", map[string]string{"repo/.git/HEAD": "ref: refs/heads/main\n", "repo/.git/refs/heads/wf": hash}, "repo/.git/commondir",
			BranchFacts{Readable: true, Current: "main", WorkflowBranchExists: true}},
		{"loose ref", map[string]string{"repo/.git/HEAD": "ref: refs/heads/main\n"}, "repo/.git/refs/heads/wf", BranchFacts{Readable: true, Current: "main"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			write(t, base, "repo/.keep", "")
			for rel, content := range tc.files {
				write(t, base, rel, content)
			}
			fifo := filepath.Join(base, filepath.FromSlash(tc.fifo))
			if err := os.MkdirAll(filepath.Dir(fifo), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(fifo, 0o644); err != nil {
				t.Skip("no FIFOs:", err)
			}
			if tc.want == (BranchFacts{}) && inRepo(base) {
				t.Skip("the temporary directory is inside a repository")
			}
			done := make(chan BranchFacts, 1)
			go func() { done <- Branch(filepath.Join(base, "repo"), "wf") }()
			select {
			case got := <-done:
				if got != tc.want {
					t.Errorf("got %+v, want %+v", got, tc.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Branch blocked on a FIFO")
			}
		})
	}
}

func TestStateFIFODoesNotHang(t *testing.T) {
	for _, name := range []string{isdlcState, monorepoFile, "docs/isdlc/tasks.md"} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			if name != isdlcState {
				write(t, root, isdlcState, `{}`)
			}
			p := filepath.Join(root, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Skip("no FIFOs:", err)
			}
			done := make(chan *Workflow, 1)
			go func() {
				w, _ := Discover(Options{Root: root, Getenv: env(nil)})
				done <- w
			}()
			select {
			case w := <-done:
				if name != "docs/isdlc/tasks.md" && (w == nil || w.Problem != ProblemUnreadable) {
					t.Errorf("got %+v, want an unreadable state", w)
				}
				if name == "docs/isdlc/tasks.md" && (w == nil || w.Plan.Path != "") {
					t.Errorf("got %+v, want no plan", w)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Discover blocked on a FIFO")
			}
		})
	}
}
