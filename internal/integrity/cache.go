package integrity

import (
	"crypto/sha256"
	"slices"
	"sync"
)

// BaselineCache keeps the baselines a long-lived process (the warm decision
// server) read or saved, so that the next use of a baseline whose file has
// not changed since (the same inode, size, modification and change times)
// does not read and decode it again: a baseline grows with the watched
// trees (every run record is an entry), and decoding it was most of a
// settle. Safe for concurrent use: every use gets a copy of its own. Every
// read and save of a baseline happens under the lock every check holds, so
// no other process replaces the file between a save and its stat.
//
// It also keeps what git config files hold for the check (gitView), by
// content: reading one asks git, a process per file per scan.
type BaselineCache struct {
	mu    sync.Mutex
	m     map[string]cachedBaseline // by manifest path
	views map[[sha256.Size]byte]string
}

type cachedBaseline struct {
	id stat
	m  *manifest
}

// baselineCacheSize bounds the projects a cache keeps a baseline of.
const baselineCacheSize = 32

// NewBaselineCache returns an empty cache, for Options.Cache.
func NewBaselineCache() *BaselineCache {
	return &BaselineCache{m: map[string]cachedBaseline{}}
}

// gitViewsMax bounds the git config views a cache keeps.
const gitViewsMax = 256

// gitView is gitView(data), remembered by data's content.
func (b *BaselineCache) gitView(data []byte) string {
	if b == nil {
		return gitView(data)
	}
	sum := sha256.Sum256(data)
	b.mu.Lock()
	v, ok := b.views[sum]
	b.mu.Unlock()
	if ok {
		return v
	}
	g := parseGit(data)
	v = g.view()
	if g.Unreadable {
		return v // git refused it: perhaps only for now (a timeout); ask again next time
	}
	b.mu.Lock()
	if b.views == nil || len(b.views) >= gitViewsMax {
		b.views = map[[sha256.Size]byte]string{}
	}
	b.views[sum] = v
	b.mu.Unlock()
	return v
}

// fileID is what tells one manifest file from another: a save renames a
// new file into place, so its inode and change time are new. ok is false
// where the system does not report them (the cache is then not used).
func fileID(path string) (stat, bool) {
	s, _, err := lstat(path)
	return s, err == nil && s.Type == typeFile && s.Ino != 0 && s.CTime != 0
}

// get returns a copy of the baseline cached for path when path is still
// the file it was read from or saved to.
func (b *BaselineCache) get(path string) *manifest {
	if b == nil {
		return nil
	}
	id, ok := fileID(path)
	if !ok {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	c, hit := b.m[path]
	if !hit || c.id != id {
		return nil
	}
	return c.m.clone()
}

// put caches a copy of m as the content of the file now at path.
func (b *BaselineCache) put(path string, m *manifest) {
	if b == nil {
		return
	}
	id, ok := fileID(path)
	b.mu.Lock()
	defer b.mu.Unlock()
	if !ok {
		delete(b.m, path)
		return
	}
	if _, hit := b.m[path]; !hit && len(b.m) >= baselineCacheSize {
		for k := range b.m { // any one: a dropped baseline is only read again
			delete(b.m, k)
			break
		}
	}
	b.m[path] = cachedBaseline{id: id, m: m.clone()}
}

// forget drops path's baseline (a save that failed half way).
func (b *BaselineCache) forget(path string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.m, path)
}

// clone is a deep copy of m as load returns it (IgnoreNew is not kept).
func (m *manifest) clone() *manifest {
	out := *m
	out.Watch.Trees, out.Watch.StateGlobs, out.Watch.StepGlobs = slices.Clone(m.Watch.Trees), slices.Clone(m.Watch.StateGlobs), slices.Clone(m.Watch.StepGlobs)
	out.StepDirs = slices.Clone(m.StepDirs)
	out.IgnoreNew = nil
	out.Entries = make(map[string]*entry, len(m.Entries))
	for k, e := range m.Entries {
		c := *e
		out.Entries[k] = &c
	}
	return &out
}
