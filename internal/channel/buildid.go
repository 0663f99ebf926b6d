package channel

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// ErrNoBuildID is wrapped when an executable carries no Go build ID (not an
// ELF Go binary, or linked with -buildid=): it cannot be told apart from
// another build, so no server is used for it.
var ErrNoBuildID = errors.New("no Go build ID")

// The linker writes the build ID as an ELF note of this name and type, in a
// PT_NOTE segment near the start of the file (cmd/link:
// ELF_NOTE_GOBUILDID_TAG; cmd/internal/buildid reads it the same way).
const (
	goNoteName = "Go\x00\x00"
	goNoteType = 4
	ptNote     = 4
	// headRead is read at once: the ELF header, the program headers and
	// the Go note of a Go binary all lie in its first page.
	headRead = 4096
	// maxNote bounds a note segment read beyond headRead.
	maxNote = 1 << 20
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

// ReadBuildID reads the Go build ID from the ELF note of the executable at
// path (debug/buildinfo does not report it). It reads the file's first page
// and, only when the note lies beyond it, the note's segment: one or two
// reads, where debug/elf would read every section header (the thin client
// does this on every call).
func ReadBuildID(path string) (string, error) {
	fail := func(why any) (string, error) {
		if err, ok := why.(error); ok {
			return "", fmt.Errorf("build ID of %s: %w: %w", path, ErrNoBuildID, err)
		}
		return "", fmt.Errorf("build ID of %s: %w: %s", path, ErrNoBuildID, why)
	}
	f, err := os.Open(path)
	if err != nil {
		return fail(err)
	}
	defer f.Close()
	head := make([]byte, headRead)
	n, err := f.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return fail(err)
	}
	id, why := elfGoBuildID(f, head[:n])
	if why != "" {
		return fail(why)
	}
	return id, nil
}

// elfGoBuildID finds the Go note among the PT_NOTE segments of the ELF file
// whose first bytes are head; it returns the build ID, or why there is none.
func elfGoBuildID(r io.ReaderAt, head []byte) (id, why string) {
	if len(head) < 52 || string(head[:4]) != "\x7fELF" {
		return "", "not an ELF file"
	}
	var bo binary.ByteOrder
	switch head[5] {
	case 1:
		bo = binary.LittleEndian
	case 2:
		bo = binary.BigEndian
	default:
		return "", "unknown ELF byte order"
	}
	var phoff uint64
	var phentsize, phnum int
	is64 := false
	switch head[4] {
	case 1:
		phoff, phentsize, phnum = uint64(bo.Uint32(head[28:])), int(bo.Uint16(head[42:])), int(bo.Uint16(head[44:]))
	case 2:
		if len(head) < 64 {
			return "", "truncated ELF header"
		}
		is64 = true
		phoff, phentsize, phnum = bo.Uint64(head[32:]), int(bo.Uint16(head[54:])), int(bo.Uint16(head[56:]))
	default:
		return "", "unknown ELF class"
	}
	if (is64 && phentsize < 56) || (!is64 && phentsize < 32) || phnum == 0 {
		return "", "no program headers"
	}
	read := func(off, size uint64) []byte {
		if size > maxNote {
			return nil
		}
		if off+size <= uint64(len(head)) && off+size >= off {
			return head[off : off+size]
		}
		buf := make([]byte, size)
		if _, err := r.ReadAt(buf, int64(off)); err != nil {
			return nil
		}
		return buf
	}
	phs := read(phoff, uint64(phnum)*uint64(phentsize))
	if phs == nil {
		return "", "unreadable program headers"
	}
	for i := range phnum {
		ph := phs[i*phentsize:]
		if bo.Uint32(ph) != ptNote {
			continue
		}
		var off, size uint64
		if is64 {
			off, size = bo.Uint64(ph[8:]), bo.Uint64(ph[32:])
		} else {
			off, size = uint64(bo.Uint32(ph[4:])), uint64(bo.Uint32(ph[16:]))
		}
		if id, ok := goNote(read(off, size), bo); ok {
			return id, ""
		}
	}
	return "", "no Go build ID note"
}

// goNote walks the notes of one segment: name size, description size, type,
// then the name and the description, each padded to 4 bytes.
func goNote(data []byte, bo binary.ByteOrder) (string, bool) {
	for len(data) >= 12 {
		nameSize, descSize, typ := uint64(bo.Uint32(data)), uint64(bo.Uint32(data[4:])), bo.Uint32(data[8:])
		rest := data[12:]
		name, desc := (nameSize+3)&^3, (descSize+3)&^3
		if uint64(len(rest)) < name+descSize {
			return "", false
		}
		if typ == goNoteType && nameSize == uint64(len(goNoteName)) && bytes.Equal(rest[:nameSize], []byte(goNoteName)) {
			id := string(rest[name : name+descSize])
			return id, id != ""
		}
		if uint64(len(rest)) < name+desc {
			return "", false
		}
		data = rest[name+desc:]
	}
	return "", false
}
