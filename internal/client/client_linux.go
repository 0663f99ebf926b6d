package client

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/deterministic-exec/des/internal/channel"
)

// replyGrace is how long after the request's deadline the client still waits
// for the reply: the server's handler stops at the deadline, then writes.
const replyGrace = 500 * time.Millisecond

// restartBackoff: after a server that died before listening, no client
// starts another for this long (each call decides in-process meanwhile).
const restartBackoff = 10 * time.Second

func notAcceptedErr(cause, err error) error {
	return fmt.Errorf("%w: %w: %w", ErrNotAccepted, cause, err)
}

func notAccepted(cause error, detail string) error {
	if detail == "" {
		return fmt.Errorf("%w: %w", ErrNotAccepted, cause)
	}
	return fmt.Errorf("%w: %w: %s", ErrNotAccepted, cause, detail)
}

// Call sends req to the decision server and returns its reply. req.Version
// and req.Deadline are set here (the deadline: req's own, else ctx's, else
// Options.Timeout from now, whichever is earliest). A reply clears the
// install's fall-back record (see channel.Fallback); an error does not
// write one: the caller records the fall-back it makes (NoteFallback).
func (c *Client) Call(ctx context.Context, req *channel.Request) (*channel.Reply, error) {
	conn, at, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	rep, err := c.do(ctx, conn, at.buildID, req)
	if err == nil {
		channel.ClearFallback(at.dir, at.key)
	}
	return rep, err
}

// place is where the server of the companion's install listens.
type place struct {
	buildID, dir, key, sock string
}

// locate finds the companion's build ID and its install's socket (see
// channel.Key: the build ID and the companion's path, symbolic links
// resolved, name it), checking the runtime directory.
func (c *Client) locate() (place, error) {
	comp := c.opts.Companion
	if !filepath.IsAbs(comp) {
		return place{}, notAccepted(ErrNoServer, fmt.Sprintf("companion path %q is not absolute", comp))
	}
	id, err := c.ids.Read(comp)
	if err != nil {
		return place{}, notAcceptedErr(ErrNoServer, err)
	}
	// The server names its socket after os.Executable, which on Linux is
	// the file it runs with every link resolved: so does the client.
	real, err := filepath.EvalSymlinks(comp)
	if err != nil {
		return place{}, notAcceptedErr(ErrNoServer, err)
	}
	dir := c.opts.Dir
	if dir == "" {
		dir, err = channel.RuntimeDir(c.opts.LookupEnv)
	} else {
		_, err = channel.EnsureDir(dir)
	}
	if err != nil {
		return place{}, notAcceptedErr(ErrNoServer, err)
	}
	key := channel.Key(id, real)
	at := place{buildID: id, dir: dir, key: key, sock: channel.SocketPath(dir, key)}
	if err := channel.CheckSocketPath(at.sock); err != nil {
		return at, notAcceptedErr(ErrNoServer, err)
	}
	return at, nil
}

// dial connects to the server of the companion's install, starting one when
// none answers, and checks the process behind the socket (see peerCheck).
// It returns the connection and the install's place (with the build ID the
// server must announce).
func (c *Client) dial(ctx context.Context) (*net.UnixConn, place, error) {
	at, err := c.locate()
	if err != nil {
		return nil, at, err
	}
	dir, key, sock := at.dir, at.key, at.sock
	conn, err := c.connect(ctx, sock)
	if err == nil {
		return c.peerCheck(conn, at)
	}
	if !absent(err) {
		return nil, at, notAcceptedErr(ErrNoServer, err)
	}
	started, err := c.start(dir, key, sock)
	if err != nil {
		return nil, at, notAcceptedErr(ErrNoServer, fmt.Errorf("starting one: %w", err))
	}
	if !c.opts.WaitForStart {
		what := "another client is starting one"
		if started {
			what = "started one in the background"
		}
		return nil, at, notAccepted(ErrNoServer, what)
	}
	wctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	for {
		conn, err := c.connect(wctx, sock)
		if err == nil {
			return c.peerCheck(conn, at)
		}
		if !absent(err) {
			return nil, at, notAcceptedErr(ErrNoServer, err)
		}
		t := time.NewTimer(5 * time.Millisecond)
		select {
		case <-wctx.Done():
			t.Stop()
			return nil, at, notAccepted(ErrNoServer, fmt.Sprintf("none answered %s within %v", sock, c.opts.StartTimeout))
		case <-t.C:
		}
	}
}

// NoteFallback records that the caller decides the event in process because
// of why (see channel.Fallback), for `des-hook status`. Best effort: when the
// companion's install or the runtime directory cannot be found, there is
// nowhere to record it (status then finds the same problem itself).
func (c *Client) NoteFallback(why error) {
	at, err := c.locate()
	if at.key == "" || (err != nil && !errors.Is(err, channel.ErrSocketPathTooLong)) {
		return
	}
	if why == nil {
		why = errors.New("unknown")
	}
	_ = channel.WriteFallback(at.dir, at.key, channel.Fallback{
		Time: time.Now().UTC(), Cause: Cause(why), Why: why.Error(), Companion: c.opts.Companion, Socket: at.sock,
	})
}

// LastFallback reads the fall-back record of the companion's install (see
// NoteFallback); ok is false when the last event was not decided in process
// or none was recorded. sock is where the install's server listens.
func (c *Client) LastFallback() (f channel.Fallback, ok bool, err error) {
	at, err := c.locate()
	if at.key == "" {
		return f, false, err
	}
	return channel.ReadFallback(at.dir, at.key)
}

// Probe checks, without starting one or sending a request, whether the
// server of the companion's install answers and passes the client's checks
// (the peer's uid and executable, the protocol and build ID of its hello).
// It returns the server's pid and socket; its error is one Call would give.
func (c *Client) Probe(ctx context.Context) (pid int, sock string, err error) {
	at, err := c.locate()
	if err != nil {
		return 0, at.sock, err
	}
	conn, err := c.connect(ctx, at.sock)
	if err != nil {
		if absent(err) {
			return 0, at.sock, notAccepted(ErrNoServer, "nothing listens on "+at.sock)
		}
		return 0, at.sock, notAcceptedErr(ErrNoServer, err)
	}
	conn, _, err = c.peerCheck(conn, at)
	if err != nil {
		return 0, at.sock, err
	}
	defer conn.Close()
	deadline := time.Now().Add(c.opts.HelloTimeout)
	h, err := c.readHello(ctx, conn, at.buildID, deadline)
	if err != nil {
		return 0, at.sock, err
	}
	return h.PID, at.sock, nil
}

// absent: nothing listens on the socket (no file, or a stale one). On Linux
// ECONNREFUSED on a Unix socket means no listener; a full backlog is EAGAIN,
// which is not absent, so a busy server's socket is never taken for stale.
func absent(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED)
}

func (c *Client) connect(ctx context.Context, sock string) (*net.UnixConn, error) {
	d := net.Dialer{Timeout: c.opts.HelloTimeout}
	conn, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		return nil, err
	}
	return conn.(*net.UnixConn), nil
}

// peerCheck checks the process behind the socket before anything is sent
// to it: our uid, and an executable that is the companion file itself. The
// build ID it announces is checked by do, before the request is committed.
func (c *Client) peerCheck(conn *net.UnixConn, at place) (*net.UnixConn, place, error) {
	fail := func(cause error, detail any) (*net.UnixConn, place, error) {
		_ = conn.Close()
		if err, ok := detail.(error); ok {
			return nil, at, notAcceptedErr(cause, err)
		}
		return nil, at, notAccepted(cause, detail.(string))
	}
	pid, uid, err := channel.PeerCred(conn)
	if err != nil {
		return fail(ErrPeerMismatch, err)
	}
	if uid != os.Getuid() {
		return fail(ErrPeerMismatch, fmt.Sprintf("pid %d runs as uid %d", pid, uid))
	}
	exe := "/proc/" + strconv.Itoa(pid) + "/exe"
	peerFi, err := os.Stat(exe)
	if err != nil {
		return fail(ErrPeerMismatch, err)
	}
	compFi, err := os.Stat(c.opts.Companion)
	if err != nil {
		return fail(ErrNoServer, err)
	}
	if !os.SameFile(peerFi, compFi) {
		target, _ := os.Readlink(exe)
		return fail(ErrPeerMismatch, fmt.Sprintf("pid %d runs %s, not %s", pid, target, c.opts.Companion))
	}
	return conn, at, nil
}

// readHello reads the server's first frame, within the hello timeout, and
// checks its protocol and build. Nothing has been committed yet, so every
// failure here is ErrNotAccepted.
func (c *Client) readHello(ctx context.Context, conn *net.UnixConn, buildID string, deadline time.Time) (*channel.Hello, error) {
	hd := time.Now().Add(c.opts.HelloTimeout)
	if hd.After(deadline) {
		hd = deadline
	}
	_ = conn.SetReadDeadline(hd)
	if ctx.Err() != nil { // cancelled before the deadline above replaced do's
		return nil, notAcceptedErr(ErrNoServer, ctx.Err())
	}
	var h channel.Hello
	if err := channel.ReadJSON(conn, &h); err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, notAcceptedErr(ErrNoServer, fmt.Errorf("reading its hello: %w", err))
	}
	if h.Protocol != channel.Protocol {
		return nil, notAccepted(ErrRefused, fmt.Sprintf("it speaks protocol %d, this client %d", h.Protocol, channel.Protocol))
	}
	if h.BuildID != buildID {
		return nil, notAccepted(ErrPeerMismatch, fmt.Sprintf("pid %d announces build %q, %s is %q", h.PID, h.BuildID, c.opts.Companion, buildID))
	}
	_ = conn.SetReadDeadline(deadline)
	if ctx.Err() != nil {
		_ = conn.SetDeadline(time.Unix(1, 0))
	}
	return &h, nil
}

// pipelineMax is the largest request written before the server's hello is
// read: it fits in the socket's buffer, so the write never waits for a
// server that has not answered yet (a larger one waits for the hello, so
// that a server that never answers costs HelloTimeout, not the deadline).
const pipelineMax = 64 << 10

// do sends the request, and commits it once the server accepts it. A small
// request is written before the hello is read, saving the client a wait for
// the server (the peer was checked already, and nothing runs before the
// commit, which follows the hello's checks).
func (c *Client) do(ctx context.Context, conn *net.UnixConn, buildID string, req *channel.Request) (*channel.Reply, error) {
	deadline := time.Now().Add(c.opts.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if req.Deadline != 0 && time.UnixMilli(req.Deadline).Before(deadline) {
		deadline = time.UnixMilli(req.Deadline)
	}
	req.Version, req.Deadline = channel.Protocol, deadline.UnixMilli()
	// Cancelling ctx interrupts whatever read or write is under way.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	_ = conn.SetDeadline(deadline)

	pipelined := len(req.Stdin) <= pipelineMax
	if !pipelined {
		if _, err := c.readHello(ctx, conn, buildID, deadline); err != nil {
			return nil, err
		}
	}
	werr := channel.WriteRequest(conn, req)
	if pipelined {
		if _, err := c.readHello(ctx, conn, buildID, deadline); err != nil {
			return nil, err
		}
	}
	if err := werr; err != nil {
		// The server may have said why before closing (an oversized event).
		var a channel.Accept
		_ = conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if channel.ReadJSON(conn, &a) == nil && a.Error != "" {
			return nil, notAccepted(ErrRefused, a.Error)
		}
		return nil, notAcceptedErr(ErrNoServer, fmt.Errorf("sending the request: %w", err))
	}
	var a channel.Accept
	if err := channel.ReadJSON(conn, &a); err != nil {
		return nil, notAcceptedErr(ErrNoServer, fmt.Errorf("reading its accept: %w", err))
	}
	if !a.Accepted {
		return nil, notAccepted(ErrRefused, a.Error)
	}
	if ctx.Err() != nil || !time.Now().Before(deadline) {
		return nil, notAccepted(ErrNoServer, "the deadline passed before the request was committed")
	}
	if err := channel.WriteJSON(conn, &channel.Commit{Commit: true}); err != nil {
		// A failed write on a Unix socket delivered nothing: not committed.
		return nil, notAcceptedErr(ErrNoServer, fmt.Errorf("committing: %w", err))
	}
	// Committed: from here on the request may have had effects.
	_ = conn.SetDeadline(deadline.Add(replyGrace))
	if ctx.Err() != nil {
		_ = conn.SetDeadline(time.Unix(1, 0))
	}
	rep, err := channel.ReadReply(conn)
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("%w: %w", ErrNoAnswer, err)
	}
	if rep.Error != "" {
		return rep, fmt.Errorf("%w: %s", ErrNoAnswer, rep.Error)
	}
	return rep, nil
}

// start starts the companion's server unless another client is starting one
// (the lock is held) or one answers by now. started reports whether this
// call started it.
func (c *Client) start(dir, key, sock string) (started bool, err error) {
	l, ok, err := channel.TryLock(channel.LockPath(dir, key))
	if err != nil || !ok {
		return false, err
	}
	handed := false
	defer func() {
		if !handed {
			_ = l.Unlock()
		}
	}()
	d := net.Dialer{Timeout: c.opts.HelloTimeout}
	if conn, err := d.Dial("unix", sock); err == nil {
		_ = conn.Close()
		return false, nil
	} else if !absent(err) {
		return false, err
	}
	if at, ok := l.FailedStart(restartBackoff); ok {
		return false, fmt.Errorf("the server started at %s exited before listening; not restarting it before %s "+
			"(run %s %s to see why)", at.Format(time.TimeOnly), at.Add(restartBackoff).Format(time.TimeOnly),
			c.opts.Companion, strings.Join(c.opts.ServeArgs, " "))
	}
	if err := os.Remove(sock); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("remove stale socket: %w", err)
	}
	if err := l.MarkStarting(); err != nil {
		return false, err
	}
	cmd := exec.Command(c.opts.Companion, c.opts.ServeArgs...)
	cmd.Dir = "/"
	cmd.Env = c.serverEnv(dir)
	cmd.ExtraFiles = []*os.File{l.File()} // descriptor channel.LockFD
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return false, err
	}
	handed = true
	_ = l.Close() // the server holds the lock now, and releases it once it listens
	go func() { _ = cmd.Wait() }()
	c.opts.Logger.Debug("started a decision server", "pid", cmd.Process.Pid, "socket", sock)
	return true, nil
}

func (c *Client) serverEnv(dir string) []string {
	lookup := c.opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	env := []string{channel.EnvServerDir + "=" + dir, channel.EnvServerLockFD + "=" + strconv.Itoa(channel.LockFD)}
	for _, k := range []string{"PATH", "HOME"} {
		if v, ok := lookup(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, c.opts.ServerEnv...)
}
