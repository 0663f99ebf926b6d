//go:build !unix

package fileio

import (
	"io/fs"
	"time"
)

// LastChange is fi's modification time where the system reports no change
// time.
func LastChange(fi fs.FileInfo) time.Time { return fi.ModTime() }
