package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/internal/channel"
	"github.com/deterministic-exec/des/internal/client"
)

// serverStatus is what `des-hook status` says of the warm decision server of
// this install of des-engine (its build and its path: each install has a
// server of its own): whether one answers and passes the client's checks,
// and, when the last hook event was decided in process instead, why and what
// fixes it.
type serverStatus struct {
	Mode         string            `json:"mode"`                    // decision_server: auto or off
	Warm         bool              `json:"warm"`                    // a server of this install answers and passes the checks
	PID          int               `json:"pid,omitempty"`           // its pid
	Socket       string            `json:"socket,omitempty"`        // where this install's server listens
	NotUsed      string            `json:"not_used,omitempty"`      // why no server is used now
	LastFallback *channel.Fallback `json:"last_fallback,omitempty"` // the last event decided in process, when the last one was
	Fix          string            `json:"fix,omitempty"`           // what makes the hook use the server again
}

// decisionServerStatus probes this install's server as the client would
// (without starting one or sending anything) and reads the clients' record
// of their last fall-back.
func decisionServerStatus(ctx context.Context, cfg des.Config, lookupEnv func(string) (string, bool)) serverStatus {
	st := serverStatus{Mode: cfg.DecisionServer}
	if st.Mode == des.DecisionServerOff {
		st.NotUsed = "decision_server is off (DES_DECISION_SERVER or .des/config.json): every event is decided by des-engine in a process of its own"
		st.Fix = `unset DES_DECISION_SERVER, or set "decision_server": "auto" in .des/config.json`
		return st
	}
	exe, err := os.Executable()
	if err != nil {
		st.NotUsed = "cannot find des-engine's own executable: " + err.Error()
		return st
	}
	c := client.New(client.Options{Companion: exe, LookupEnv: lookupEnv, HelloTimeout: time.Second})
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	pid, sock, perr := c.Probe(pctx)
	cancel()
	st.Socket = sock
	if perr == nil {
		st.Warm, st.PID = true, pid
	} else {
		st.NotUsed = channel.Printable(strings.TrimPrefix(perr.Error(), client.ErrNotAccepted.Error()+": "))
	}
	if f, ok, err := c.LastFallback(); err == nil && ok {
		f.Why = strings.TrimPrefix(f.Why, client.ErrNotAccepted.Error()+": ")
		st.LastFallback = &f
	}
	st.Fix = serverFix(st, perr)
	return st
}

// serverFix says what makes the hook use the warm server, from why the probe
// failed and why the last event fell back; "" when nothing needs fixing.
func serverFix(st serverStatus, probe error) string {
	cause := ""
	switch {
	case probe != nil:
		cause = client.Cause(probe)
	case st.LastFallback != nil:
		cause = st.LastFallback.Cause
	}
	switch cause {
	case "":
		return ""
	case channel.CausePeerMismatch:
		return "another process holds this des-engine's socket (the reason names its pid and executable); it is not this des-engine file, " +
			"so it is refused: stop it, and the next hook event starts this install's own server " +
			"(each copy of des-engine, in each directory, has a socket and a server of its own)"
	case channel.CauseRefused:
		return "the server refuses an event it cannot decide as a process of its own would (one naming a /proc or /dev/fd path, say); " +
			"such events are decided in process by design, the others go to the server"
	case channel.CauseNotSent:
		return "the event could not be read or is larger than 8 MiB, so it was not sent; des-engine decided it in process"
	case channel.CauseUnsupported:
		return "there is no decision server on this platform: every event is decided in process"
	case channel.CauseNoServer:
		if probe == nil {
			return "" // it was starting; it answers now
		}
		if errors.Is(probe, channel.ErrUnsafeDir) || errors.Is(probe, channel.ErrSocketPathTooLong) {
			return "see the reason above"
		}
		return "the next hook event starts one in the background (the event after it uses it); if none stays up, " +
			"run `des-hook serve` in a terminal (DES_LOG_LEVEL=debug) to see why"
	}
	return "run `des-hook serve` in a terminal (DES_LOG_LEVEL=debug) to see why the server is not used"
}

// printServerStatus writes the status's decision-server line, and the
// last fall-back and the fix under it.
func printServerStatus(w io.Writer, st serverStatus) {
	switch {
	case st.Mode == des.DecisionServerOff:
		fmt.Fprintf(w, "decision server: not used: %s\n", st.NotUsed)
	case st.Warm:
		fmt.Fprintf(w, "decision server: warm (pid %d, %s)\n", st.PID, st.Socket)
	default:
		fmt.Fprintf(w, "decision server: not used: %s\n", st.NotUsed)
	}
	if f := st.LastFallback; f != nil {
		fmt.Fprintf(w, "  the last hook event (%s) was decided in process: %s\n", f.Time.UTC().Format(time.RFC3339), f.Why)
	}
	if st.Fix != "" {
		fmt.Fprintf(w, "  fix: %s\n", st.Fix)
	}
}
