//go:build unix

package fileio

import (
	"io/fs"
	"syscall"
)

// LinkCount is the number of hard links to the file fi describes.
func LinkCount(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
