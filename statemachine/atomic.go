package statemachine

import "github.com/deterministic-exec/des/internal/fileio"

// WriteFileAtomic replaces the file at path with data so that a reader (or
// a crash) sees either the old content or the new, never a mix: it writes a
// temporary file in the same directory, syncs it, gives it the original
// file's permissions (0o644 for a new file), renames it over path and syncs
// the directory. When path is a symbolic link, the file it points to is
// replaced and the link kept. On any error the temporary file is removed and
// the original is untouched.
func WriteFileAtomic(path string, data []byte) error { return fileio.WriteAtomic(path, data) }
