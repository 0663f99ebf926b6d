package channel

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestBuildIDMatchesGoTool(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("ELF only")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("go", "tool", "buildid", exe).Output()
	if err != nil {
		t.Skipf("go tool buildid: %v", err)
	}
	want := strings.TrimSpace(string(out))
	var ids BuildIDs
	for range 2 { // the second read comes from the cache
		got, err := ids.Read(exe)
		if err != nil || got != want {
			t.Fatalf("build ID = %q, %v; go tool buildid says %q", got, err, want)
		}
	}
	k := Key(want, "/opt/des/des-engine")
	if k == Key(want+"x", "/opt/des/des-engine") || len(k) != 16 {
		t.Errorf("Key(%q) = %q: not 16 hex digits distinguishing builds", want, k)
	}
	// Each install of a build has a key of its own, and the build ID and
	// the path cannot run into each other.
	if k == Key(want, "/home/u/bin/des-engine") || Key("ab", "/c") == Key("a", "b/c") {
		t.Errorf("Key does not distinguish installs of one build")
	}
}

func TestBuildIDMissing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadBuildID(p); !errors.Is(err, ErrNoBuildID) || !strings.Contains(err.Error(), p) {
		t.Errorf("err = %v, want ErrNoBuildID naming the file", err)
	}
}

func TestFrames(t *testing.T) {
	var b bytes.Buffer
	req := &Request{Version: Protocol, Root: "/r", Cwd: "/r/x", Env: []string{"DES_A=1"}, Deadline: 42, Stdin: []byte{0, 1, 2, 0xff}}
	if err := WriteRequest(&b, req); err != nil {
		t.Fatal(err)
	}
	got, err := ReadRequest(&b)
	if err != nil || got.Root != "/r" || got.Cwd != "/r/x" || got.Deadline != 42 || !bytes.Equal(got.Stdin, req.Stdin) || len(got.Env) != 1 {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	b.Reset()
	if err := WriteReply(&b, &Reply{Exit: 2, Stdout: []byte("out"), Stderr: []byte("err")}); err != nil {
		t.Fatal(err)
	}
	rep, err := ReadReply(&b)
	if err != nil || rep.Exit != 2 || string(rep.Stdout) != "out" || string(rep.Stderr) != "err" {
		t.Fatalf("reply round trip: %+v, %v", rep, err)
	}
	// An announced length beyond the bound is refused before reading it.
	b.Reset()
	b.Write([]byte{0, 0x10, 0, 1})
	if _, err := ReadFrame(&b, MaxMeta); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversized frame: %v", err)
	}
	if err := WriteRequest(&b, &Request{Stdin: make([]byte, MaxStdin+1)}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversized stdin written: %v", err)
	}
	if err := WriteReply(&b, &Reply{Stdout: make([]byte, MaxOutput), Stderr: []byte("x")}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversized output written: %v", err)
	}
}

func TestForwardEnv(t *testing.T) {
	got := ForwardEnv([]string{"DES_X=1", "CLAUDE_PROJECT_DIR=/p", "GIT_INDEX_FILE=i", "HOME=/h", "PATH=/bin",
		"XDG_CONFIG_HOME=/c", "AWS_SECRET_ACCESS_KEY=s", "GITHUB_TOKEN=t", "DESX=1", "PATHX=1"})
	want := "DES_X=1 CLAUDE_PROJECT_DIR=/p GIT_INDEX_FILE=i HOME=/h PATH=/bin XDG_CONFIG_HOME=/c"
	if strings.Join(got, " ") != want {
		t.Errorf("ForwardEnv = %q, want %q", got, want)
	}
}

func TestRequestLookupEnv(t *testing.T) {
	r := &Request{Env: []string{"A=1", "B=", "A=2", "NOEQ"}}
	if v, ok := r.LookupEnv("A"); v != "2" || !ok {
		t.Errorf("A = %q %v", v, ok)
	}
	if v, ok := r.LookupEnv("B"); v != "" || !ok {
		t.Errorf("B = %q %v", v, ok)
	}
	if _, ok := r.LookupEnv("NOEQ"); ok {
		t.Error("an entry without = was found")
	}
}
