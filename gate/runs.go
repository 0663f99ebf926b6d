package gate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/deterministic-exec/des/internal/fileio"
)

// RunRetention is how long the runs directory keeps a record (Gate 1's run
// records, Gate 2's verdicts and agent bindings): Gate 2 looks for no open
// run older than that, and a record that is gone only sends Gate 2 to the
// transcript. Kept longer, they would only make every write DES records in
// the effect check's baseline, and every check, slower.
const RunRetention = 24 * time.Hour

// PruneRuns removes from the runs directory rel (slash-separated, below
// root) the records last changed before cutoff, and temporary files a
// crashed write left, at most limit of them (the rest go at the next call).
// A record's age is the later of its modification and change times, so a
// record cannot be made to look old (touch -d) and be removed for good.
// The removals go to w, so a concurrent effect check takes them for DES's.
//
// DES runs outside Claude Code's sandbox, so nothing is followed: rel and
// each of its parents must be real directories below root (a link there is
// an error), entries are removed by name within the directory opened, and
// subdirectories (pending writes) and links are left alone.
func PruneRuns(ctx context.Context, w Writes, root, rel string, cutoff time.Time, limit int) (int, error) {
	dir, err := fileio.OpenDirIn(root, rel, false)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("prune %s: %w", rel, err)
	}
	defer dir.Close()
	old, err := oldRecords(ctx, dir, cutoff, limit)
	if err != nil || len(old) == 0 {
		return 0, err
	}
	paths := make([]string, len(old))
	for i, name := range old {
		paths[i] = filepath.Join(root, filepath.FromSlash(rel), name)
	}
	removed := 0
	err = announcedAll(ctx, w, paths, nil, func() error {
		var errs []error
		for _, name := range old {
			if err := dir.Remove(name); err == nil {
				removed++
			} else if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	})
	return removed, err
}

// oldRecords lists, a batch at a time, the names in dir of regular record
// files (*.json, .run-*) last changed before cutoff, at most limit.
func oldRecords(ctx context.Context, dir *os.Root, cutoff time.Time, limit int) ([]string, error) {
	f, err := dir.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var old []string
	for len(old) < limit {
		if err := ctx.Err(); err != nil {
			return old, err
		}
		ents, err := f.ReadDir(256)
		for _, e := range ents {
			name := e.Name()
			if len(old) >= limit || !e.Type().IsRegular() || !(strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".run-")) {
				continue
			}
			// By the directory opened, not by path (Info's lstat goes by
			// the directory's path, which may name another by now).
			if info, err := dir.Lstat(name); err == nil && info.Mode().IsRegular() && fileio.LastChange(info).Before(cutoff) {
				old = append(old, name)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return old, err
		}
	}
	return old, nil
}
