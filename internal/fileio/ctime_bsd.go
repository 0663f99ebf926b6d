//go:build unix && !linux && !aix && !solaris && !illumos

package fileio

import "syscall"

func statCtimeNS(st *syscall.Stat_t) int64 { return st.Ctimespec.Sec*1e9 + st.Ctimespec.Nsec }
