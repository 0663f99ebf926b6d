package channel

import (
	"errors"
	"fmt"
	"hash/fnv"
	"path/filepath"
)

// ErrUnsafeDir is wrapped when the runtime directory exists but cannot be
// trusted (a link, another owner, a mode other than 0700, not a directory).
var ErrUnsafeDir = errors.New("unsafe des runtime directory")

// Key names one install of a companion build in the runtime directory: the
// 64-bit FNV-1a hash of its Go build ID and of the executable's path (symbolic
// links resolved, as os.Executable gives it on Linux), in hex. The build ID is
// already a hash; this only makes the name short and safe in a file name (FNV,
// not SHA-256, keeps the client's crypto initialisation out).
//
// The path is in the key so that each install of a build (a go install and a
// project-local build, a CI build beside a developer's, a copy in another
// directory) has a socket, a lock and a server of its own. The client accepts
// only a server whose executable is its companion file itself (the same
// device and inode, from the kernel's /proc/<pid>/exe): with the build ID
// alone in the name, the second copy's client found the socket held by the
// first copy's server, refused it, and decided every event in process. Two
// installs now cost two servers, never a weaker check: a server that runs
// another file, however alike, is still refused, so no cache of digests, which
// a process of the same user could forge, is ever trusted. A collision of
// keys would only make a client reach another install's server, which it then
// refuses.
func Key(buildID, exe string) string {
	h := fnv.New64a()
	h.Write([]byte(buildID))
	h.Write([]byte{0})
	h.Write([]byte(exe))
	return fmt.Sprintf("%016x", h.Sum64())
}

// SocketPath is where the server of the build named key listens.
func SocketPath(dir, key string) string { return filepath.Join(dir, "server-"+key+".sock") }

// MaxSocketPath is the longest socket path Linux binds (sun_path is 108
// bytes, with its terminating NUL).
const MaxSocketPath = 107

// ErrSocketPathTooLong is returned by CheckSocketPath.
var ErrSocketPathTooLong = errors.New("socket path too long")

// CheckSocketPath refuses a socket path the kernel cannot bind, naming the fix.
func CheckSocketPath(path string) error {
	if len(path) > MaxSocketPath {
		return fmt.Errorf("%w: %s is %d bytes, at most %d; set XDG_RUNTIME_DIR (or TMPDIR) to a shorter directory",
			ErrSocketPathTooLong, path, len(path), MaxSocketPath)
	}
	return nil
}

// LockPath is the lock that serialises starting that server.
func LockPath(dir, key string) string { return filepath.Join(dir, "server-"+key+".lock") }
