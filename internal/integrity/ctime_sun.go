//go:build aix || solaris || illumos

package integrity

import "syscall"

func ctimeNS(st *syscall.Stat_t) int64 { return int64(st.Ctim.Sec)*1e9 + int64(st.Ctim.Nsec) }
