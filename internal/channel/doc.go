// Package channel is what the thin hook client and the warm decision server
// share: where the per-user runtime directory is, how a companion binary is
// named there (its Go build ID and its path), and the wire protocol between the two. It
// imports only the standard library, so the client stays small.
//
// # Runtime directory
//
// $XDG_RUNTIME_DIR/des when XDG_RUNTIME_DIR is set, absolute, a directory
// owned by us and not writable by group or others; otherwise
// os.TempDir()/des-run-<uid>. (Not des-<uid>: that name is already the state
// directory's fallback when there is no home, and the two must not share
// rules.) The directory is created mode 0700; an existing one must be a real
// directory (not a link) owned by our uid with mode exactly 0700, else every
// caller refuses it with an error naming the path and the fix, and the client
// decides in-process.
//
// In it, per install of the companion: server-<key>.sock (the listening
// socket, mode 0600) and server-<key>.lock (flock, serialising the start of a
// server and the removal of a stale socket), where key is a 16-hex-digit hash
// of the companion's Go build ID and of its path, links resolved (see Key):
// two des versions coexist, and so do two copies of one version in two
// directories, each with a server of its own. Beside them, fallback-<key>.json
// records why the install's last hook event was decided in process, if it
// was (see Fallback), for `des-hook status`.
//
// # Protocol
//
// Every message is a frame: a 4-byte big-endian length, then that many bytes.
// Structured messages are JSON; the event (stdin) and the outputs travel as raw
// frames of their own, so an 8 MiB event is not inflated by base64. One
// connection carries one request:
//
//	server → Hello      {protocol, build_id, pid}
//	client → Request    JSON frame, then a raw stdin frame
//	server → Accept     {"accepted": true} or {"accepted": false, "error": …}
//	client → Commit     {"commit": true}
//	server → Reply      JSON frame {exit, error}, then raw stdout and stderr frames
//
// The server writes its Hello as soon as it accepts the connection, and the
// client may write its Request before reading the Hello (it does so for a
// request of up to 64 KiB, which the socket buffers, saving a wait for the
// server); it checks the Hello before it commits, and the process behind the
// socket (its uid and executable) before it writes anything.
//
// The server runs the handler only after it has read the client's Commit, and
// the client sends Commit only once it has seen Accept. So the client alone
// decides whether anything can have happened: before its Commit is written,
// nothing has (fall back and decide in-process); after, the request may have
// had effects, and a missing Reply is an error to report, never a reason to
// run the request again. An Accept alone would not be enough: a client that
// gave up waiting for it cannot tell whether the server wrote it a moment
// later and went on.
//
// Sizes are bounded on both sides: JSON frames MaxMeta, stdin MaxStdin (the
// hook's own 8 MiB event limit), stdout plus stderr MaxOutput.
package channel
