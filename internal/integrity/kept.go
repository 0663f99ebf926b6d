package integrity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/deterministic-exec/des/internal/fileio"
)

// DES never destroys content it did not write: whatever a check takes off a
// watched path (a forged step it undoes, a change git made honestly to
// content no commit holds) is kept in the state directory first, in
// integrity/kept/, bounded, oldest dropped. A person takes a kept content
// back with PutBack (`des-hook integrity restore ID`).

// Bounds of the kept contents: a flood of new files the agent made in a
// protected directory must not fill the disk.
const (
	KeptMax      = 50       // entries per project
	KeptMaxBytes = 50 << 20 // their contents together
)

// Why a content was kept.
const (
	KeptUndone = "undone" // a check undid it: it came from no allowed write
	KeptByGit  = "git"    // git replaced it honestly (stash, reset, checkout) and no commit DES saw holds it
)

// Kept is one kept content: what a watched path held before a check (or
// git) replaced it.
type Kept struct {
	ID        string    `json:"id"`   // for `des-hook integrity restore ID`
	Path      string    `json:"path"` // as Change.Path
	SHA256    string    `json:"sha256"`
	Size      int64     `json:"size"`
	Mode      uint32    `json:"mode"`
	Why       string    `json:"why"` // KeptUndone or KeptByGit
	Time      time.Time `json:"time"`
	ToolUseID string    `json:"tool_use_id,omitempty"` // the call whose check kept it
}

// keptItem is a content to keep, collected during a check and stored
// once at its end.
type keptItem struct {
	Kept
	data []byte
}

func (c *Checker) keptDir() string { return filepath.Join(c.dir, "kept") }

// KeptDir is where the kept contents are.
func (c *Checker) KeptDir() string   { return c.keptDir() }
func (c *Checker) keptIndex() string { return filepath.Join(c.keptDir(), "index.json") }

// keptID names a content kept for a path: the same content of the same
// path keeps one entry, however often it is undone.
func keptID(key, sum string) string {
	s := sha256.Sum256([]byte(key + "\x00" + sum))
	return hex.EncodeToString(s[:6])
}

// newKept describes data, found at key, as a content to keep.
func (c *Checker) newKept(key string, data []byte, mode uint32, why, toolUseID string) keptItem {
	sum := hashOf(data)
	return keptItem{Kept: Kept{ID: keptID(key, sum), Path: key, SHA256: sum, Size: int64(len(data)), Mode: mode, Why: why, Time: c.now().UTC(), ToolUseID: toolUseID}, data: data}
}

// KeptList lists the kept contents, oldest first.
func (c *Checker) KeptList() ([]Kept, error) {
	data, err := fileio.ReadBounded(c.keptIndex(), 4<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("integrity: the kept contents: %w", err)
	}
	var list []Kept
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("integrity: the kept contents' index %s is damaged: %w", c.keptIndex(), err)
	}
	return list, nil
}

// keepAll adds items to the kept contents (the caller holds the lock) and
// returns the ids that survived the bounds. A content kept again moves to
// the end; the oldest entries are dropped past KeptMax or KeptMaxBytes.
func (c *Checker) keepAll(items []keptItem) (map[string]bool, error) {
	if len(items) == 0 {
		return nil, nil
	}
	list, err := c.KeptList()
	if err != nil {
		c.logger.Warn("integrity: starting the kept contents afresh", "err", err)
		list = nil
	}
	fresh := map[string][]byte{}
	for _, it := range items {
		list = slices.DeleteFunc(list, func(k Kept) bool { return k.ID == it.ID })
		list = append(list, it.Kept)
		fresh[it.ID] = it.data
	}
	var total int64
	cut := 0
	for i := len(list) - 1; i >= 0; i-- {
		total += list[i].Size
		if len(list)-i > KeptMax || total > KeptMaxBytes {
			cut = i + 1
			break
		}
	}
	dropped, list := list[:cut], list[cut:]
	if err := os.MkdirAll(c.keptDir(), 0o700); err != nil {
		return nil, fmt.Errorf("integrity: %w", err)
	}
	alive := map[string]bool{}
	used := map[string]bool{}
	for _, k := range list {
		alive[k.ID], used[k.SHA256] = true, true
		if data, ok := fresh[k.ID]; ok {
			if err := c.keepBlob(k.SHA256, data); err != nil {
				return nil, err
			}
		}
	}
	out, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("integrity: %w", err)
	}
	if err := fileio.WriteAtomic(c.keptIndex(), append(out, '\n')); err != nil {
		return nil, fmt.Errorf("integrity: record the kept contents: %w", err)
	}
	for _, k := range dropped {
		if !used[k.SHA256] {
			_ = os.Remove(filepath.Join(c.keptDir(), k.SHA256))
		}
	}
	return alive, nil
}

// keepBlob stores a kept content under its hash, once.
func (c *Checker) keepBlob(sum string, data []byte) error {
	p := filepath.Join(c.keptDir(), sum)
	if got, err := fileio.ReadBounded(p, maxFileSize); err == nil && hashOf(got) == sum {
		return nil
	}
	if err := os.MkdirAll(c.keptDir(), 0o700); err != nil {
		return fmt.Errorf("integrity: %w", err)
	}
	if err := fileio.WriteAtomic(p, data); err != nil {
		return fmt.Errorf("integrity: keep the undone content: %w", err)
	}
	return nil
}

// keptContent reads a kept content and checks it against its hash.
func (c *Checker) keptContent(k Kept) ([]byte, error) {
	data, err := fileio.ReadBounded(filepath.Join(c.keptDir(), k.SHA256), maxFileSize)
	if err != nil {
		return nil, fmt.Errorf("integrity: kept content %s: %w", k.ID, err)
	}
	if hashOf(data) != k.SHA256 {
		return nil, fmt.Errorf("integrity: kept content %s is damaged", k.ID)
	}
	return data, nil
}

// setAside reports whether git took sum away from key earlier, honestly
// (a KeptByGit entry): `git stash pop` brings back what `git stash` took.
func (c *Checker) setAside(key, sum string) bool {
	list, _ := c.KeptList()
	return slices.ContainsFunc(list, func(k Kept) bool { return k.Why == KeptByGit && k.Path == key && k.SHA256 == sum })
}

// ErrNoKept is returned by PutBack for an id no kept content has.
var ErrNoKept = errors.New("no kept content has that id")

// PutBack writes the kept content id back at its path and takes it as the
// last good state of that path: a person's `des-hook integrity restore`.
// It refuses while watched calls are in flight (ErrCallsRunning), as
// Accept does: an agent's command must not take back what a check undid.
func (c *Checker) PutBack(ctx context.Context, id string) (Kept, error) {
	unlock, err := c.lock(ctx)
	if err != nil {
		return Kept{}, err
	}
	defer unlock()
	if running := c.CallerInCall(c.client); len(running) > 0 {
		return Kept{}, fmt.Errorf("integrity: %w: %s (%s)", ErrCallsRunning, strings.Join(running, ", "), runningNote)
	}
	list, err := c.KeptList()
	if err != nil {
		return Kept{}, err
	}
	i := slices.IndexFunc(list, func(k Kept) bool { return k.ID == id })
	if i < 0 {
		return Kept{}, fmt.Errorf("integrity: %w: %q (des-hook integrity kept lists them)", ErrNoKept, id)
	}
	k := list[i]
	data, err := c.keptContent(k)
	if err != nil {
		return k, err
	}
	mode := fs.FileMode(k.Mode)
	if mode == 0 {
		mode = 0o644
	}
	if rel := filepath.FromSlash(k.Path); !filepath.IsAbs(rel) {
		// Inside the project, through no link, as a restore.
		dirRel, base := filepath.Split(rel)
		if dirRel == "" {
			dirRel = "."
		}
		d, err := fileio.OpenDirIn(c.root, dirRel, true)
		if err != nil {
			return k, fmt.Errorf("integrity: put back %s: %w", k.Path, err)
		}
		defer d.Close()
		if err := fileio.WriteAtomicAt(d, base, data); err != nil {
			return k, fmt.Errorf("integrity: put back %s: %w", k.Path, err)
		}
		if err := d.Chmod(base, mode); err != nil {
			return k, fmt.Errorf("integrity: put back %s: %w", k.Path, err)
		}
	} else {
		if err := fileio.WriteAtomic(rel, data); err != nil {
			return k, fmt.Errorf("integrity: put back %s: %w", k.Path, err)
		}
		if err := os.Chmod(rel, mode); err != nil {
			return k, fmt.Errorf("integrity: put back %s: %w", k.Path, err)
		}
	}
	m, err := c.load()
	if err != nil || m == nil {
		return k, err // the next Begin takes the disk as it is
	}
	want := k.SHA256
	return k, c.recordAll(ctx, m, []string{k.Path}, func(_, sum string) bool { return sum == want })
}
