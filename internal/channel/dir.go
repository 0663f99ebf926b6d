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

// LockPath is the lock that serialises starting that server.
func LockPath(dir, key string) string { return filepath.Join(dir, "server-"+key+".lock") }
