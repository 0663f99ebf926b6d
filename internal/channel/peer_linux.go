package channel

import (
	"fmt"
	"net"
	"syscall"
)

// PeerCred returns the process id and user id of the process at the other
// end of conn, as the kernel recorded them when it connected or listened
// (SO_PEERCRED): the peer cannot choose them.
func PeerCred(conn *net.UnixConn) (pid, uid int, err error) {
	rc, err := conn.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var cred *syscall.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		cred, cerr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return 0, 0, err
	}
	if cerr != nil {
		return 0, 0, fmt.Errorf("peer credentials: %w", cerr)
	}
	return int(cred.Pid), int(cred.Uid), nil
}
