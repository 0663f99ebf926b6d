// Package testenv tells des's tests how much to run. By default `go test
// ./...` runs a fast, representative suite (a sample of the real-payload
// corpus, a few property seeds); DES_TEST_LONG=1 runs the long tests too:
// the whole corpus, every seed, the soak and large-input runs. CI sets it.
// -short wins over DES_TEST_LONG: under -short no long test runs.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"testing"
)

// Var is the environment variable that switches the long tests on.
const Var = "DES_TEST_LONG"

// IsLong reports whether the long tests run: DES_TEST_LONG=1 and no -short.
// Tests that sample (a corpus, seeds) run everything when it is true.
func IsLong() bool {
	return os.Getenv(Var) == "1" && !testing.Short()
}

// Long skips t unless the long tests run, saying how to run it.
func Long(t testing.TB) {
	t.Helper()
	switch {
	case testing.Short():
		t.Skip("long test: skipped under -short")
	case os.Getenv(Var) != "1":
		t.Skip("long test: set " + Var + "=1 (CI does)")
	}
}

// Pick returns fast by default and long when the long tests run: the size
// of a sample, a number of seeds or rounds.
func Pick[T any](fast, long T) T {
	if IsLong() {
		return long
	}
	return fast
}

// Sample skips t unless the long tests run or i is one of every n (0, n,
// 2n, ...): the default run takes a fixed share of a table of costly
// cases, each case's own test, and CI runs them all.
func Sample(t testing.TB, i, n int) {
	t.Helper()
	if n > 1 && i%n != 0 && !IsLong() {
		t.Skipf("sampled: one case in %d runs by default; set %s=1 (CI does) for every case", n, Var)
	}
}

// WriteFile writes content to rel (slash-separated) below root, making
// the directories, or fails t.
func WriteFile(t testing.TB, root, rel, content string) {
	t.Helper()
	path := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// WriteExecutable writes an executable file (a program, a script) at path,
// or fails t. On Unix it is written by another process (install): a file
// this process writes is, for an instant, open for writing in any child a
// parallel test forks meanwhile, and executing it then fails with "text
// file busy" (ETXTBSY; golang.org/issue/22315).
func WriteExecutable(t testing.TB, path string, data []byte) {
	t.Helper()
	if runtime.GOOS == "windows" {
		if err := os.WriteFile(path, data, 0o755); err != nil {
			t.Fatal(err)
		}
		return
	}
	src := filepath.Join(t.TempDir(), "executable")
	if err := os.WriteFile(src, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("install", "-m", "0755", src, path).CombinedOutput(); err != nil {
		t.Fatalf("install %s: %v: %s", path, err, out)
	}
}

// LessGC has the garbage collector run a quarter as often (GOGC=400,
// unless GOGC is set) in a test binary whose tests compile policies over
// and over: collecting the compiler's short-lived garbage took a third of
// their CPU, and a test binary has memory to spare. Call it from TestMain.
func LessGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(400)
	}
}

// MemoryTempDir points TMPDIR, for this test binary and the processes it
// starts, at a memory file system (Linux's /dev/shm, when it is one with a
// GiB free), unless TMPDIR is set or the long tests run; the returned func
// puts TMPDIR back. Tests that create thousands of files and processes
// spent a third of their system time in the disk file system's inode
// allocation. The directory is /dev/shm itself, not one below it: a Unix
// socket's path (under 108 bytes) in a test's directory has room to spare
// only that way. The long tests (CI) keep the system's temporary
// directory, so both kinds of file system are exercised.
func MemoryTempDir() (restore func()) {
	restore = func() {}
	if IsLong() {
		return restore
	}
	if _, set := os.LookupEnv("TMPDIR"); set {
		return restore
	}
	base := memoryTempBase()
	if base == "" {
		return restore
	}
	if err := os.Setenv("TMPDIR", base); err != nil {
		return restore
	}
	return func() { os.Unsetenv("TMPDIR") }
}

// Shared returns the absolute path of rel in the shared directory beside
// the module's checkout (../shared: the real payloads and step files CI
// provides), or skips t saying where it looked.
func Shared(t testing.TB, rel string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Skipf("no go.mod above the test's directory: cannot find ../shared/%s", rel)
		}
		dir = up
	}
	p := filepath.Join(filepath.Dir(dir), "shared", filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared data not found at %s; CI provides it", p)
	}
	return p
}
