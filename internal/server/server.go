package server

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/deterministic-exec/des/internal/channel"
)

// Handler runs one committed request. ctx ends at the request's deadline.
// It must return a Reply; a nil one is sent as exit 0 with no output.
type Handler func(ctx context.Context, req *channel.Request) *channel.Reply

// Options tune Serve; zero values take the defaults.
type Options struct {
	IdleTimeout    time.Duration // exit after this long without a connection; default 10 min
	ReadTimeout    time.Duration // from accepting a connection to the client's commit; default 5 s
	WriteTimeout   time.Duration // to write the reply; default 5 s
	MaxRequestTime time.Duration // cap on a handler's time, whatever the request's deadline; default 2 min
	MaxConns       int           // connections served at once; default 64
	Executable     string        // this server's executable, watched for a new build; default os.Executable()
	Logger         *slog.Logger  // default: discard
	// Check, when set, may refuse a request before anything is run (its
	// error is the refusal's text): the client then decides in a process
	// of its own. For requests the server cannot decide as that process
	// would.
	Check func(req *channel.Request) error
}

// Why Serve returned.
var (
	ErrIdle              = errors.New("decision server idle")
	ErrExecutableChanged = errors.New("decision server executable replaced by another build")
	ErrAlreadyRunning    = errors.New("a decision server already answers on the socket")
)

func (o Options) withDefaults() Options {
	if o.IdleTimeout == 0 {
		o.IdleTimeout = 10 * time.Minute
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = 5 * time.Second
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 5 * time.Second
	}
	if o.MaxRequestTime <= 0 {
		o.MaxRequestTime = 2 * time.Minute
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 64
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}
