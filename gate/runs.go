package gate

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// RunRetention is how long the runs directory keeps a record (Gate 1's run
// records, Gate 2's verdicts and agent bindings): Gate 2 looks for no open
// run older than that, and a record that is gone only sends Gate 2 to the
// transcript. Kept longer, they would only make every write DES announces
// to the effect check, and every check, slower (the check watches each one).
const RunRetention = 24 * time.Hour

// PruneRuns removes from the runs directory dir the records last written
// before cutoff, and temporary files a crashed write left, at most limit
// of them (the rest go at the next call). The removals are announced to w,
// so a concurrent effect check does not restore them. It returns how many
// it removed; subdirectories (pending writes) and links are left alone.
func PruneRuns(ctx context.Context, w Writes, dir string, cutoff time.Time, limit int) (int, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var old []string
	for _, e := range ents {
		if len(old) >= limit || ctx.Err() != nil {
			break
		}
		name := e.Name()
		if !e.Type().IsRegular() || !(strings.HasSuffix(name, ".json") || strings.HasPrefix(name, ".run-")) {
			continue
		}
		if info, err := e.Info(); err != nil || !info.ModTime().Before(cutoff) {
			continue
		}
		old = append(old, filepath.Join(dir, name))
	}
	if len(old) == 0 {
		return 0, ctx.Err()
	}
	removed := 0
	err = announcedAll(ctx, w, old, nil, func() error {
		var errs []error
		for _, p := range old {
			if err := os.Remove(p); err == nil {
				removed++
			} else if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	})
	return removed, err
}
