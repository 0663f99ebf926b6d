//go:build !unix

package fileio

// NoFollow is O_NOFOLLOW where the system has it; 0 here.
const NoFollow = 0
