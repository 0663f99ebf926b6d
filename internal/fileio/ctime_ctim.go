//go:build linux || openbsd || dragonfly

package fileio

import "syscall"

func statCtimeNS(st *syscall.Stat_t) int64 { return int64(st.Ctim.Sec)*1e9 + int64(st.Ctim.Nsec) }
