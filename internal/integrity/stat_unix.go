//go:build unix

package integrity

import (
	"io/fs"
	"syscall"

	"github.com/deterministic-exec/des/internal/fileio"
)

// sysStat adds what only the system's stat has: the change time, which no
// tool can set back (touch -d resets the modification time only), the inode
// and the link count.
func sysStat(fi fs.FileInfo, s *stat) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return
	}
	s.Ino = uint64(st.Ino)
	s.Nlink = uint64(st.Nlink)
	s.CTime = fileio.StatCtimeNS(st)
}
