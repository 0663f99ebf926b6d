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

// Key names a companion build in the runtime directory: the 64-bit FNV-1a
// hash of its Go build ID, in hex. The build ID is already a hash; this only
// makes it short and safe in a file name (FNV, not SHA-256, keeps the
// client's crypto initialisation out). A collision would only make a client
// reach the other build's server, whose build ID it then refuses.
func Key(buildID string) string {
	h := fnv.New64a()
	h.Write([]byte(buildID))
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
