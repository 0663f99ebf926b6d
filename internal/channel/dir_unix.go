//go:build unix

package channel

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// RuntimeDir returns the per-user runtime directory (see the package
// documentation), creating it when missing. lookupEnv nil means os.LookupEnv.
func RuntimeDir(lookupEnv func(string) (string, bool)) (string, error) {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	uid := os.Getuid()
	if v, ok := lookupEnv("XDG_RUNTIME_DIR"); ok && filepath.IsAbs(v) && trustedParent(v, uid) {
		return EnsureDir(filepath.Join(v, "des"))
	}
	return EnsureDir(filepath.Join(os.TempDir(), "des-run-"+strconv.Itoa(uid)))
}

// trustedParent: XDG_RUNTIME_DIR is only used when it is ours and nobody
// else can write in it (else someone could swap the des directory in it).
func trustedParent(dir string, uid int) bool {
	fi, err := os.Stat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o022 != 0 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == uid
}

// EnsureDir creates dir with mode 0700 when missing (its parent must exist),
// and checks that what is there is a real directory, owned by the current
// user, with mode exactly 0700. It returns dir.
func EnsureDir(dir string) (string, error) {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("des runtime directory %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", fmt.Errorf("des runtime directory %s: %w", dir, err)
	}
	uid := os.Getuid()
	var why string
	switch st, _ := fi.Sys().(*syscall.Stat_t); {
	case fi.Mode()&fs.ModeSymlink != 0:
		why = "is a symbolic link"
	case !fi.IsDir():
		why = "is not a directory"
	case st == nil || int(st.Uid) != uid:
		why = "is owned by another user"
	case fi.Mode().Perm() != 0o700:
		// A mkdir under a restrictive umask could give less than 0700; fix
		// our own fresh directory rather than refuse it.
		if fi.Mode().Perm()&0o077 == 0 {
			if err := os.Chmod(dir, 0o700); err == nil {
				return dir, nil
			}
		}
		why = fmt.Sprintf("has mode %04o, not 0700", fi.Mode().Perm())
	default:
		return dir, nil
	}
	return "", fmt.Errorf("%w: %s %s (uid %d expected); remove it (rm -rf %s) and des recreates it, "+
		"or set XDG_RUNTIME_DIR to a private directory", ErrUnsafeDir, dir, why, uid, dir)
}
