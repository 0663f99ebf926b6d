//go:build !linux && !darwin && !freebsd

package des

import "io/fs"

// inodeCtime has no inode or change time to give here: size and
// modification time remain.
func inodeCtime(fs.FileInfo) (uint64, int64) { return 0, 0 }
