//go:build !unix

package fileio

import "os"

// SyncDir is a no-op where directories cannot be opened for syncing
// (Windows); the rename itself is atomic there.
func SyncDir(string) error { return nil }

func syncOpenDir(*os.File) error { return nil }
