package decisionlog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

var uuidForm = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

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
	if !uuidForm.MatchString(id) {
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
