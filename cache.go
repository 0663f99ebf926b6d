package des

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/deterministic-exec/des/internal/bundlestore"
	"github.com/deterministic-exec/des/policy"
)

// PolicyCache keeps compiled policy engines for reuse by every Engine built
// WithPolicyCache, so that a long-lived process (a decision server) that
// builds an Engine per request compiles the policies once per set of
// sources, not once per request. It holds at most the number of engines
// given to NewPolicyCache and drops the least recently used. It is safe for
// concurrent use.
//
// An entry's key is a fingerprint of every input of the policies: the
// built-in bundle (fixed in the binary), the content of every file under
// each policy directory with its path there and the directory's name (its
// path from the project root when it is below the root: two checkouts of
// one repository share one compilation of the team's policies), every
// bundle file (path, size, modification and change times, inode), the
// content of each WithPolicyFS file system, and the settings des hands to
// the policies (data.des.config, which the settings file and DES_*
// variables decide). New takes the fingerprint on every call: a file is
// read again only when stat shows it changed; nothing is watched and
// nothing expires on a timer.
//
// Compiled policies do not depend on data.des.config, and that differs
// between any two projects (it names each project's state directory): an
// Engine whose policy sources match an entry's but whose settings do not
// shares the entry's compiled policies and only prepares its queries
// (policy.Engine.WithDataAt). So every project without team policies
// shares one compilation of the built-in bundle.
//
// A policy that does not load, parse or compile is cached too, as its
// error: New returns the same error, with file:line:col, each time until
// a file changes, without compiling the broken sources again.
//
// The organisation's kept bundles (bundle_urls) are fingerprinted by
// content, as file systems are; the cache also remembers which kept files
// verified, so that an unchanged bundle is not verified again per New.
//
// Only the *policy.Engine is shared; the rest of an Engine (root,
// settings, audit trail, clock, logger, environment, WithWrites) is built
// per New.
type PolicyCache struct {
	max int

	mu       sync.Mutex
	lru      *list.List               // of *cacheEntry, most recent first
	byKey    map[string]*list.Element // full key → entry
	inflight map[string]*cacheCall    // full key → the New building it
	stats    PolicyCacheStats

	bundles *bundlestore.Memo // the organisation's kept bundles, verified (des_bundles.go)
	sums    contentSums       // the policy directories' files, by stat
}

// PolicyCacheStats counts what a PolicyCache did.
type PolicyCacheStats struct {
	Hits     int // New found an engine for its sources and settings
	Derived  int // New found the sources compiled and prepared them for its settings
	Compiles int // New compiled the policies (successfully or not)
	Evicted  int // entries dropped to stay within the bound
	Len      int // entries held now
}

type cacheEntry struct {
	key, src string
	engine   *policy.Engine
	err      error
}

type cacheCall struct {
	done   chan struct{}
	engine *policy.Engine
	err    error
}

// NewPolicyCache returns a cache of at most n compiled policy engines
// (at least 1).
func NewPolicyCache(n int) *PolicyCache {
	return &PolicyCache{max: max(1, n), lru: list.New(), byKey: map[string]*list.Element{}, inflight: map[string]*cacheCall{}, bundles: bundlestore.NewMemo()}
}

// WithPolicyCache takes the Engine's compiled policies from c, compiling
// them into c on a miss (see PolicyCache). The policies are compiled in
// full and every gate is prepared at New: WithLazyPolicies has no effect
// on the policies of an Engine built with a cache.
func WithPolicyCache(c *PolicyCache) Option { return func(o *options) { o.cache = c } }

// Stats returns the cache's counters.
func (c *PolicyCache) Stats() PolicyCacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Len = c.lru.Len()
	return s
}

// get returns the engine for the sources src and the full key, building it
// with build (a compile) or from an entry of the same sources (derive).
// Concurrent calls for one key wait for the first.
func (c *PolicyCache) get(ctx context.Context, key, src string, compile func() (*policy.Engine, error), derive func(*policy.Engine) (*policy.Engine, error)) (*policy.Engine, error) {
	c.mu.Lock()
	var base *policy.Engine
	for {
		if el, ok := c.byKey[key]; ok {
			c.lru.MoveToFront(el)
			c.stats.Hits++
			ent := el.Value.(*cacheEntry)
			c.mu.Unlock()
			return ent.engine, ent.err
		}
		// The same key being built, or the same sources being compiled for
		// other settings: wait for it rather than compile twice.
		call, ok := c.inflight[key]
		if !ok {
			call, ok = c.inflight[src]
		}
		if !ok {
			break
		}
		c.mu.Unlock()
		select {
		case <-call.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		c.mu.Lock()
	}
	for el := c.lru.Front(); el != nil; el = el.Next() {
		ent := el.Value.(*cacheEntry)
		if ent.src != src {
			continue
		}
		if ent.err != nil {
			// Sources that failed to compile fail for any settings.
			c.stats.Hits++
			c.mu.Unlock()
			return nil, ent.err
		}
		base = ent.engine
		break
	}
	call := &cacheCall{done: make(chan struct{})}
	c.inflight[key] = call
	if base == nil {
		c.inflight[src] = call // keys and sources are both hex digests: src has no "/"
	}
	c.mu.Unlock()

	if base != nil {
		call.engine, call.err = derive(base)
	} else {
		call.engine, call.err = compile()
	}

	c.mu.Lock()
	delete(c.inflight, key)
	if base != nil {
		c.stats.Derived++
	} else {
		delete(c.inflight, src)
		c.stats.Compiles++
	}
	// A policy error is kept, so that broken sources are not compiled
	// again per call; anything else (a cancelled context, say) is not the
	// sources' fault and is tried again.
	var perr policy.Errors
	if call.err == nil || errors.As(call.err, &perr) {
		c.byKey[key] = c.lru.PushFront(&cacheEntry{key: key, src: src, engine: call.engine, err: call.err})
		for c.lru.Len() > c.max {
			el := c.lru.Back()
			c.lru.Remove(el)
			delete(c.byKey, el.Value.(*cacheEntry).key)
			c.stats.Evicted++
		}
	}
	c.mu.Unlock()
	close(call.done)
	return call.engine, call.err
}

// sourcesKey fingerprints the policy sources. Directories are keyed by the
// name their files go by (policySource) and the content of each file below
// them, so that the same policies in two checkouts share one compilation;
// a file's content is read again only when its stat changes (sums). Bundle
// files are keyed by stat (their messages name them by path), file systems
// by content.
func (c *PolicyCache) sourcesKey(dirs []policySource, bundles []string, fss []namedFS) (string, error) {
	h := sha256.New()
	io.WriteString(h, "des builtin\x00") // the built-in bundle is fixed in the binary
	for _, d := range dirs {
		fmt.Fprintf(h, "dir %q\x00", d.name)
		c.sums.contentTree(h, d.path)
	}
	for _, p := range bundles {
		fmt.Fprintf(h, "bundle %q\x00", p)
		if err := statTree(h, p); err != nil {
			return "", err
		}
	}
	for _, f := range fss {
		fmt.Fprintf(h, "fs %q\x00", f.name)
		err := fs.WalkDir(f.fsys, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := fs.ReadFile(f.fsys, p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			fmt.Fprintf(h, "%q %x\x00", p, sum)
			return nil
		})
		if err != nil {
			return "", fmt.Errorf("policy file system %s: %w", f.name, err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// contentSums remembers the SHA-256 of the files it read, by what stat said
// of them, so that an unchanged file is not read again per New.
type contentSums struct {
	mu   sync.Mutex
	byFI map[string][sha256.Size]byte // path and stat → content sum
}

// contentSumsMax bounds the memo: past it, it starts afresh.
const contentSumsMax = 4096

// contentTree writes, for p and every file below it (following links as
// the policy loader does), its path relative to p and its content's sum.
// What cannot be read is written with its error, which names the absolute
// path: loading fails, and that error is cached under this key alone.
func (m *contentSums) contentTree(w io.Writer, p string) {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		fmt.Fprintf(w, "missing %q\x00", err.Error())
		return
	}
	_ = filepath.WalkDir(real, func(q string, d fs.DirEntry, err error) error {
		if err != nil {
			fmt.Fprintf(w, "error %q\x00", err.Error())
			return nil
		}
		rel, _ := filepath.Rel(real, q)
		if q != real && strings.HasPrefix(d.Name(), ".") {
			// The loader skips hidden entries below the top (an editor's
			// swap file beside team.rego changes nothing).
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			fmt.Fprintf(w, "dir %q\x00", filepath.ToSlash(rel))
			return nil
		}
		sum, err := m.sum(q)
		if err != nil {
			fmt.Fprintf(w, "error %q\x00", err.Error())
			return nil
		}
		fmt.Fprintf(w, "file %q %x\x00", filepath.ToSlash(rel), sum)
		return nil
	})
}

// sum returns the content's SHA-256 of the file at q, from the memo while
// its stat is as it was; a file changed within racyWindow is read each time
// (fileStat).
func (m *contentSums) sum(q string) ([sha256.Size]byte, error) {
	fi, err := os.Stat(q) // follows a link to a file, as reading it does
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	key, racy := fileStat(q, fi)
	if !racy {
		m.mu.Lock()
		sum, ok := m.byFI[key]
		m.mu.Unlock()
		if ok {
			return sum, nil
		}
	}
	b, err := os.ReadFile(q)
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	sum := sha256.Sum256(b)
	if !racy {
		m.mu.Lock()
		if m.byFI == nil || len(m.byFI) >= contentSumsMax {
			m.byFI = map[string][sha256.Size]byte{}
		}
		m.byFI[key] = sum
		m.mu.Unlock()
	}
	return sum, nil
}

// statTree writes what stat says of p and, for a directory, of every entry
// below it, following links as the policy loader does. A path that cannot
// be read is written as such: loading it fails, and that error is cached
// under this key.
func statTree(w io.Writer, p string) error {
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		fmt.Fprintf(w, "missing %q\x00", err.Error())
		return nil
	}
	return filepath.WalkDir(real, func(q string, d fs.DirEntry, err error) error {
		if err != nil {
			fmt.Fprintf(w, "error %q %q\x00", q, err.Error())
			return nil
		}
		fi, err := os.Stat(q) // follows a link to a file, as reading it does
		if err != nil {
			fmt.Fprintf(w, "error %q %q\x00", q, err.Error())
			return nil
		}
		id, racy := fileStat(q, fi)
		fmt.Fprintf(w, "%s\x00", id)
		// A file changed that recently is keyed by its content too.
		if fi.Mode().IsRegular() && racy {
			b, err := os.ReadFile(q)
			if err != nil {
				fmt.Fprintf(w, "error %q %q\x00", q, err.Error())
				return nil
			}
			fmt.Fprintf(w, "content %x\x00", sha256.Sum256(b))
		}
		return nil
	})
}

// fileStat is what stat says of the file at q (its path, size,
// modification and change times, inode and mode), and whether it changed
// within racyWindow. File times tick coarsely (a kernel tick, or a second
// on some file systems): a file rewritten twice within one tick at the same
// size would keep its stat, so a racy file's stat does not vouch for its
// content (git's racily clean files).
func fileStat(q string, fi fs.FileInfo) (id string, racy bool) {
	ino, ctime := inodeCtime(fi)
	id = fmt.Sprintf("%q %d %d %d %d %s", q, fi.Size(), fi.ModTime().UnixNano(), ino, ctime, strconv.FormatUint(uint64(fi.Mode()), 8))
	return id, time.Since(time.Unix(0, max(fi.ModTime().UnixNano(), ctime))) < racyWindow
}

// racyWindow is how recently a file must have changed for its content to
// be part of the key.
const racyWindow = 2 * time.Second

// dataKey fingerprints the data des sets (data.des.config).
func dataKey(v any) (string, error) {
	b, err := json.Marshal(v) // map keys sorted
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
