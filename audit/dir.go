package audit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/deterministic-exec/des/internal/fileio"
)

// WithRoot names the directory the log directory lies in, normally the
// project root. Each append then opens the log directory from root without
// following a symbolic link at any component between them, so that a link
// put at ".des" or ".des/audit" by whoever can write the project makes the
// append fail instead of writing where the link points. Without it, or for
// a log directory outside root, the directory is opened as its path says.
// Either way the files of the directory (day files, head record, lock) are
// opened inside it: a link among them cannot lead a write out of it, and a
// FIFO or device among them is refused, never waited on.
func WithRoot(root string) Option {
	return func(l *Log) { l.root = root }
}

// openDir opens the log directory for an append, creating it (and, under
// the root of [WithRoot], each missing component) when missing.
func (l *Log) openDir() (*os.Root, error) {
	d, err := fileio.OpenDirBelow(l.root, l.dir, true)
	if errors.Is(err, fileio.ErrNotRealDir) {
		return nil, fmt.Errorf("audit: open %s: %w (a link or other file where DES keeps its trail: remove it, then run `des-hook audit verify`)", l.dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", l.dir, err)
	}
	return d, nil
}

// openRegularIn opens name inside d with flag, if it is a regular file, not
// a link and has no other name: the open does not wait on a FIFO (O_NONBLOCK), and what it
// opened is checked.
func openRegularIn(d *os.Root, name string, flag int, perm fs.FileMode) (*os.File, error) {
	f, err := d.OpenFile(name, flag|syscall.O_NONBLOCK, perm)
	if err != nil {
		return nil, notDESFile(d, name, err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s: %w (%s)", name, fileio.ErrNotRegular, fi.Mode().Type())
	}
	// The root follows a link that stays inside it; none is DES's, and a
	// link from the head record to a day file would have the record's
	// rewrite cut the day file. What was opened must be what the name is.
	if err == nil {
		if lfi, lerr := d.Lstat(name); lerr != nil || !os.SameFile(fi, lfi) {
			err = fmt.Errorf("%s: %w (a link, or replaced while it was opened)", name, fileio.ErrNotRegular)
		}
	}
	// A hard link passes both checks, and an append would land in the
	// other name's file (the user's ~/.bashrc, say) too. DES never makes
	// one; a hard-linked trail is refused, a head record replaced.
	if err == nil && fileio.LinkCount(fi) > 1 {
		// Which name to remove depends on whose file it is: removing a
		// day file of DES's, another name linked to it, removes the
		// trail's lines.
		path := filepath.Join(d.Name(), name)
		err = fmt.Errorf("%s: %w: it has %d names (hard links); DES writes only a file of its own. If it holds DES's trail, remove the other name (`find / -xdev -samefile %s` lists them), else remove it; then run `des-hook audit verify`", name, fileio.ErrNotRegular, fileio.LinkCount(fi), path)
	}
	if err != nil {
		f.Close()
		return nil, notDESFile(d, name, err)
	}
	return f, nil
}

// notDESFile adds the way out to err when name is not a file DES could have
// made there: a link, a FIFO, a device or a directory.
func notDESFile(d *os.Root, name string, err error) error {
	fi, lerr := d.Lstat(name)
	if lerr != nil || fi.Mode().IsRegular() {
		return err
	}
	return fmt.Errorf("%w: %s is a %s, not a file DES made; remove it, then run `des-hook audit verify`",
		err, filepath.Join(d.Name(), name), typeName(fi.Mode()))
}

func typeName(m fs.FileMode) string {
	switch t := m.Type(); {
	case t&fs.ModeSymlink != 0:
		return "symbolic link"
	case t&fs.ModeNamedPipe != 0:
		return "named pipe"
	case t&fs.ModeDir != 0:
		return "directory"
	case t&fs.ModeSocket != 0:
		return "socket"
	case t&fs.ModeDevice != 0:
		return "device"
	default:
		return t.String()
	}
}
