//go:build !unix

package statemachine

// syncDir is a no-op where directories cannot be opened for syncing
// (Windows); the rename itself is atomic there.
func syncDir(string) error { return nil }
