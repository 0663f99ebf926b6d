// Package server is the warm decision server's side of the channel (see
// internal/channel for the directory and the protocol): it listens on the
// per-user socket of its install (its build and its executable's path, see
// channel.Key) and runs a Handler for each request from a process of the
// same user.
//
// Choices:
//   - Listen takes the start lock (or adopts the one a starting client hands
//     over on descriptor 3), refuses when a live server already answers on
//     the socket, removes a stale socket file only under that lock, and binds
//     with umask 0177 so the socket is 0600 from birth.
//   - Every connection gets ReadTimeout from its acceptance to the client's
//     Commit: a client that never sends cannot pin a handler slot for longer.
//     At most MaxConns connections are served at once; more wait in the
//     listen backlog (their clients fall back at their deadline).
//   - The handler's context ends at the request's deadline (capped at
//     MaxRequestTime) and does not end when the server is told to stop:
//     Serve then stops accepting and waits for the requests in flight.
//   - Serve returns ErrIdle after IdleTimeout without a connection, and
//     ErrExecutableChanged when its executable's path names another file or
//     build (checked by stat on each connection, before the hello, and on
//     the idle tick); that connection is closed unanswered, the client falls
//     back, and its next call starts the new build's server.
//   - Options.Check may refuse a request before it is accepted (the client
//     decides in-process): the server hands it the request with PeerPID,
//     the client's pid from SO_PEERCRED, for what only the client's
//     process view can answer.
//   - A handler that panics yields a Reply with Error set: the client reports
//     it (the request was committed) rather than running it again.
//
// Linux only; elsewhere Listen and Serve return errors.ErrUnsupported.
package server
