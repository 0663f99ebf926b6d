//go:build unix

package channel

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestRuntimeDirXDG(t *testing.T) {
	xdg := t.TempDir() // 0700, ours
	got, err := RuntimeDir(env(map[string]string{"XDG_RUNTIME_DIR": xdg}))
	if err != nil || got != filepath.Join(xdg, "des") {
		t.Fatalf("RuntimeDir = %q, %v", got, err)
	}
	if fi, err := os.Lstat(got); err != nil || fi.Mode().Perm() != 0o700 || !fi.IsDir() {
		t.Fatalf("created %v, %v; want a 0700 directory", fi, err)
	}
}

func TestRuntimeDirUntrustedXDGFallsBack(t *testing.T) {
	xdg := t.TempDir()
	if err := os.Chmod(xdg, 0o777); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	for _, e := range []map[string]string{{"XDG_RUNTIME_DIR": xdg}, {"XDG_RUNTIME_DIR": "relative"}, {}} {
		got, err := RuntimeDir(env(e))
		if want := filepath.Join(tmp, "des-run-"+strconv.Itoa(os.Getuid())); err != nil || got != want {
			t.Errorf("RuntimeDir(%v) = %q, %v; want %q", e, got, err, want)
		}
	}
}

func TestEnsureDirRefusesUnsafe(t *testing.T) {
	base := t.TempDir()
	loose := filepath.Join(base, "loose")
	if err := os.Mkdir(loose, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(loose, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	target := filepath.Join(base, "target")
	if err := os.Mkdir(target, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(base, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for dir, why := range map[string]string{loose: "mode 0755", link: "symbolic link", file: "not a directory"} {
		_, err := EnsureDir(dir)
		if !errors.Is(err, ErrUnsafeDir) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), why) ||
			!strings.Contains(err.Error(), "rm -rf "+dir) {
			t.Errorf("EnsureDir(%s) = %v; want ErrUnsafeDir naming it, %q and the fix", dir, err, why)
		}
	}
	if got, err := EnsureDir(target); err != nil || got != target {
		t.Errorf("EnsureDir(0700 dir) = %q, %v", got, err)
	}
}
