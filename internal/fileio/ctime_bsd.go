//go:build unix && !linux && !openbsd && !dragonfly && !aix && !solaris && !illumos

package fileio

import "syscall"

func statCtimeNS(st *syscall.Stat_t) int64 {
	return int64(st.Ctimespec.Sec)*1e9 + int64(st.Ctimespec.Nsec)
}
