package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/deterministic-exec/des/internal/channel"
)

// Self returns this process's executable, its Go build ID and the key of
// its install (channel.Key). On Linux os.Executable is the file the process
// runs with every link resolved, as the client resolves its companion's path.
func Self() (exe, buildID, key string, err error) {
	exe, err = os.Executable()
	if err != nil {
		return "", "", "", err
	}
	id, err := channel.ReadBuildID(exe)
	if err != nil {
		return "", "", "", err
	}
	return exe, id, channel.Key(id, exe), nil
}

// Inherited returns the runtime directory and the start lock a client handed
// to the server it started (channel.EnvServerDir, channel.EnvServerLockFD),
// or "" and nil when this server was started by hand. With lookupEnv nil it
// reads the process environment and removes both variables from it, so the
// programs the server runs do not inherit them.
func Inherited(lookupEnv func(string) (string, bool)) (dir string, lock *channel.StartLock) {
	own := lookupEnv == nil
	if own {
		lookupEnv = os.LookupEnv
	}
	dir, _ = lookupEnv(channel.EnvServerDir)
	if v, _ := lookupEnv(channel.EnvServerLockFD); v == strconv.Itoa(channel.LockFD) {
		lock = channel.AdoptLock(os.NewFile(uintptr(channel.LockFD), "des-server-lock"))
	}
	if own {
		_ = os.Unsetenv(channel.EnvServerDir)
		_ = os.Unsetenv(channel.EnvServerLockFD)
	}
	return dir, lock
}

// isLockFile: an inherited descriptor is only trusted as the start lock
// when it is the lock file of this install (the variable could be set by
// hand, with descriptor 3 something else entirely).
func isLockFile(lock *channel.StartLock, path string) bool {
	if lock == nil || lock.File() == nil {
		return false
	}
	got, err := lock.File().Stat()
	if err != nil {
		return false
	}
	want, err := os.Stat(path)
	return err == nil && os.SameFile(got, want)
}

// Listen binds the socket of the build named key in the runtime directory
// dir (checked as channel.EnsureDir does). lock is the start lock when
// inherited from the client that started this server; nil means take it
// here. Either way it is released before Listen returns. A live server on
// the socket is ErrAlreadyRunning; a stale socket file is removed.
func Listen(ctx context.Context, dir, key string, lock *channel.StartLock) (*net.UnixListener, error) {
	if _, err := channel.EnsureDir(dir); err != nil {
		if lock != nil {
			_ = lock.Unlock()
		}
		return nil, err
	}
	if err := channel.CheckSocketPath(channel.SocketPath(dir, key)); err != nil {
		if lock != nil {
			_ = lock.Unlock()
		}
		return nil, err
	}
	if !isLockFile(lock, channel.LockPath(dir, key)) {
		lock = nil // not ours to release or close
	}
	if lock == nil {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		l, err := channel.AcquireLock(lctx, channel.LockPath(dir, key))
		cancel()
		if err != nil {
			return nil, err
		}
		lock = l
	}
	defer func() { _ = lock.Unlock() }()
	sock := channel.SocketPath(dir, key)
	if c, err := net.DialTimeout("unix", sock, time.Second); err == nil {
		_ = c.Close()
		return nil, fmt.Errorf("%w: %s", ErrAlreadyRunning, sock)
	}
	if err := os.Remove(sock); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket: %w", err)
	}
	// The umask makes the socket 0600 from birth; nobody else can reach into
	// the 0700 directory anyway. No other goroutine creates files yet.
	old := syscall.Umask(0o177)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", sock, err)
	}
	if err := os.Chmod(sock, 0o600); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("listen on %s: %w", sock, err)
	}
	_ = lock.MarkListening(os.Getpid()) // only a hint against restart loops
	return ln, nil
}

type srv struct {
	opts    Options
	h       Handler
	base    context.Context
	hello   channel.Hello
	exe     string
	exeStat os.FileInfo
	ids     channel.BuildIDs
	uid     int

	mu      sync.Mutex
	active  int
	last    time.Time
	changed bool
	stop    chan error // first reason to stop
}

// Serve accepts connections on ln until ctx ends (returning ctx's error),
// the server is idle (ErrIdle) or its executable changed
// (ErrExecutableChanged); it closes ln and waits for the requests in flight.
func Serve(ctx context.Context, ln *net.UnixListener, h Handler, opts Options) error {
	opts = opts.withDefaults()
	s := &srv{opts: opts, h: h, base: context.WithoutCancel(ctx), uid: os.Getuid(), last: time.Now(), stop: make(chan error, 1)}
	s.exe = opts.Executable
	if s.exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		s.exe = exe
	}
	fi, err := os.Stat(s.exe)
	if err != nil {
		return err
	}
	id, err := s.ids.Read(s.exe)
	if err != nil {
		return err
	}
	s.exeStat = fi
	s.hello = channel.Hello{Protocol: channel.Protocol, BuildID: id, PID: os.Getpid()}

	var wg sync.WaitGroup
	sem := make(chan struct{}, opts.MaxConns)
	acceptDone := make(chan struct{})
	go func() {
		defer close(acceptDone)
		for {
			sem <- struct{}{}
			conn, err := ln.AcceptUnix()
			if err != nil {
				<-sem
				if errors.Is(err, net.ErrClosed) {
					return
				}
				opts.Logger.Warn("accept", "err", err)
				time.Sleep(10 * time.Millisecond) // EMFILE and the like: do not spin
				continue
			}
			s.begin()
			wg.Add(1)
			go func() {
				defer func() { <-sem; s.end(); wg.Done() }()
				s.serveConn(conn)
			}()
		}
	}()

	tick := min(opts.IdleTimeout/4, time.Minute)
	if opts.IdleTimeout < 0 {
		tick = time.Minute
	}
	t := time.NewTicker(max(tick, 10*time.Millisecond))
	defer t.Stop()
	var why error
	for why == nil {
		select {
		case <-ctx.Done():
			why = ctx.Err()
		case why = <-s.stop:
		case <-t.C:
			if s.outdated() {
				why = ErrExecutableChanged
			} else if opts.IdleTimeout > 0 && s.idleFor() >= opts.IdleTimeout {
				why = ErrIdle
			}
		}
	}
	_ = ln.Close() // unlinks the socket
	<-acceptDone
	wg.Wait()
	opts.Logger.Info("decision server stops", "why", why)
	return why
}

func (s *srv) begin() {
	s.mu.Lock()
	s.active++
	s.last = time.Now()
	s.mu.Unlock()
}

func (s *srv) end() {
	s.mu.Lock()
	s.active--
	s.last = time.Now()
	s.mu.Unlock()
}

func (s *srv) idleFor() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active > 0 {
		return 0
	}
	return time.Since(s.last)
}

// outdated reports whether the executable's path now names another file or
// another build: a stat, and a read of the build ID only when the file
// changed in place. Another file with the same build ID (go install rewrites
// it) counts as changed too: clients compare our /proc/<pid>/exe with that
// path, would refuse us for good, and could never replace us while we answer.
func (s *srv) outdated() bool {
	s.mu.Lock()
	changed := s.changed
	s.mu.Unlock()
	if changed {
		return true
	}
	fi, err := os.Stat(s.exe)
	switch {
	case err != nil || !os.SameFile(fi, s.exeStat):
	case fi.Size() == s.exeStat.Size() && fi.ModTime().Equal(s.exeStat.ModTime()):
		return false
	default:
		if id, err := s.ids.Read(s.exe); err == nil && id == s.hello.BuildID {
			return false
		}
	}
	s.mu.Lock()
	s.changed = true
	s.mu.Unlock()
	select {
	case s.stop <- ErrExecutableChanged:
	default:
	}
	return true
}

func (s *srv) serveConn(conn *net.UnixConn) {
	defer conn.Close()
	log := s.opts.Logger
	pid, uid, err := channel.PeerCred(conn)
	if err != nil || uid != s.uid {
		log.Warn("refused a connection from another user", "uid", uid, "err", err)
		return
	}
	if s.outdated() {
		return // no hello: the client falls back, and its next call starts the new build's server
	}
	_ = conn.SetDeadline(time.Now().Add(s.opts.ReadTimeout))
	if err := channel.WriteJSON(conn, &s.hello); err != nil {
		return
	}
	req, err := channel.ReadRequest(conn)
	if err != nil {
		if errors.Is(err, channel.ErrTooLarge) {
			refuse(conn, "request too large: "+err.Error())
		}
		log.Debug("reading a request", "err", err)
		return
	}
	now := time.Now()
	deadline := time.UnixMilli(req.Deadline)
	switch {
	case req.Version != channel.Protocol:
		refuse(conn, fmt.Sprintf("protocol %d, this server speaks %d", req.Version, channel.Protocol))
		return
	case req.Deadline == 0 || !deadline.After(now):
		refuse(conn, "the request's deadline has passed")
		return
	}
	req.PeerPID = pid
	if s.opts.Check != nil {
		if err := s.opts.Check(req); err != nil {
			refuse(conn, err.Error()) // nothing was run: the client decides in-process
			return
		}
	}
	if cap := now.Add(s.opts.MaxRequestTime); deadline.After(cap) {
		deadline = cap
	}
	if err := channel.WriteJSON(conn, &channel.Accept{Accepted: true}); err != nil {
		return
	}
	var c channel.Commit
	if err := channel.ReadJSON(conn, &c); err != nil || !c.Commit {
		return // the client did not commit: nothing was run
	}
	ctx, cancel := context.WithDeadline(s.base, deadline)
	rep := s.run(ctx, req)
	cancel()
	_ = conn.SetDeadline(time.Now().Add(s.opts.WriteTimeout))
	if err := channel.WriteReply(conn, rep); errors.Is(err, channel.ErrTooLarge) {
		_ = channel.WriteReply(conn, &channel.Reply{Exit: rep.Exit, Error: "reply too large: " + err.Error()})
	}
}

func (s *srv) run(ctx context.Context, req *channel.Request) (rep *channel.Reply) {
	defer func() {
		if r := recover(); r != nil {
			s.opts.Logger.Error("handler panicked", "panic", r)
			rep = &channel.Reply{Exit: 1, Error: fmt.Sprintf("decision server failed: %v", r)}
		}
	}()
	rep = s.h(ctx, req)
	if rep == nil {
		rep = &channel.Reply{}
	}
	return rep
}

func refuse(conn *net.UnixConn, why string) {
	_ = channel.WriteJSON(conn, &channel.Accept{Accepted: false, Error: why})
}
