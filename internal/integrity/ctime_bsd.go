//go:build unix && !linux && !aix && !solaris && !illumos

package integrity

import "syscall"

func ctimeNS(st *syscall.Stat_t) int64 { return st.Ctimespec.Sec*1e9 + st.Ctimespec.Nsec }
