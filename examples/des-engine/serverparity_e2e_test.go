package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/testenv"
)

// The warm decision server decides every event as the hook process that
// sent it would decide it in a process of its own: paths through
// /proc/self, ~ and relative paths are the client's, and git is the one the
// client's PATH finds. Each event is decided both ways and the answers
// compared; whatever DES_TEST_DECISION_SERVER says, both ways run.

// parityCall runs event in root decided in-process (decision_server off)
// and through the warm server of run, and returns both runs. The hook's
// working directory is root, as Claude Code's.
func parityCall(t *testing.T, run, root string, env []string, event any) (inProcess, served hookRun) {
	t.Helper()
	inProcess = runHookProcess(t, root, append(slicesClone(env), "DES_DECISION_SERVER=off"), event)
	served = runHookProcess(t, root, append(slicesClone(env), "XDG_RUNTIME_DIR="+run, "DES_LOG_LEVEL=debug", "DES_DECISION_SERVER=auto"), event)
	return inProcess, served
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// parityServer starts the warm server for run with env and waits for it.
func parityServer(t *testing.T, run, root string, env []string) int {
	t.Helper()
	runHookProcess(t, root, append(slicesClone(env), "XDG_RUNTIME_DIR="+run, "DES_DECISION_SERVER=auto"),
		map[string]any{"hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": map[string]any{"file_path": "x"}})
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if pid, ok, err := testServerPID(run); err == nil && ok {
			return pid
		}
	}
	t.Fatal("no decision server started")
	return 0
}

func parityRun(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the decision server runs on Linux only")
	}
	run := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(run, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopTestServers(run) })
	return run
}

func TestE2EServerParityPaths(t *testing.T) {
	t.Parallel()
	run := parityRun(t)
	home := t.TempDir()
	root := filepath.Join(home, "proj")
	for _, d := range []string{".des/policies", "sub", "docs"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A link in the project to the hook's own working directory: the
	// server must follow it in its client's view, not its own (/).
	if err := os.Symlink("/proc/self/cwd", filepath.Join(root, "here")); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + home}
	parityServer(t, run, root, env)
	write := func(cwd, path string) map[string]any {
		ev := writeEvent(root, "Write", "x")
		ev["cwd"] = cwd
		ev["tool_input"].(map[string]any)["file_path"] = path
		return ev
	}
	const protected = "[DES-PROTECTED-PATH]"
	cases := []struct {
		name   string
		event  map[string]any
		want   string // in the deny reason; "" no opinion
		served bool   // decided by the server (else refused, decided in-process)
	}{
		{"proc self cwd", write(root, "/proc/self/cwd/.des/config.json"), protected, false},
		{"proc thread-self cwd", write(root, "/proc/thread-self/cwd/.des/policies/x.rego"), protected, false},
		{"proc self root", write(root, "/proc/self/root"+root+"/.des/config.json"), protected, false},
		{"tilde", write(root, "~/proj/.des/config.json"), protected, true},
		{"tilde elsewhere", write(root, "~/other/.des/config.json"), "", true},
		{"white space around", write(root, " \t.des/config.json\n"), protected, true},
		{"relative from another cwd", write(filepath.Join(root, "sub"), "../.des/config.json"), protected, true},
		{"relative, cwd not the root", write(filepath.Join(root, "sub"), ".des/config.json"), "", true},
		{"link to /proc/self/cwd", write(root, filepath.Join(root, "here", ".des", "config.json")), protected, true},
		{"bash through proc", bashEvent(t, root, "echo '{}' > /proc/self/cwd/.des/config.json"), protected, false},
		{"bash tilde", bashEvent(t, root, "echo '{}' > ~/proj/.des/config.json"), protected, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, sv := parityCall(t, run, root, env, c.event)
			got, gotServed := denyReason(t, in), denyReason(t, sv)
			if !strings.Contains(got, c.want) || (c.want == "") != (got == "") {
				t.Errorf("in-process: %q; want %q\nstderr %s", got, c.want, in.stderr)
			}
			if gotServed != got {
				t.Errorf("through the server: %q\nin-process: %q\nstderr %s", gotServed, got, sv.stderr)
			}
			if by := servedBy(sv); (by != 0) != c.served {
				t.Errorf("decided by server %d; want served %v\nstderr %s", by, c.served, sv.stderr)
			}
		})
	}
}

// A decision server started by the agent with PATH=/evil:$PATH, whose git
// says nothing is staged, still runs the git of its client's PATH: the
// commit of an unfinished step is denied as in a process of its own.
func TestE2EServerGitFromRequestPath(t *testing.T) {
	t.Parallel()
	testenv.Long(t) // seconds of sleeps and processes: CI runs it (DES_TEST_LONG=1)
	run := parityRun(t)
	root := gitProject(t)
	writeFile(t, root, stepPath, finishedStep(t, "IN_PROGRESS"))
	git(t, root, "add", stepPath)
	evil := t.TempDir()
	testenv.WriteExecutable(t, filepath.Join(evil, "git"), []byte("#!/bin/sh\nexit 0\n"))
	ctx, cancel := context.WithCancel(t.Context())
	serve := exec.CommandContext(ctx, engineBin, "serve", "--idle", "1m")
	serve.Env = append(cleanEnviron(), "XDG_RUNTIME_DIR="+run, "PATH="+evil+string(os.PathListSeparator)+os.Getenv("PATH"))
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = serve.Wait() }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, ok, err := testServerPID(run); err == nil && ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server did not listen")
		}
	}
	in, sv := parityCall(t, run, root, nil, bashEvent(t, root, "git commit -m x"))
	want := "[DES-COMMIT-PHASE-OPEN] " + stepPath
	if got := denyReason(t, in); !strings.Contains(got, want) {
		t.Fatalf("in-process: %q; want %q", got, want)
	}
	if got := denyReason(t, sv); !strings.Contains(got, want) || servedBy(sv) != serve.Process.Pid {
		t.Fatalf("through the server started with an impostor git first on its PATH (served by %d, want %d): %q; want %q\nstderr %s", servedBy(sv), serve.Process.Pid, got, want, sv.stderr)
	}
}

// ~ in a commit's directory is the client's home, not the server's: the
// server started with another HOME still finds the staged step file of
// `cd ~/proj && git commit`.
func TestE2EServerHomeFromRequest(t *testing.T) {
	t.Parallel()
	testenv.Long(t) // seconds of sleeps and processes: CI runs it (DES_TEST_LONG=1)
	run := parityRun(t)
	root := gitProject(t)
	writeFile(t, root, stepPath, finishedStep(t, "IN_PROGRESS"))
	git(t, root, "add", stepPath)
	ctx, cancel := context.WithCancel(t.Context())
	serve := exec.CommandContext(ctx, engineBin, "serve", "--idle", "1m")
	serve.Env = append(cleanEnviron(), "XDG_RUNTIME_DIR="+run, "HOME="+t.TempDir())
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = serve.Wait() }()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, ok, err := testServerPID(run); err == nil && ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the server did not listen")
		}
	}
	ev := bashEvent(t, root, "cd ~/"+filepath.Base(root)+" && git commit -m x")
	ev["cwd"] = "/"
	in, sv := parityCall(t, run, root, []string{"HOME=" + filepath.Dir(root)}, ev)
	want := "[DES-COMMIT-PHASE-OPEN] " + stepPath
	if got := denyReason(t, in); !strings.Contains(got, want) {
		t.Fatalf("in-process: %q; want %q", got, want)
	}
	if got := denyReason(t, sv); !strings.Contains(got, want) || servedBy(sv) != serve.Process.Pid {
		t.Fatalf("through a server with another HOME (served by %d, want %d): %q; want %q\nstderr %s", servedBy(sv), serve.Process.Pid, got, want, sv.stderr)
	}
}
