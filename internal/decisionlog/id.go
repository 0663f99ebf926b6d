package decisionlog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// isUUIDv4 reports whether s is a version-4 UUID in its lower-case text
// form (8-4-4-4-12 hex digits), as NewDecisionID writes them. Checked by
// hand: a regexp compiled at init would cost every hook process.
func isUUIDv4(s string) bool {
	if len(s) != 36 || s[14] != '4' || !strings.ContainsRune("89ab", rune(s[19])) {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case !('0' <= c && c <= '9' || 'a' <= c && c <= 'f'):
			return false
		}
	}
	return true
}

// InstallationID returns the id kept in file, creating it (a random UUID)
// the first time: the labels.id of every event from this installation, as
// an OPA instance labels its events with its own id. Processes racing to
// create it all end up with the one that landed first.
func InstallationID(file string) (string, error) {
	if id, err := readID(file); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return id, err
	}
	id, err := NewDecisionID()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return "", fmt.Errorf("installation id: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".id-*")
	if err != nil {
		return "", fmt.Errorf("installation id: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(id + "\n")
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("installation id: %w", err)
	}
	// A link never replaces an existing file: the first id written wins,
	// and no process reads a file half written.
	if err := os.Link(tmp.Name(), file); err != nil && !errors.Is(err, fs.ErrExist) {
		// A file system without hard links: create the file exclusively.
		if err := createExclusive(file, id+"\n"); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", fmt.Errorf("installation id: %w", err)
		}
	}
	return readID(file)
}

func readID(file string) (string, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(raw))
	if !isUUIDv4(id) {
		return "", fmt.Errorf("installation id %s: %q is not a UUID; delete the file and des writes a new one", file, id)
	}
	return id, nil
}

func createExclusive(file, content string) error {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
