package testenv

import "syscall"

// memoryTempBase is a memory file system to put temporary files on, with
// room to spare (a container's /dev/shm is often 64 MiB) and writable by
// this user, or "".
func memoryTempBase() string {
	const dir, room = "/dev/shm", 1 << 30
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil || st.Type != 0x01021994 /* TMPFS_MAGIC */ {
		return ""
	}
	if uint64(st.Bavail)*uint64(st.Bsize) < room {
		return ""
	}
	if syscall.Access(dir, 0o2|0o1) != nil { // W_OK|X_OK
		return ""
	}
	return dir
}
