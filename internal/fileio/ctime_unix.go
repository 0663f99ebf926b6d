//go:build unix

package fileio

import (
	"io/fs"
	"syscall"
	"time"
)

// StatCtimeNS is the change time of st in nanoseconds since the epoch.
func StatCtimeNS(st *syscall.Stat_t) int64 { return statCtimeNS(st) }

// LastChange is the later of fi's modification and change times: a file's
// age that no tool can set back (touch -d moves the modification time
// only, and the change time with it to now).
func LastChange(fi fs.FileInfo) time.Time {
	t := fi.ModTime()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if c := time.Unix(0, statCtimeNS(st)); c.After(t) {
			t = c
		}
	}
	return t
}
