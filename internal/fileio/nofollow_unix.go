//go:build unix

package fileio

import "syscall"

// NoFollow is O_NOFOLLOW where the system has it: an open of a path whose
// last element is a symbolic link fails instead of following it.
const NoFollow = syscall.O_NOFOLLOW
