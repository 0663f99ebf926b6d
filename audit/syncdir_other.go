//go:build !unix

package audit

// syncDir is a no-op where directories cannot be opened for syncing
// (Windows); renames are atomic there.
func syncDir(string) error { return nil }
