package channel

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// ErrNoBuildID is wrapped when an executable carries no Go build ID (not an
// ELF Go binary, or linked with -buildid=): it cannot be told apart from
// another build, so no server is used for it.
var ErrNoBuildID = errors.New("no Go build ID")

// The linker writes the build ID as an ELF note of this name and type in a
// section of its own (cmd/link: ELF_NOTE_GOBUILDID_TAG).
const (
	goNoteSection = ".note.go.buildid"
	goNoteName    = "Go\x00\x00"
	goNoteType    = 4
)

type buildIDKey struct {
	path  string
	size  int64
	mtime time.Time
	ino   uint64
}

// BuildIDs reads Go build IDs, remembering them by path, size, modification
// time and inode, so a server that checks its own executable on each request
// or a client that dials repeatedly reads each file once.
type BuildIDs struct {
	mu sync.Mutex
	m  map[buildIDKey]string
}

// Read returns the Go build ID of the executable at path.
func (c *BuildIDs) Read(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	k := buildIDKey{path: path, size: fi.Size(), mtime: fi.ModTime(), ino: inode(fi)}
	c.mu.Lock()
	id, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return id, nil
	}
	id, err = ReadBuildID(path)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[buildIDKey]string{}
	}
	c.m[k] = id
	c.mu.Unlock()
	return id, nil
}

// ReadBuildID reads the Go build ID from the ELF note .note.go.buildid of the
// executable at path (debug/buildinfo does not report it).
func ReadBuildID(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", fmt.Errorf("build ID of %s: %w: %w", path, ErrNoBuildID, err)
	}
	defer f.Close()
	s := f.Section(goNoteSection)
	if s == nil {
		return "", fmt.Errorf("build ID of %s: %w: no %s section", path, ErrNoBuildID, goNoteSection)
	}
	data, err := s.Data()
	if err != nil {
		return "", fmt.Errorf("build ID of %s: %w: %w", path, ErrNoBuildID, err)
	}
	id, ok := parseGoNote(data, f.ByteOrder)
	if !ok || id == "" {
		return "", fmt.Errorf("build ID of %s: %w: malformed %s note", path, ErrNoBuildID, goNoteSection)
	}
	return id, nil
}

// parseGoNote reads one ELF note: name size, description size, type, then
// the name and the description, each padded to 4 bytes.
func parseGoNote(data []byte, bo binary.ByteOrder) (string, bool) {
	if len(data) < 12 {
		return "", false
	}
	nameSize, descSize, typ := bo.Uint32(data), bo.Uint32(data[4:]), bo.Uint32(data[8:])
	if typ != goNoteType || nameSize != uint32(len(goNoteName)) {
		return "", false
	}
	rest := data[12:]
	if uint64(len(rest)) < 4+uint64(descSize) || !bytes.Equal(rest[:4], []byte(goNoteName)) {
		return "", false
	}
	return string(rest[4 : 4+descSize]), true
}
