//go:build unix

package proctree

import (
	"io/fs"
	"syscall"
)

// ownerOf is the uid owning a /proc/PID directory: the process's real user.
func ownerOf(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
