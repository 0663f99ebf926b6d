//go:build !unix

package integrity

import "io/fs"

// sysStat has nothing to add where the system's stat is not Unix's: the
// size, modification time and mode still tell most changes, and the racy
// window (see stat.racy) makes a recent file be hashed every time.
func sysStat(fs.FileInfo, *stat) {}
