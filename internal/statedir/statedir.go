// Package statedir locates DES's per-user state directory for a project: the
// place outside the project where DES keeps what an agent working inside the
// project must not be able to rewrite (last-good copies of protected files,
// the audit chain's witnessed head, the highest workflow statuses DES has
// seen).
//
// The directory is $DES_STATE_DIR when set, else $XDG_STATE_HOME/des, else
// ~/.local/state/des, else (no home) the system temporary directory's
// des-<uid>; below it each project has its own directory named by a hash of
// its absolute, symlink-resolved root, so two checkouts never share state.
package statedir

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// EnvVar names the setting that moves the state directory (tests, CI, or a
// user who keeps state elsewhere).
const EnvVar = "DES_STATE_DIR"

// Base is the per-user directory that holds every project's state.
func Base(lookupEnv func(string) (string, bool)) string {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	if v, ok := lookupEnv(EnvVar); ok && v != "" {
		return filepath.Clean(v)
	}
	if v, ok := lookupEnv("XDG_STATE_HOME"); ok && filepath.IsAbs(v) {
		return filepath.Join(v, "des")
	}
	if v, ok := lookupEnv("HOME"); ok && filepath.IsAbs(v) {
		return filepath.Join(v, ".local", "state", "des")
	}
	return filepath.Join(os.TempDir(), "des-"+strconv.Itoa(os.Getuid()))
}

// ProjectKey names a project root in the state directory: the first 16 bytes
// of the SHA-256 of its absolute path with links resolved, in hex.
func ProjectKey(root string) string {
	abs, err := filepath.Abs(root)
	if err != nil {
		abs = root
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	sum := sha256.Sum256([]byte(abs))
	return hex.EncodeToString(sum[:16])
}

// For returns the project's state directory (not created).
func For(root string, lookupEnv func(string) (string, bool)) string {
	return filepath.Join(Base(lookupEnv), "projects", ProjectKey(root))
}

// Ensure returns the project's state directory, creating it (mode 0700) when
// missing. A path that exists but is not a directory is an error.
func Ensure(root string, lookupEnv func(string) (string, bool)) (string, error) {
	dir := For(root, lookupEnv)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("des state directory %s: %w", dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("des state directory %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("des state directory %s: %w", dir, errors.New("not a directory"))
	}
	return dir, nil
}

// What des keeps in a project's state directory and in the per-user base,
// outside the agent's reach (the sandbox denies writes there).

// Evidence is where des keeps what it saw itself (the runs Gate 1 allowed,
// Gate 2's verdicts, the test runs): the gates trust these records, not
// the copies in the project.
func Evidence(stateDir string) string { return filepath.Join(stateDir, "runs") }

// Attestations is where des keeps the attestations of the audit trail's
// lines it appended (a trail the agent may also append to is attested).
func Attestations(stateDir string) string { return filepath.Join(stateDir, "audit-attested") }

// AuditWitness is the per-user directory of the audit trail's witnesses.
func AuditWitness(lookupEnv func(string) (string, bool)) string {
	return filepath.Join(Base(lookupEnv), "audit-witness")
}
