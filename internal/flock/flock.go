// Package flock is the one flock(2) wrapper des has: an exclusive lock on an
// open file, retried on EINTR. internal/filelock builds its locks on it, and
// internal/channel its server start lock, which must stay a plain *os.File
// because the server inherits the descriptor (flock belongs to the open file
// description, which parent and child share).
//
// The package imports only the standard library: the thin hook client links
// it through internal/channel.
package flock
