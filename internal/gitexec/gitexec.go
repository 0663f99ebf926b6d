// Package gitexec runs git for des's own read commands (which files are
// staged, which changed, what a blob holds, which aliases a repository
// defines) so that nothing the repository names is run inside the hook.
//
// A repository's config and attributes can make git run programs: clean,
// smudge and process filters (filter.<driver>.*, chosen by .gitattributes),
// textconv and external diff drivers, core.fsmonitor, a pager. An agent
// working in the project can set any of them, so a Runner switches them all
// off for every command it runs:
//
//   - core.fsmonitor=false on the command line;
//   - every filter driver the repository's config defines is overridden
//     with empty clean, smudge and process commands and required=false
//     (git runs no filter whose command is empty), through
//     GIT_CONFIG_COUNT/KEY/VALUE, which takes names as they are, where -c
//     would split a driver name holding "=". git 2.39 has no switch that
//     ignores .gitattributes for a command, so the drivers are listed first
//     with `git config --get-regexp`, which runs nothing;
//   - diff, log and show get --no-ext-diff and --no-textconv;
//   - --no-pager, GIT_PAGER=cat, GIT_TERMINAL_PROMPT=0 (never a prompt),
//     GIT_OPTIONAL_LOCKS=0 (a read does not take the index lock from a
//     commit running beside it), GIT_CONFIG_NOSYSTEM=1, LC_ALL=C;
//   - GIT_NO_REPLACE_OBJECTS=1: des reads the objects a ref points at, not
//     the replacements `git replace` may have set up for them.
//
// Hooks (core.hooksPath) do not matter: no read command runs one. git
// itself is found on the PATH of the environment git runs with (the
// context's, see WithEnviron, else this process's), never in a relative
// PATH entry: the warm decision server finds the git the hook process that
// sent the request would have found, not the one its own PATH (whoever
// started it) names. Every command is bounded by Timeout and by the
// caller's context; a child that keeps git's output open does not outlive
// it.
package gitexec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Timeout bounds each git command when the caller's context allows more.
const Timeout = 10 * time.Second

// Runner runs git commands with everything the repository could make git
// run switched off. It remembers, per directory, the filter drivers it
// found, so a Runner is meant for one operation (one hook event); its
// methods are safe for concurrent use. The zero value is ready.
type Runner struct {
	mu      sync.Mutex
	drivers map[string][]string // directory -> filter driver names
}

// Run runs `git args...` in dir with stdin (nil: none) and returns its
// standard output. The error names the command and directory, wraps
// *exec.ExitError when git ran and failed (its message included), and
// wraps the context's error when the deadline or Timeout ended it.
func (r *Runner) Run(ctx context.Context, dir string, stdin []byte, args ...string) ([]byte, error) {
	if len(args) == 0 {
		return nil, errors.New("gitexec: no git command")
	}
	drivers, err := r.filterDrivers(ctx, dir)
	if err != nil {
		return nil, err
	}
	return run(ctx, dir, stdin, drivers, args)
}

// Config returns the config entries whose names match the extended regular
// expression re (`git config -z --get-regexp`), as name and value, in
// git's order (later entries win); none is not an error. Names are as git
// prints them: section and variable lower case, a subsection as written.
func (r *Runner) Config(ctx context.Context, dir, re string) ([][2]string, error) {
	drivers, err := r.filterDrivers(ctx, dir)
	if err != nil {
		return nil, err
	}
	return config(ctx, dir, re, drivers)
}

func config(ctx context.Context, dir, re string, drivers []string) ([][2]string, error) {
	out, err := run(ctx, dir, nil, drivers, []string{"config", "-z", "--get-regexp", re})
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 && ctx.Err() == nil {
		return nil, nil // git config's "no such key"
	}
	if err != nil {
		return nil, err
	}
	var entries [][2]string
	for _, e := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		if e == "" {
			continue
		}
		name, value, _ := strings.Cut(e, "\n") // a name alone is a boolean true
		entries = append(entries, [2]string{name, value})
	}
	return entries, nil
}

// filterDrivers lists the filter drivers the config of dir's repository
// defines, once per directory.
func (r *Runner) filterDrivers(ctx context.Context, dir string) ([]string, error) {
	r.mu.Lock()
	d, ok := r.drivers[dir]
	r.mu.Unlock()
	if ok {
		return d, nil
	}
	entries, err := config(ctx, dir, `^filter\.`, nil)
	if err != nil {
		return nil, fmt.Errorf("list the filter drivers the repository configures: %w", err)
	}
	for _, e := range entries {
		// filter.<driver>.<variable>: the driver is everything between
		// the first and the last dot.
		rest, ok := strings.CutPrefix(e[0], "filter.")
		i := strings.LastIndexByte(rest, '.')
		if !ok || i < 0 {
			continue
		}
		if name := rest[:i]; !slices.Contains(d, name) {
			d = append(d, name)
		}
	}
	if d == nil {
		d = []string{}
	}
	r.mu.Lock()
	if r.drivers == nil {
		r.drivers = map[string][]string{}
	}
	r.drivers[dir] = d
	r.mu.Unlock()
	return d, nil
}

// run runs one git command with drivers switched off.
func run(ctx context.Context, dir string, stdin []byte, drivers, args []string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	full := []string{"--no-pager", "-c", "core.fsmonitor=false", "-C", dir, args[0]}
	switch args[0] {
	case "diff", "log", "show":
		full = append(full, "--no-ext-diff", "--no-textconv")
	}
	full = append(full, args[1:]...)
	env := environ(ctx)
	git, err := LookGit(env)
	if err != nil {
		return nil, fmt.Errorf("git %s in %s: %w", args[0], dir, err)
	}
	cmd := exec.CommandContext(ctx, git, full...)
	cmd.Env = Env(env, drivers)
	cmd.WaitDelay = time.Second // a child holding stdout must not outlive the deadline
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	out, err := cmd.Output()
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (each git command is bounded by %v and by the hook's deadline)", ctx.Err(), Timeout)
		}
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return nil, fmt.Errorf("git %s in %s: %w: %s", args[0], dir, err, msg)
		}
		return nil, fmt.Errorf("git %s in %s: %w", args[0], dir, err)
	}
	return out, nil
}

// ErrNoGit is wrapped when no git is found on the environment's PATH.
var ErrNoGit = errors.New("git not found on PATH")

// LookGit is the git that environ's PATH finds: the first regular,
// executable file named git in an absolute PATH entry (the last PATH entry
// of environ counts, as in exec). Relative entries are skipped, as os/exec
// refuses them: they name different files from different directories.
func LookGit(environ []string) (string, error) {
	path := ""
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	name := "git"
	if runtime.GOOS == "windows" {
		name = "git.exe"
	}
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && (runtime.GOOS == "windows" || fi.Mode()&0o111 != 0) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w (PATH=%s)", ErrNoGit, path)
}

// Env is environ with the settings a Runner gives git: the fixed ones, and
// the filter drivers switched off, appended after any GIT_CONFIG_COUNT
// entries environ already holds (later entries win).
func Env(environ []string, drivers []string) []string {
	env := make([]string, 0, len(environ)+8+4*2*len(drivers))
	n := 0
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "GIT_CONFIG_NOSYSTEM", "GIT_NO_REPLACE_OBJECTS", "GIT_OPTIONAL_LOCKS", "GIT_TERMINAL_PROMPT", "GIT_PAGER", "PAGER", "GIT_CONFIG_COUNT", "LC_ALL", "LANGUAGE":
			if k == "GIT_CONFIG_COUNT" {
				n, _ = strconv.Atoi(v)
				n = max(n, 0)
			}
			continue // set below
		}
		env = append(env, kv)
	}
	// LC_ALL=C: git's messages in English, which callers match and
	// users read in des's errors.
	env = append(env, "GIT_CONFIG_NOSYSTEM=1", "GIT_NO_REPLACE_OBJECTS=1", "GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat", "PAGER=cat", "LC_ALL=C", "LANGUAGE=")
	set := func(key, value string) {
		env = append(env, "GIT_CONFIG_KEY_"+strconv.Itoa(n)+"="+key, "GIT_CONFIG_VALUE_"+strconv.Itoa(n)+"="+value)
		n++
	}
	for _, d := range drivers {
		set("filter."+d+".clean", "")
		set("filter."+d+".smudge", "")
		set("filter."+d+".process", "")
		set("filter."+d+".required", "false")
	}
	if n > 0 {
		env = append(env, "GIT_CONFIG_COUNT="+strconv.Itoa(n))
	}
	return env
}

// environKey is the context key of WithEnviron.
type environKey struct{}

// WithEnviron returns ctx carrying the environment git is run with, instead
// of this process's: the warm decision server runs each request with the
// environment of the hook client that sent it (GIT_DIR, GIT_INDEX_FILE,
// HOME, PATH and the rest of what the request carries), not its own.
func WithEnviron(ctx context.Context, environ []string) context.Context {
	return context.WithValue(ctx, environKey{}, slices.Clip(environ))
}

// environ is the environment WithEnviron put in ctx, else this process's.
func environ(ctx context.Context) []string {
	if env, ok := ctx.Value(environKey{}).([]string); ok {
		return env
	}
	return os.Environ()
}

// FileConfig reads content as git reads a config file, by asking git
// (`git config --file COPY --no-includes -z --list` on a private copy):
// a byte order mark, quoting, continuation lines, comments and the case
// rules of section and variable names are git's, not a parser's guess.
// Include directives are listed, not followed. Entries are in file order,
// names as git prints them (section and variable lower case, a subsection
// as written). Content git refuses is an error wrapping *exec.ExitError.
func FileConfig(ctx context.Context, content []byte) ([][2]string, error) {
	var entries [][2]string
	err := withCopy(content, func(dir, file string) error {
		out, err := run(ctx, dir, nil, nil, []string{"config", "--file", file, "--no-includes", "-z", "--list"})
		if err != nil {
			return err
		}
		for _, e := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
			if e == "" {
				continue
			}
			name, value, _ := strings.Cut(e, "\n")
			entries = append(entries, [2]string{name, value})
		}
		return nil
	})
	return entries, err
}

// FileReplaceAll returns content with every value of key replaced by
// values, written by git itself (`git config --file COPY --unset-all`,
// then `--add` for each value) on a private copy, so that the rest of the
// file is kept as git keeps it.
func FileReplaceAll(ctx context.Context, content []byte, key string, values []string) ([]byte, error) {
	var out []byte
	err := withCopy(content, func(dir, file string) error {
		_, err := run(ctx, dir, nil, nil, []string{"config", "--file", file, "--unset-all", key})
		var exit *exec.ExitError
		if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 5) { // 5: no such key
			return err
		}
		for _, v := range values {
			if _, err := run(ctx, dir, nil, nil, []string{"config", "--file", file, "--add", key, v}); err != nil {
				return err
			}
		}
		out, err = os.ReadFile(file)
		return err
	})
	return out, err
}

// withCopy runs f on a private copy of content, in a directory of its own
// (git writes its lock file beside the file), removed afterwards.
func withCopy(content []byte, f func(dir, file string) error) error {
	dir, err := os.MkdirTemp("", "des-gitconfig-")
	if err != nil {
		return fmt.Errorf("gitexec: %w", err)
	}
	defer os.RemoveAll(dir)
	file := dir + string(os.PathSeparator) + "config"
	if err := os.WriteFile(file, content, 0o600); err != nil {
		return fmt.Errorf("gitexec: %w", err)
	}
	return f(dir, file)
}
