// Command hook is DES's Claude Code hook: a thin client that sends each hook
// event to the warm decision server and prints its answer. Install it as
// des-hook, the name its messages and the docs use, beside its companion
// des-engine (the full engine: the server, in-process decisions and every
// subcommand), at a path that lasts and that the agent cannot write:
//
//	CGO_ENABLED=0 go build -o ~/bin/des-hook ./examples/hook
//	CGO_ENABLED=0 go build -o ~/bin/des-engine ./examples/des-engine
//	~/bin/des-hook settings --write   # install it in the project's .claude/settings*.json
//
// With no arguments it is a Claude Code command hook: it reads one event on
// stdin and writes at most one JSON object on stdout, always exiting 0. With
// DES_DECISION_SERVER=off (or decision_server "off" in the project's
// .des/config.json) it hands over to des-engine at once, stdin untouched.
// Otherwise it sends the event to the server of its companion's build (see
// internal/client), starting one when none runs; when no server takes the
// request it runs des-engine on the event in-process, exactly as without a
// server. With arguments it runs des-engine with them: des-hook settings,
// des-hook precommit, des-hook serve and the rest.
//
// It links only the standard library, internal/client and internal/channel:
// no policy engine, no schema library, so it starts as fast as any small Go
// program (a test checks the import graph).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/deterministic-exec/des/internal/channel"
	"github.com/deterministic-exec/des/internal/client"
)

// Names shared with des-engine.
const (
	companionName  = "des-engine"
	clientPathEnv  = "DES_CLIENT_PATH" // this client's path, for settings and precommit --install
	modeEnv        = "DES_DECISION_SERVER"
	modeKey        = "decision_server"
	modeOff        = "off"
	modeAuto       = "auto"
	idleEnv        = "DES_SERVER_IDLE_MINUTES"
	logLevelEnv    = "DES_LOG_LEVEL"
	exitUsage      = 2
	internalPrefix = "[DES-INTERNAL] "
)

// Request deadlines, below the timeouts `des-hook settings` gives Claude Code
// (30 s for tool events, 60 s for SubagentStop), so that a server that does
// not answer is reported by this client before Claude Code gives up on it.
const (
	toolTimeout = 28 * time.Second
	stopTimeout = 58 * time.Second
)

func main() {
	if len(os.Args) == 1 && os.Getenv("GOMAXPROCS") == "" {
		// Hook mode does one thing at a time and mostly waits on the
		// server: with a single P the runtime does not wake a second
		// thread to look for work at each wait (0.2-0.3 ms a call on 2
		// cores, measured A/B). The companion a hand-over execs, and a
		// server this starts, keep Go's default.
		runtime.GOMAXPROCS(1)
	}
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	self, companion, err := locate()
	if len(args) > 0 {
		if err != nil {
			fmt.Fprintf(os.Stderr, "des-hook: %v\n", err)
			return exitUsage
		}
		handOver(self, companion, args) // returns only on failure
		return exitUsage
	}
	if err != nil {
		missingCompanion(err)
		return 0
	}
	settings := readSettings()
	if settings.mode != modeAuto {
		// off, or a value des-engine reports as a bad setting.
		handOver(self, companion, nil)
		noOpinionOnFailure("des-hook: cannot run " + companion)
		return 0
	}
	hook(self, companion, settings.tokenVars)
	return 0
}

// locate returns this executable (as the user named it: the path settings
// hold) and the companion beside it (symbolic links resolved, so a link
// ~/bin/des-hook to a build directory finds des-engine in that directory).
func locate() (self, companion string, err error) {
	self, err = os.Executable()
	if err != nil {
		return "", "", fmt.Errorf("cannot find this executable: %w", err)
	}
	real := self
	if runtime.GOOS != "linux" { // Linux's os.Executable resolves links already (/proc/self/exe)
		if r, err := filepath.EvalSymlinks(self); err == nil {
			real = r
		}
	}
	name := companionName
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	companion = filepath.Join(filepath.Dir(real), name)
	if fi, err := os.Stat(companion); err != nil || fi.IsDir() {
		return self, companion, fmt.Errorf("the des engine %s is missing: des-hook needs it beside itself; build both into that directory, from a checkout of des: %s", companion, buildFix(filepath.Dir(real)))
	}
	return self, companion, nil
}

// buildFix is the command that builds des-hook and des-engine into dir,
// run from a checkout of des: one go build per binary, each named with -o
// (go build -o DIR/ of both packages would name the client "hook").
func buildFix(dir string) string {
	exe := ""
	if runtime.GOOS == "windows" {
		exe = ".exe"
	}
	return "CGO_ENABLED=0 go build -o " + shellQuote(filepath.Join(dir, "des-hook"+exe)) + " ./examples/hook && " +
		"CGO_ENABLED=0 go build -o " + shellQuote(filepath.Join(dir, companionName+exe)) + " ./examples/des-engine"
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./+:@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// clientSettings is what the client reads of the settings itself: the
// decision_server mode, and the variables the *_token_env settings name,
// which the server must receive beside the DES_* ones (the tokens for
// opa_url, the bundle server and the collector).
type clientSettings struct {
	mode      string
	tokenVars []string
}

// tokenEnvKeys are the settings that name a token's variable, with the
// variable that overrides each and its default.
var tokenEnvKeys = [...]struct{ key, env, def string }{
	{"opa_token_env", "DES_OPA_TOKEN_ENV", "DES_OPA_TOKEN"},
	{"bundle_token_env", "DES_BUNDLE_TOKEN_ENV", "DES_BUNDLE_TOKEN"},
	{"decision_log_token_env", "DES_DECISION_LOG_TOKEN_ENV", "DES_DECISION_LOG_TOKEN"},
}

// readSettings reads them: each from its variable, else the key in the
// project's .des/config.json, else the default (mode auto). Reading that
// one small file costs far less than a process; its other keys, and any
// value that is wrong, are des-engine's to check and report.
func readSettings() clientSettings {
	var cfg map[string]json.RawMessage
	fileOK := true
	if root := os.Getenv("CLAUDE_PROJECT_DIR"); root != "" {
		if raw, err := os.ReadFile(filepath.Join(root, ".des", "config.json")); err == nil && json.Unmarshal(raw, &cfg) != nil {
			fileOK = false
		}
	}
	str := func(env, key, def string) (string, bool) {
		if v, ok := os.LookupEnv(env); ok && strings.TrimSpace(v) != "" {
			return strings.TrimSpace(v), true
		}
		v, ok := cfg[key]
		if !ok || string(v) == "null" {
			return def, true
		}
		var s string
		if json.Unmarshal(v, &s) != nil {
			return "", false // not a string: des-engine names it
		}
		return strings.TrimSpace(s), true
	}
	var out clientSettings
	if v, ok := os.LookupEnv(modeEnv); ok {
		out.mode = strings.TrimSpace(v)
	} else if !fileOK {
		out.mode = modeOff // des-engine reports the broken file
	} else if m, ok := str(modeEnv, modeKey, modeAuto); ok {
		out.mode = m
	} else {
		out.mode = modeOff
	}
	for _, k := range tokenEnvKeys {
		if name, ok := str(k.env, k.key, k.def); ok && name != "" && !channel.Forwarded(name) {
			out.tokenVars = append(out.tokenVars, name)
		}
	}
	return out
}

// hook sends the event to the decision server and prints its answer.
func hook(self, companion string, tokenVars []string) {
	logger := newLogger()
	timeout := toolTimeout
	var serverEnv []string
	if v, ok := os.LookupEnv(idleEnv); ok {
		serverEnv = append(serverEnv, idleEnv+"="+v)
	}
	stdin, err := readStdin()
	if errors.Is(err, errStdinOpen) {
		// As des-engine would: before the event is read des cannot be in
		// charge, so this is no opinion.
		fmt.Fprintf(os.Stderr, "des-hook: no opinion: %v\n", err)
		return
	}
	// The event's name is needed for the longer deadline of SubagentStop
	// and for an error's answer: decoding a large event costs more than
	// looking for the name's bytes, so it is decoded only when they (or an
	// escaped letter, which could spell them) occur.
	if err == nil && len(stdin) <= channel.MaxStdin && mayName(stdin, "SubagentStop") && eventName(stdin) == "SubagentStop" {
		timeout = stopTimeout
	}
	c := client.New(client.Options{Companion: companion, Timeout: timeout, ServerEnv: serverEnv, Logger: logger})
	if err != nil || len(stdin) > channel.MaxStdin {
		// des-engine says what is wrong with the event, as it would alone.
		decideInProcess(self, companion, stdin, c, logger, fmt.Errorf("%w: %d bytes read, %v", client.ErrNotSent, len(stdin), err))
		return
	}
	cwd, _ := os.Getwd()
	root := os.Getenv("CLAUDE_PROJECT_DIR")
	if root == "" {
		root = cwd
	}
	env := append(channel.ForwardEnv(os.Environ()), clientPathEnv+"="+self)
	for _, name := range tokenVars {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	req := &channel.Request{
		Root:  root,
		Cwd:   cwd,
		Env:   env,
		Stdin: stdin,
	}
	rep, err := c.Call(context.Background(), req)
	switch {
	case err == nil && rep.Error == "":
		os.Stdout.Write(rep.Stdout)
		os.Stderr.Write(rep.Stderr)
	case err == nil:
		os.Stderr.Write(rep.Stderr)
		internalError(eventName(stdin), fmt.Errorf("the decision server failed on this event: %s", rep.Error))
	case errors.Is(err, client.ErrNotAccepted):
		decideInProcess(self, companion, stdin, c, logger, err)
	default: // ErrNoAnswer: it may have had effects, so it is not run again
		if rep != nil {
			os.Stderr.Write(rep.Stderr) // a handler's panic, say
		}
		internalError(eventName(stdin), fmt.Errorf("%w; the event was not decided again in-process, since it may have had effects (audit lines, a step moved to IN_PROGRESS): retry the call (DES_DECISION_SERVER=off decides every event in a process of its own)", err))
	}
}

// Deadline of reading stdin, as des-engine's: DES_HOOK_DEADLINE_MS (1 to
// 50000) or 20 s.
const (
	deadlineEnv  = "DES_HOOK_DEADLINE_MS"
	readDeadline = 20 * time.Second
)

var errStdinOpen = errors.New("read stdin: the event was not complete (stdin not closed) within the hook's deadline")

// readStdin reads the event, at most channel.MaxStdin+1 bytes, within the
// hook's deadline: a writer that never closes stdin must not hold the hook
// past Claude Code's timeout.
func readStdin() ([]byte, error) {
	within := readDeadline
	if ms, err := strconv.Atoi(strings.TrimSpace(os.Getenv(deadlineEnv))); err == nil && ms > 0 && ms <= 50000 {
		within = time.Duration(ms) * time.Millisecond
	}
	if b, err, ok := readStdinPolled(within); ok {
		return b, err
	}
	type read struct {
		b   []byte
		err error
	}
	done := make(chan read, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(os.Stdin, channel.MaxStdin+1))
		done <- read{b, err}
	}()
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case r := <-done:
		return r.b, r.err
	case <-t.C:
		return nil, fmt.Errorf("%w (%v)", errStdinOpen, within)
	}
}

// decideInProcess runs des-engine on the event this client read, as if
// Claude Code had started it: nothing ran in a server. It first records why
// in the runtime directory, for `des-hook status` (client.NoteFallback).
func decideInProcess(self, companion string, stdin []byte, c *client.Client, logger *slog.Logger, why error) {
	logger.Debug("des-hook: deciding in-process", "why", why)
	c.NoteFallback(why)
	handOverWithStdin(self, companion, stdin)
}

// mayName reports whether the JSON text in b could hold the string name:
// it holds name's bytes, or a \u escape of an ASCII letter (JSON encoders
// escape <, > and & that way, never letters, unless asked to escape all).
func mayName(b []byte, name string) bool {
	if bytes.Contains(b, []byte(name)) {
		return true
	}
	for i := 0; ; {
		j := bytes.Index(b[i:], []byte(`\u00`))
		if j < 0 || i+j+6 > len(b) {
			return false
		}
		i += j + 4
		if hi := b[i] | 0x20; (hi == '4' || hi == '5' || hi == '6' || hi == '7') && isHex(b[i+1]) {
			return true
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c|0x20 && c|0x20 <= 'f'
}

// eventName is the event's hook_event_name, "" when it has none.
func eventName(stdin []byte) string {
	var ev struct {
		Name string `json:"hook_event_name"`
	}
	_ = json.Unmarshal(stdin, &ev)
	return ev.Name
}

// internalError answers where des is in charge and could not decide:
// PreToolUse is denied, DES-INTERNAL; elsewhere the user is told.
func internalError(event string, err error) {
	msg := internalPrefix + "des-hook: " + err.Error()
	fmt.Fprintln(os.Stderr, msg)
	var out any
	if event == "PreToolUse" {
		out = map[string]any{"hookSpecificOutput": map[string]any{
			"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": msg}}
	} else {
		out = map[string]any{"systemMessage": msg}
	}
	raw, _ := json.Marshal(out)
	os.Stdout.Write(append(raw, '\n'))
}

// missingCompanion answers an event when des-engine is not there: a
// PreToolUse call is denied (des cannot check it and says how to repair),
// every other event gets no opinion, with the reason on stderr.
func missingCompanion(err error) {
	stdin, _ := readStdin()
	if event := eventName(stdin); event == "PreToolUse" {
		internalError(event, err)
		return
	}
	fmt.Fprintf(os.Stderr, "des-hook: no opinion: %v\n", err)
}

// noOpinionOnFailure reports on stderr that the hand-over failed; hook mode
// has no opinion then (the event is unread, so its name is unknown).
func noOpinionOnFailure(msg string) {
	fmt.Fprintf(os.Stderr, "%s; no opinion\n", msg)
}

// companionEnv is this process's environment with DES_CLIENT_PATH set.
func companionEnv(self string) []string {
	env := os.Environ()
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, clientPathEnv+"=") {
			out = append(out, kv)
		}
	}
	return append(out, clientPathEnv+"="+self)
}

// runChild runs the companion with stdin as a child and passes its outputs
// and exit status through: the fallback where stdin was read already, and
// the hand-over where exec is not available.
func runChild(self, companion string, args []string, stdin io.Reader) int {
	cmd := exec.Command(companion, args...)
	cmd.Env = companionEnv(self)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		return exit.ExitCode()
	default:
		fmt.Fprintf(os.Stderr, "des-hook: cannot run %s: %v\n", companion, err)
		return exitUsage
	}
}

// newLogger logs the client's own steps to stderr at DES_LOG_LEVEL=debug;
// otherwise it says nothing (des-engine reports what matters).
func newLogger() *slog.Logger {
	if strings.TrimSpace(os.Getenv(logLevelEnv)) == "debug" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// bytesReader is bytes.NewReader, named for the platform files.
func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
