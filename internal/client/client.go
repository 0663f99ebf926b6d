// Package client is the thin hook's side of the channel to the warm decision
// server (see internal/channel for the directory and the protocol). It links
// only the standard library and internal/channel: no policy engine, no schema
// library (a test checks the import graph).
//
// Call sends one request and returns the server's reply, or an error of one
// of two classes, which decide what the caller does next:
//
//   - ErrNotAccepted (with a more precise cause: ErrNoServer,
//     ErrPeerMismatch, ErrRefused, errors.ErrUnsupported, …): nothing was
//     run by a server; decide in-process, exactly as without a server.
//   - ErrNoAnswer: the request was committed (see the protocol) and may have
//     had effects, but no reply came by the deadline; do not run it again,
//     report an internal error where des is in charge.
//
// Before sending anything the client checks the server, because any process
// of the same user (the agent included) could bind a socket that answers
// "allow": the socket's peer (SO_PEERCRED) must run as our uid, and its
// /proc/<pid>/exe must be the very companion file the client would start
// (os.SameFile). Before committing, the build ID it announces must be that
// file's (a small request is written before that hello is read: see
// internal/channel).
//
// Each install of the companion has a socket of its own, named after its
// build ID and its path with links resolved (channel.Key): two copies of one
// build in two directories run a server each, and neither client ever
// accepts the other's server. Accepting a byte-identical copy instead would
// need its digest: hashing a 36 MB file on every event costs more than the
// server saves, and a digest cached anywhere a process of the user can write
// could be forged by that process (the agent), so no such cache is trusted.
//
// Start on demand: when no server answers (no socket, or a stale one), the
// client takes the start lock, starts the companion with Options.ServeArgs
// detached (its own session, stdio on /dev/null, working directory /, an
// environment of PATH and HOME only: a request carries its own), and hands
// the lock to it; the server releases it once it listens, so racing clients
// start exactly one. By default the client does not wait for that start: the
// first (cold) call decides in-process (ErrNoServer) while the server warms
// up for the next ones, since a cold server start costs more than deciding
// in-process. Options.WaitForStart waits instead, up to StartTimeout. A
// server that exits before it listens is not restarted for 10 s (the lock
// file records how the last start went), so a companion that cannot serve
// costs the calls nothing but the fallback.
//
// A caller that falls back records why with NoteFallback (a small file in
// the runtime directory, replaced whole each time, removed by the next call
// the server answers); `des-hook status` shows it beside Probe's verdict,
// which checks the install's server as Call would, without starting one or
// sending anything.
//
// Linux only; elsewhere Call always returns ErrNotAccepted wrapping
// errors.ErrUnsupported.
package client

import (
	"errors"
	"log/slog"
	"time"

	"github.com/deterministic-exec/des/internal/channel"
)

// Error classes; see the package documentation.
var (
	ErrNotAccepted = errors.New("the decision server did not take the request")
	ErrNoAnswer    = errors.New("the decision server took the request but did not answer in time")
)

// Causes wrapped with ErrNotAccepted.
var (
	ErrNoServer     = errors.New("no decision server is running")
	ErrPeerMismatch = errors.New("the process behind the decision server socket is not the des companion")
	ErrRefused      = errors.New("the decision server refused the request")
)

// Options configure a Client. Companion is required.
type Options struct {
	Companion    string                      // absolute path of the companion executable (the server)
	Dir          string                      // runtime directory; "" → channel.RuntimeDir(LookupEnv)
	LookupEnv    func(string) (string, bool) // default os.LookupEnv
	ServeArgs    []string                    // arguments that make the companion serve; default ["serve"]
	ServerEnv    []string                    // added to a started server's environment
	WaitForStart bool                        // wait for a server this call starts, instead of falling back
	StartTimeout time.Duration               // bound on that wait; default 2 s
	HelloTimeout time.Duration               // bound on connecting and the server's hello; default 1 s
	Timeout      time.Duration               // a request's deadline when neither it nor ctx has one; default 30 s
	Logger       *slog.Logger                // default: discard
}

// Client talks to the decision server of one companion build.
type Client struct {
	opts Options
	ids  channel.BuildIDs
}

// New returns a client; it does no I/O.
func New(opts Options) *Client {
	if len(opts.ServeArgs) == 0 {
		opts.ServeArgs = []string{"serve"}
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 2 * time.Second
	}
	if opts.HelloTimeout <= 0 {
		opts.HelloTimeout = time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Client{opts: opts}
}

// Cause classifies why a call was not taken, for the fall-back record
// (channel.Fallback's Cause* values).
func Cause(err error) string {
	switch {
	case errors.Is(err, ErrPeerMismatch):
		return channel.CausePeerMismatch
	case errors.Is(err, ErrRefused):
		return channel.CauseRefused
	case errors.Is(err, errors.ErrUnsupported):
		return channel.CauseUnsupported
	case errors.Is(err, ErrNoServer):
		return channel.CauseNoServer
	case errors.Is(err, ErrNotSent):
		return channel.CauseNotSent
	}
	return channel.CauseOther
}

// ErrNotSent is for the caller's own fall-backs: it did not send the event
// (it could not read it, or it is too large for the channel).
var ErrNotSent = errors.New("the event was not sent to the decision server")
