package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/claudecode"
	"github.com/deterministic-exec/des/internal/channel"
	"github.com/deterministic-exec/des/internal/hooklog"
	"github.com/deterministic-exec/des/internal/server"
)

// idleEnv sets how long the warm decision server waits for a request before
// it exits, in minutes (default defaultIdle). The client passes it on to a
// server it starts.
const (
	idleEnv     = "DES_SERVER_IDLE_MINUTES"
	defaultIdle = 10 * time.Minute
)

func runServe(ctx context.Context, e env, args []string) int {
	fs := newFlagSet(e, "serve", "[--idle DURATION]",
		"Runs the warm decision server in the foreground: it decides hook events for the thin\n"+
			"hook client (des-hook) beside this des-engine file (each copy has a server of its own),\n"+
			"for every project of this user, until it has been idle for --idle, its executable is\n"+
			"replaced by another build, or it gets SIGTERM.\n"+
			"The client starts one by itself when none runs; running it by hand is for watching it\n"+
			"(DES_LOG_LEVEL=debug) or for measuring.")
	idle := fs.Duration("idle", idleDefault(e.lookupEnv), "exit after this long without a request (default from "+idleEnv+", else 10m)")
	if code, done := parseFlags(fs, args, 0); done {
		return code
	}
	if *idle <= 0 {
		fmt.Fprintf(e.stderr, "des-hook serve: --idle %v: must be positive\n", *idle)
		return exitUsage
	}
	logger := hooklog.New(e.stderr, e.lookupEnv)
	dir, lock := server.Inherited(nil)
	if dir == "" {
		d, err := channel.RuntimeDir(e.lookupEnv)
		if err != nil {
			fmt.Fprintf(e.stderr, "des-hook serve: %v\n", err)
			return exitUsage
		}
		dir = d
	}
	exe, _, key, err := server.Self()
	if err != nil {
		if lock != nil {
			_ = lock.Unlock()
		}
		fmt.Fprintf(e.stderr, "des-hook serve: %v\n", err)
		return exitUsage
	}
	ln, err := server.Listen(ctx, dir, key, lock)
	if err != nil {
		fmt.Fprintf(e.stderr, "des-hook serve: %v\n", err)
		if errors.Is(err, server.ErrAlreadyRunning) {
			return exitOK // the server this one would have been answers already
		}
		return exitUsage
	}
	logger.Info("des-hook serve: listening", "socket", channel.SocketPath(dir, key), "pid", os.Getpid(), "idle", *idle)
	err = server.Serve(ctx, ln, serveHandler(claudecode.NewCache(), logger, newBundleRefresher(ctx, logger), newLogPusherBG(ctx, logger)), server.Options{IdleTimeout: *idle, Executable: exe, Logger: logger, Check: decidable})
	switch {
	case errors.Is(err, server.ErrIdle), errors.Is(err, server.ErrExecutableChanged), errors.Is(err, context.Canceled):
		logger.Info("des-hook serve: stopped", "why", err)
		return exitOK
	default:
		fmt.Fprintf(e.stderr, "des-hook serve: %v\n", err)
		return exitUsage
	}
}

// idleDefault is DES_SERVER_IDLE_MINUTES when it is a positive number of
// minutes, else defaultIdle.
func idleDefault(lookupEnv func(string) (string, bool)) time.Duration {
	if raw, ok := lookupEnv(idleEnv); ok {
		if n, err := strconv.Atoi(strings.TrimSpace(raw)); err == nil && n > 0 {
			return time.Duration(n) * time.Minute
		}
	}
	return defaultIdle
}

// serveHandler runs hook mode for one request, exactly as a hook process
// started with the request's environment, stdin and working directory would:
// settings and policies are read afresh for every request (the engine is
// built per request; shared, the compiled policies are checked by stat), and
// git runs with the request's environment. Subcommands are not served: the
// client execs the companion for them.
//
// After each request, the organisation's bundles of the request's project
// are refreshed in the background when they are due, and its decision logs
// pushed to its collector (refresh and push may be nil); whether they are
// due is looked at in a goroutine, after the reply.
func serveHandler(cache *claudecode.Cache, logger *slog.Logger, refresh *bundleRefresher, push *logPusherBG) server.Handler {
	pid := os.Getpid()
	return func(ctx context.Context, req *channel.Request) *channel.Reply {
		if len(req.Args) != 0 {
			return &channel.Reply{Exit: exitUsage, Stderr: []byte("des-hook serve: the decision server runs hook mode only; run des-engine " + strings.Join(req.Args, " ") + " directly\n")}
		}
		var stdout, stderr bytes.Buffer
		start := time.Now()
		defer func() { logger.Debug("des-hook serve: decided", "root", req.Root, "took", time.Since(start)) }()
		claudecode.New(
			claudecode.WithCache(cache),
			claudecode.WithEnv(req.LookupEnv),
			claudecode.WithEnviron(req.Env),
			claudecode.WithWorkingDir(req.Cwd),
			claudecode.WithClientPID(req.PeerPID),
			claudecode.WithLogger(hooklog.New(&stderr, req.LookupEnv).With("decision_server_pid", pid)),
		).Run(ctx, bytes.NewReader(req.Stdin), &stdout)
		// Off the reply's path: it reads the project's settings.
		go func() {
			if req.Root == "" || (refresh == nil && push == nil) {
				return
			}
			if cfg, err := des.LoadConfig(req.Root, req.LookupEnv); err == nil {
				refresh.check(req.Root, cfg, req.LookupEnv)
				push.check(req.Root, cfg, req.LookupEnv)
			}
		}()
		return &channel.Reply{Exit: 0, Stdout: stdout.Bytes(), Stderr: stderr.Bytes()}
	}
}

// decidable refuses, before anything runs, a request the server cannot
// decide as the hook process that sent it would decide it in a process of
// its own (the client then does so):
//   - an event that names a path through the process's own view (/proc/,
//     /dev/fd, /dev/stdin and the like) in any string: /proc/self is the
//     server in the server, and not every reading of a path (step files,
//     workflow documents) takes the client's view; a link to such a path
//     is resolved in the client's view by the protected-path guard (its
//     /proc directory, from the kernel's record of the peer);
//   - a client whose /proc directory the server cannot read (its working
//     directory), or whose pid the kernel did not give.
//
// The rest of what a fresh process would read from its own environment
// comes with the request: cwd, HOME, PATH (git is found on it), the
// variables des reads.
func decidable(req *channel.Request) error {
	if len(req.Args) != 0 {
		return nil // answered with a usage error by the handler
	}
	if req.PeerPID <= 0 {
		return errors.New("the client's pid is unknown")
	}
	if _, err := os.Readlink("/proc/" + strconv.Itoa(req.PeerPID) + "/cwd"); err != nil {
		return fmt.Errorf("the client's working directory cannot be read: %w", err)
	}
	if s, ok := processViewIn(req.Stdin); ok {
		return fmt.Errorf("the event names %q, a path in the hook process's own view", s)
	}
	return nil
}

// processViewPrefixes name files whose meaning depends on the process that
// opens them.
var processViewPrefixes = []string{"/proc/", "/dev/fd", "/dev/std"}

// processViewIn reports whether a string anywhere in the event (a key or a
// value, JSON escapes decoded) holds one of processViewPrefixes. An event
// that is not JSON is left to the handler, which gives it no opinion in
// either place.
func processViewIn(event []byte) (string, bool) {
	if !bytes.Contains(event, []byte("/")) && !bytes.Contains(event, []byte(`\u`)) {
		return "", false // no slash can be in it
	}
	dec := json.NewDecoder(bytes.NewReader(event))
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		s, ok := tok.(string)
		if !ok {
			continue
		}
		for _, p := range processViewPrefixes {
			if strings.Contains(s, p) {
				return p, true
			}
		}
	}
}

// bundleRetry is how long the server waits after a pull of a project's
// bundles failed before it tries again, however due they are.
const bundleRetry = time.Minute

// bundleRefresher pulls the organisation's bundles (bundle_urls) of the
// projects the server decides for, never on a request's path: a bundle
// never fetched, or not for bundle_refresh_minutes, is fetched in a
// goroutine of its own, one per project at a time, for as long as the
// server runs. The policy cache sees a re-pulled bundle by stat.
type bundleRefresher struct {
	logger *slog.Logger
	jobs   *perRoot
}

func newBundleRefresher(ctx context.Context, logger *slog.Logger) *bundleRefresher {
	return &bundleRefresher{logger: logger, jobs: newPerRoot(ctx)}
}

func (r *bundleRefresher) check(root string, cfg des.Config, lookupEnv func(string) (string, bool)) {
	if r == nil || !des.BundlesDue(root, cfg, time.Now()) {
		return
	}
	r.jobs.run(root, 5*time.Minute, func(ctx context.Context) time.Time {
		res, err := des.PullBundles(ctx, root, cfg, lookupEnv, nil)
		ok := err == nil
		if err != nil {
			r.logger.Warn("des-hook serve: bundle refresh", "root", root, "err", err)
		}
		for _, p := range res {
			if p.Outcome == des.BundleFailed {
				ok = false
				r.logger.Warn("des-hook serve: bundle refresh", "root", root, "url", p.URL, "err", p.Error)
				continue
			}
			r.logger.Info("des-hook serve: bundle refresh", "root", root, "url", p.URL, "revision", p.Revision, "outcome", p.Outcome)
		}
		if ok {
			return time.Time{}
		}
		return time.Now().Add(bundleRetry)
	})
}

// perRoot runs the server's background jobs for projects: one job per
// project root at a time, none before the time the root's last job set.
type perRoot struct {
	ctx context.Context

	mu        sync.Mutex
	running   map[string]bool
	notBefore map[string]time.Time
}

func newPerRoot(ctx context.Context) *perRoot {
	return &perRoot{ctx: ctx, running: map[string]bool{}, notBefore: map[string]time.Time{}}
}

// run starts job for root in a goroutine of its own, bounded by timeout,
// unless one runs for root or root's time has not come; the time job
// returns is when the next may start (zero: at once).
func (p *perRoot) run(root string, timeout time.Duration, job func(context.Context) time.Time) {
	p.mu.Lock()
	if p.running[root] || time.Now().Before(p.notBefore[root]) {
		p.mu.Unlock()
		return
	}
	p.running[root] = true
	p.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(p.ctx, timeout)
		defer cancel()
		next := job(ctx)
		p.mu.Lock()
		delete(p.running, root)
		p.notBefore[root] = next
		p.mu.Unlock()
	}()
}
