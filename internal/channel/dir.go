package channel

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"
)

// ErrUnsafeDir is wrapped when the runtime directory exists but cannot be
// trusted (a link, another owner, a mode other than 0700, not a directory).
var ErrUnsafeDir = errors.New("unsafe des runtime directory")

// Key names a companion build in the runtime directory: the first 12 hex
// digits of the SHA-256 of its Go build ID.
func Key(buildID string) string {
	sum := sha256.Sum256([]byte(buildID))
	return hex.EncodeToString(sum[:6])
}

// SocketPath is where the server of the build named key listens.
func SocketPath(dir, key string) string { return filepath.Join(dir, "server-"+key+".sock") }

// LockPath is the lock that serialises starting that server.
func LockPath(dir, key string) string { return filepath.Join(dir, "server-"+key+".lock") }
