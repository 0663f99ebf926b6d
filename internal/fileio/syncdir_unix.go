//go:build unix

package fileio

import (
	"errors"
	"os"
	"syscall"
)

// SyncDir makes a rename or removal in dir durable.
func SyncDir(dir string) error {
	// "dir/." opens a directory only: a FIFO swapped in for it fails
	// instead of blocking the open.
	d, err := os.Open(dir + "/.")
	if err != nil {
		return err
	}
	defer d.Close()
	return syncOpenDir(d)
}

// syncOpenDir syncs the open directory d.
func syncOpenDir(d *os.File) error {
	// Some file systems cannot sync a directory; the rename has happened
	// and there is nothing more to do there.
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return err
	}
	return nil
}
