// Package integrity checks the effect of tool calls on the files DES
// depends on, and undoes what changed outside an allowed write.
//
// A shell command can write a file in more ways than any reading of the
// command ahead of time can tell. So DES keeps, outside the project (in the
// per-user state directory, internal/statedir), a baseline: a manifest
// that records for each watched path its type, mode, size, times, inode,
// link count and SHA-256 (or that it is absent), and a content-addressed
// copy of each file's last good content. After a tool call that may write
// anything (Bash, NotebookEdit, MCP tools), [Checker.End] compares every
// watched path with the baseline, stat first and hashing only what stat
// says may have changed, and restores what changed: a rewritten or deleted
// file from its copy, a new file in a protected directory or a new guarded
// document removed, a directory replaced by a file or a link recreated, a
// mode put back. It needs neither settings nor policies: the watched set is
// in the manifest, recorded when the settings last loaded, so a config that
// no longer parses or a deleted .des/ is undone too.
//
// Changes that are allowed are never undone. Between tool calls (no watched
// call in flight), [Checker.Begin] takes the disk as the new baseline: that
// is how a user's hand edit is accepted. A write DES allowed (the write
// guard's Write/Edit) or makes itself (a step rewrite, a run record) is
// announced with [Checker.Expect] before it lands, with the content it will
// have; a check that finds exactly that content takes it, and
// [Checker.Settle] records it once the write is done. A write DES makes
// itself goes through [Checker.WriteOwn] first, which runs it under the
// lock every check holds and records it at once, with nothing to announce;
// only while a check runs is it announced instead.
//
// For the Claude Code settings files everything but the allow rules and
// the model is compared and restored, because Claude Code itself rewrites
// those while a call runs. For git's config only
// core.hooksPath and include directives are, because git rewrites it.
//
// Every wait has a deadline: the lock on the state directory is taken with
// the caller's context, and each file operation checks it.
package integrity

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/internal/filelock"
	"github.com/deterministic-exec/des/internal/gitexec"
	"github.com/deterministic-exec/des/internal/proctree"
)

// Kinds of watched path: how it is compared and restored.
const (
	KindFile           = "file"            // the whole file
	KindDir            = "dir"             // a directory (its type and mode; children are entries of their own)
	KindClaudeSettings = "claude-settings" // all but the allow rules and the model
	KindGitConfig      = "git-config"      // only core.hooksPath and include directives
)

// Types a path can have on disk.
const (
	typeAbsent  = "absent"
	typeFile    = "file"
	typeDir     = "dir"
	typeSymlink = "symlink"
	typeOther   = "other" // FIFO, device, socket: never DES's, never opened
)

// Limits. A watched file larger than maxFileSize is an error of the check
// (DES's files are small); walks stop at maxWalk entries.
const (
	maxFileSize = 16 << 20
	maxWalk     = 200000
	maxTreeSize = 200000 // entries under the protected directories: an agent's flood of new files is removed, not a reason to stop
)

// Lifetimes of the records that let concurrent calls agree.
const (
	// InFlightLifetime bounds how long a call counts as running when its
	// PostToolUse never comes: Claude Code's longest Bash timeout is 10
	// minutes.
	InFlightLifetime = 11 * time.Minute
	// ExpectLifetime bounds how long an announced write may land.
	ExpectLifetime = 11 * time.Minute
	// stepRescan is how old the list of step directories may get before a
	// refresh walks the project again.
	stepRescan = 10 * time.Minute
)

// ErrNoBaseline is returned by End when no baseline was ever recorded.
var ErrNoBaseline = errors.New("no integrity baseline recorded yet")

// Watch is the part of the watched set that comes from the settings.
// Paths and globs are slash-separated, relative to the project root.
type Watch struct {
	ConfigFile string   `json:"config_file"` // .des/config.json
	Trees      []string `json:"trees"`       // protected directories: policy directories, run records, the subagent registry
	StateGlobs []string `json:"state_globs"` // workflow-state documents and the task graph
	StepGlobs  []string `json:"step_globs"`  // step files
}

// DefaultWatch is the watched set of the default settings, used when no
// baseline has recorded one.
func DefaultWatch() Watch {
	return Watch{
		ConfigFile: ".des/config.json",
		Trees:      []string{".des/policies", ".des/runs", ".des/sessions"},
		StateGlobs: []string{".des/state.json", ".isdlc/state.json", ".isdlc/projects/*/state.json", ".isdlc/monorepo.json", ".claude/state/active_task_graph.json"},
		StepGlobs:  []string{"**/steps/*.json"},
	}
}

// merge returns w with d's entries added (the defaults are always watched).
func (w Watch) merge(d Watch) Watch {
	out := Watch{ConfigFile: w.ConfigFile}
	if out.ConfigFile == "" {
		out.ConfigFile = d.ConfigFile
	}
	out.Trees = union(w.Trees, d.Trees)
	out.StateGlobs = union(w.StateGlobs, d.StateGlobs)
	out.StepGlobs = union(w.StepGlobs, d.StepGlobs)
	return out
}

func union(a, b []string) []string {
	var out []string
	for _, s := range append(slices.Clone(a), b...) {
		s = cleanRel(s)
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// cleanRel cleans a slash path; "" for the root or nothing.
func cleanRel(s string) string {
	s = filepath.ToSlash(filepath.Clean(filepath.FromSlash(strings.TrimPrefix(s, "./"))))
	if s == "." {
		return ""
	}
	return s
}

// Options configure a Checker.
type Options struct {
	Root     string // absolute project root
	StateDir string // the project's state directory (statedir.Ensure); the checker uses StateDir/integrity
	// UserFiles are files outside the project that can switch DES off for
	// it, watched like their project counterparts: the user's Claude Code
	// settings (all but the allow rules and the model) and git's global config
	// (core.hooksPath), by kind.
	UserFiles map[string]string // absolute path -> KindClaudeSettings or KindGitConfig
	// Home is the user's home directory as the hook's environment has it,
	// for git's "~/" paths (include directives, core.hooksPath); a warm
	// server's own HOME may be another. "" falls back to os.UserHomeDir.
	Home   string
	Now    func() time.Time
	Logger *slog.Logger
	// Cache, when set, keeps the baseline decoded between Checkers of one
	// process (a long-lived one: the warm decision server).
	Cache *BaselineCache
	// Client is the pid of the process the hook event came through (the
	// hook itself, or the warm server's peer): its parents (Claude Code)
	// are the origin of the calls, whose processes left running a call
	// stays in flight for, however long (flight.go). 0 keeps the fixed
	// lifetimes.
	Client int
	// Procs is where the process tree is read; the zero value reads /proc.
	Procs proctree.Tree
	// OwnBinaries are des's executables: a process running one (the warm
	// server a call's hook started) is never a call's.
	OwnBinaries []string
}

// Checker compares and restores the watched files of one project.
type Checker struct {
	root, dir string
	user      map[string]string
	home      string
	now       func() time.Time
	logger    *slog.Logger
	cache     *BaselineCache
	git       *gitexec.Runner // reads HEAD's tree: no filter or hook of the repository runs
	client    int
	procs     proctree.Tree
	own       []string
}

// New returns a Checker. It touches nothing on disk.
func New(o Options) *Checker {
	c := &Checker{root: filepath.Clean(o.Root), dir: filepath.Join(o.StateDir, "integrity"), now: o.Now, logger: o.Logger, user: o.UserFiles, home: o.Home, cache: o.Cache, git: new(gitexec.Runner),
		client: o.Client, procs: o.Procs, own: o.OwnBinaries}
	if c.now == nil {
		c.now = time.Now
	}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Dir is where the checker keeps its manifest and copies.
func (c *Checker) Dir() string { return c.dir }

// Change is one watched path found changed by End.
type Change struct {
	Path     string `json:"path"`     // relative to the root when inside it, else absolute; slash-separated
	Kind     string `json:"kind"`     // KindFile, KindDir, KindClaudeSettings, KindGitConfig
	What     string `json:"what"`     // modified, deleted, created, type, mode, linked, hooks, hooks_path
	Was      string `json:"was"`      // type before
	Now      string `json:"now"`      // type found
	Restored bool   `json:"restored"` // the baseline is back on disk
	Error    string `json:"error,omitempty"`
	Kept     string `json:"kept,omitempty"` // the id of the undone content, kept (PutBack)
}

// Report is what End found.
type Report struct {
	Changes  []Change `json:"changes"`
	Accepted []string `json:"accepted,omitempty"` // changes that were announced writes
	// Synced are the guarded documents git changed honestly, taken as
	// they are; GitBefore and GitAfter say where HEAD pointed in the
	// baseline and after the call (set with Synced).
	Synced    []Synced `json:"synced,omitempty"`
	GitBefore Head     `json:"git_before,omitzero"`
	GitAfter  Head     `json:"git_after,omitzero"`
}

// Restored reports whether every change was undone.
func (r Report) Restored() bool {
	for _, ch := range r.Changes {
		if !ch.Restored {
			return false
		}
	}
	return true
}

// Paths lists the changed paths.
func (r Report) Paths() []string {
	out := make([]string, len(r.Changes))
	for i, ch := range r.Changes {
		out[i] = ch.Path
	}
	return out
}

// stat is what the cheap comparison looks at.
type stat struct {
	Type  string `json:"type"`
	Mode  uint32 `json:"mode,omitempty"` // permission bits
	Size  int64  `json:"size,omitempty"`
	MTime int64  `json:"mtime,omitempty"`
	CTime int64  `json:"ctime,omitempty"`
	Ino   uint64 `json:"ino,omitempty"`
	Nlink uint64 `json:"nlink,omitempty"`
	Link  string `json:"link,omitempty"` // a symbolic link's target
}

// entry is one watched path in the manifest.
type entry struct {
	Kind string `json:"kind"`
	stat
	SHA256 string `json:"sha256,omitempty"` // of the whole file
	View   string `json:"view,omitempty"`   // the compared part, for the partial kinds
	Tree   string `json:"tree,omitempty"`   // the protected directory it is under
	Keep   bool   `json:"keep,omitempty"`   // watched even when absent: a file appearing there is new
}

// manifest is the baseline.
type manifest struct {
	Version   int               `json:"version"`
	Watch     Watch             `json:"watch"`
	StepDirs  []string          `json:"step_dirs"` // directories that may hold step files (cached walk)
	Scanned   time.Time         `json:"scanned"`   // when StepDirs was walked
	Recorded  time.Time         `json:"recorded"`  // when the baseline was last taken from disk
	GitHooks  string            `json:"git_hooks,omitempty"`
	Git       *Head             `json:"git,omitempty"` // where HEAD pointed when the baseline was taken
	Entries   map[string]*entry `json:"entries"`
	IgnoreNew []string          `json:"-"`
}

const manifestVersion = 1

func (c *Checker) manifestPath() string { return filepath.Join(c.dir, "manifest.json") }
func (c *Checker) objectPath(sum string) string {
	return filepath.Join(c.dir, "objects", sum)
}

// LockWait bounds the wait for the checker's lock when the caller's
// context has no deadline of its own: a holder that never lets go (an
// agent's `flock` on the file) must not hang a hook.
const LockWait = 5 * time.Second

// lock takes the checker's lock, waiting at most until ctx is done, or
// LockWait when ctx has no deadline.
func (c *Checker) lock(ctx context.Context) (func(), error) {
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return nil, fmt.Errorf("integrity: %w", err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, LockWait)
		defer cancel()
	}
	l, err := filelock.Acquire(ctx, filepath.Join(c.dir, "lock"))
	if err != nil {
		return nil, fmt.Errorf("integrity: %w", err)
	}
	return func() { _ = l.Unlock() }, nil
}

func (c *Checker) load() (*manifest, error) {
	if m := c.cache.get(c.manifestPath()); m != nil {
		return m, nil
	}
	data, err := fileio.ReadBounded(c.manifestPath(), 256<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("integrity: read the baseline: %w", err)
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil || m.Version != manifestVersion || m.Entries == nil {
		// A damaged baseline cannot be trusted to restore from; the caller
		// records a new one from disk.
		return nil, fmt.Errorf("integrity: the baseline %s is damaged: %v", c.manifestPath(), err)
	}
	c.cache.put(c.manifestPath(), &m)
	return &m, nil
}

func (c *Checker) save(m *manifest) error {
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("integrity: %w", err)
	}
	if err := fileio.WriteAtomic(c.manifestPath(), data); err != nil {
		c.cache.forget(c.manifestPath())
		return fmt.Errorf("integrity: save the baseline: %w", err)
	}
	c.cache.put(c.manifestPath(), m)
	return nil
}

// keep stores data as a content-addressed copy, once.
func (c *Checker) keep(sum string, data []byte) error {
	p := c.objectPath(sum)
	if _, err := os.Lstat(p); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return fmt.Errorf("integrity: %w", err)
	}
	// Renamed into place but not synced: a copy a crash tore is found by
	// its hash (copyOf) rather than paid for with an fsync per file, which
	// would make a project's first baseline take seconds.
	f, err := os.CreateTemp(filepath.Dir(p), ".copy-*")
	if err != nil {
		return fmt.Errorf("integrity: keep a copy: %w", err)
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), p)
	}
	if werr != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("integrity: keep a copy: %w", werr)
	}
	return nil
}

// copyOf reads a kept copy and checks it against its name.
func (c *Checker) copyOf(sum string) ([]byte, error) {
	data, err := fileio.ReadBounded(c.objectPath(sum), maxFileSize)
	if err != nil {
		return nil, fmt.Errorf("integrity: the last good copy %s: %w", sum, err)
	}
	if hashOf(data) != sum {
		return nil, fmt.Errorf("integrity: the last good copy %s is damaged", sum)
	}
	return data, nil
}

func hashOf(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// key names a path in the manifest: slash-separated, relative to the root
// when inside it, else absolute.
func (c *Checker) key(abs string) string {
	if rel, err := filepath.Rel(c.root, abs); err == nil && rel != "." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && rel != ".." {
		return filepath.ToSlash(rel)
	}
	return filepath.ToSlash(abs)
}

// abs is the inverse of key.
func (c *Checker) abs(key string) string {
	p := filepath.FromSlash(key)
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.root, p)
}

// lstat reads a path's stat without following a final link.
func lstat(p string) (stat, fs.FileInfo, error) {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return stat{Type: typeAbsent}, nil, nil
	}
	if err != nil {
		return stat{}, nil, err
	}
	s := stat{Mode: uint32(fi.Mode().Perm()), MTime: fi.ModTime().UnixNano()}
	switch {
	case fi.Mode().IsRegular():
		s.Type, s.Size = typeFile, fi.Size()
	case fi.IsDir():
		s.Type = typeDir
	case fi.Mode()&fs.ModeSymlink != 0:
		s.Type = typeSymlink
		s.Link, _ = os.Readlink(p)
	default:
		s.Type = typeOther
	}
	sysStat(fi, &s)
	return s, fi, nil
}

// sameStat reports whether stat shows no change. A file modified within
// the second the baseline was taken may share its modification time with
// the recorded one ("racy", as git calls it), so it is always hashed.
func (e *entry) sameStat(s stat, recorded time.Time) bool {
	if e.stat != s {
		return false
	}
	if e.Type == typeFile && recorded.UnixNano()-e.MTime < int64(2*time.Second) {
		return false
	}
	return true
}

// read reads a regular file's content, bounded.
func read(p string) ([]byte, error) {
	return fileio.ReadBounded(p, maxFileSize)
}

// observe records path as it is now: stat, hash and view, keeping a copy.
func (c *Checker) observe(key, kind, tree string) (*entry, error) {
	p := c.abs(key)
	s, _, err := lstat(p)
	if err != nil {
		return nil, err
	}
	e := &entry{Kind: kind, stat: s, Tree: tree}
	if s.Type != typeFile {
		if kind == KindClaudeSettings || kind == KindGitConfig {
			e.View = c.view(kind, nil)
		}
		return e, nil
	}
	data, err := read(p)
	if err != nil {
		return nil, err
	}
	e.SHA256 = hashOf(data)
	if kind == KindClaudeSettings || kind == KindGitConfig {
		e.View = c.view(kind, data)
	}
	if err := c.keep(e.SHA256, data); err != nil {
		return nil, err
	}
	return e, nil
}

// view is the compared part of a partial kind's content.
func (c *Checker) view(kind string, data []byte) string {
	switch kind {
	case KindClaudeSettings:
		return claudeView(data)
	case KindGitConfig:
		return c.cache.gitView(data)
	}
	return ""
}

// equivalent reports whether now holds what was (the compared part).
func equivalent(was, now *entry) bool {
	if was.Type != now.Type {
		return was.Kind != KindFile && was.Kind != KindDir && was.View == now.View && (was.Type == typeAbsent || now.Type == typeAbsent)
	}
	switch was.Kind {
	case KindClaudeSettings, KindGitConfig:
		return was.View == now.View
	case KindDir:
		return was.Mode == now.Mode && was.Link == now.Link
	}
	if was.Type == typeSymlink {
		return was.Link == now.Link
	}
	// A new hard link to a watched file lets a later write through the
	// link change it: the file is replaced (restored) so the link is cut.
	return was.SHA256 == now.SHA256 && was.Mode == now.Mode && (now.Nlink <= max(was.Nlink, 1))
}

// what names the change from was to now.
func what(was, now *entry) string {
	switch {
	case was.Type == typeAbsent:
		return "created"
	case now.Type == typeAbsent:
		return "deleted"
	case was.Type != now.Type:
		return "type"
	case was.Kind == KindClaudeSettings:
		return "hooks"
	case was.Kind == KindGitConfig:
		return "hooks_path"
	case was.SHA256 != now.SHA256 || was.Link != now.Link:
		return "modified"
	case was.Mode != now.Mode:
		return "mode"
	default:
		return "linked"
	}
}

// Expect announces a write that is allowed: path will hold data (nil: it
// will be removed). A check that finds exactly that content takes it as
// the new baseline instead of undoing it. Call it before the write lands.
func (c *Checker) Expect(path string, data []byte) error {
	return c.expectSum(path, contentSum(data))
}

// contentSum is how the baseline names what a path holds after a write of
// data: its hash, or typeAbsent for a removal (nil data).
func contentSum(data []byte) string {
	if data == nil {
		return typeAbsent
	}
	return hashOf(data)
}

func (c *Checker) expectSum(path, sum string) error {
	dir := filepath.Join(c.dir, "expect")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("integrity: %w", err)
	}
	name := filepath.Join(dir, expectName(c.key(c.absPath(path)), sum))
	// The file's time is its age; its content names the path for a reader.
	if err := os.WriteFile(name, []byte(c.key(c.absPath(path))+"\n"), 0o600); err != nil {
		return fmt.Errorf("integrity: announce a write: %w", err)
	}
	now := c.now()
	_ = os.Chtimes(name, now, now)
	return nil
}

func expectName(key, sum string) string {
	k := sha256.Sum256([]byte(key))
	return hex.EncodeToString(k[:12]) + "-" + sum
}

// expected reports whether a live announcement says key may hold sum, and
// consumes it.
func (c *Checker) expected(key, sum string) bool {
	name := filepath.Join(c.dir, "expect", expectName(key, sum))
	fi, err := os.Lstat(name)
	if err != nil {
		return false
	}
	if c.now().Sub(fi.ModTime()) > ExpectLifetime {
		_ = os.Remove(name)
		return false
	}
	return true
}

func (c *Checker) forget(key, sum string) {
	_ = os.Remove(filepath.Join(c.dir, "expect", expectName(key, sum)))
}

// absPath makes a path absolute against the root, links in the directory
// part left as they are (the manifest keys paths as DES names them).
func (c *Checker) absPath(p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(c.root, p)
	}
	return filepath.Clean(p)
}

// Settle records an announced write once it has landed: when path holds
// what Expect announced, the baseline takes it; otherwise nothing changes
// (and a later check undoes what is there). Paths the baseline does not
// watch are ignored.
func (c *Checker) Settle(ctx context.Context, path string) error {
	return c.SettleAll(ctx, path)
}

// SettleAll is Settle for several writes done together: the baseline is
// read and saved once for all of them (a save rewrites the whole manifest,
// which grows with the watched trees).
func (c *Checker) SettleAll(ctx context.Context, paths ...string) error {
	unlock, err := c.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	m, err := c.load()
	if err != nil || m == nil {
		return err
	}
	return c.recordAll(ctx, m, paths, c.settle)
}

// recordAll records each of paths in m (record, with ours) and saves m when
// any was recorded: a path that fails costs the others nothing (Settle's
// announcements are consumed as they are settled). It stops at ctx's end.
func (c *Checker) recordAll(ctx context.Context, m *manifest, paths []string, ours func(key, sum string) bool) error {
	changed := false
	var errs []error
	for _, path := range paths {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		ok, err := c.record(m, path, ours)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		changed = changed || ok
	}
	if changed {
		errs = append(errs, c.save(m))
	}
	return errors.Join(errs...)
}

// settle says whether a live announcement says DES wrote sum at key, and
// consumes it.
func (c *Checker) settle(key, sum string) bool {
	if !c.expected(key, sum) {
		return false
	}
	c.forget(key, sum)
	return true
}

// record observes path and, when it is watched and ours says its state is
// DES's (key, and the content's sum or typeAbsent), records it in m;
// whether m changed.
func (c *Checker) record(m *manifest, path string, ours func(key, sum string) bool) (bool, error) {
	key := c.key(c.absPath(path))
	was, ok := m.Entries[key]
	kind, tree := KindFile, ""
	if ok {
		kind, tree = was.Kind, was.Tree
	} else if tree = c.treeOf(m, key); tree == "" && !c.isGuardedDoc(m, key) {
		return false, nil
	}
	now, err := c.observe(key, kind, tree)
	if err != nil {
		return false, err
	}
	now.Keep = ok && was.Keep
	sum := now.SHA256
	if now.Type == typeAbsent {
		sum = typeAbsent
	}
	if !ours(key, sum) {
		return false, nil
	}
	c.put(m, key, now)
	return true, nil
}

// ownWriteWait bounds WriteOwn's wait for the lock: another write holds it
// for a moment, a check for as long as its scan takes.
const ownWriteWait = 5 * time.Millisecond

// WriteOwn runs write, DES's own write of data at each of paths (nil data:
// their removal), holding the lock every check holds, and then records in
// the baseline each watched path that holds data. No check can run between
// the write and the record, so nothing needs announcing (Expect's file for
// each path, Settle's removal of it). When the lock stays busy (a check
// runs), it returns false without running write: announce the write then.
// The error is write's; the baseline is best effort, as Settle's.
func (c *Checker) WriteOwn(ctx context.Context, paths []string, data []byte, write func() error) (ran bool, err error) {
	lctx, cancel := context.WithTimeout(ctx, ownWriteWait)
	unlock, lerr := c.lock(lctx)
	cancel()
	if lerr != nil {
		return false, nil
	}
	defer unlock()
	err = write()
	m, lerr := c.load()
	if lerr != nil || m == nil {
		return true, err
	}
	want := contentSum(data)
	// The write is done: it is recorded whatever the caller's context says.
	if rerr := c.recordAll(context.WithoutCancel(ctx), m, paths, func(_, sum string) bool { return sum == want }); rerr != nil {
		c.logger.Warn("integrity: DES's own write not recorded in the baseline; a later check may undo it", "paths", paths, "err", rerr)
	}
	return true, err
}

// put records e for key; an absent path that is not a literal watched
// path leaves the manifest.
func (c *Checker) put(m *manifest, key string, e *entry) {
	if e.Type == typeAbsent && !e.Keep {
		delete(m.Entries, key)
		return
	}
	m.Entries[key] = e
	if e.Type == typeFile && e.Kind == KindFile && matchAny(m.Watch.StepGlobs, key) {
		d := pathDir(key)
		if !slices.Contains(m.StepDirs, d) {
			m.StepDirs = append(m.StepDirs, d)
			sort.Strings(m.StepDirs)
		}
	}
}

// Accept takes every watched path as it is now as the new baseline, as
// Begin does between calls, walking the project again for step files; for
// `des-hook integrity accept` after a hand edit. It refuses while watched calls
// are in flight (ErrCallsRunning, with their ids): what is on disk may be
// their doing, and a command must not accept its own changes.
func (c *Checker) Accept(ctx context.Context, w *Watch) error {
	unlock, err := c.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if running := c.CallerInCall(c.client); len(running) > 0 {
		return fmt.Errorf("integrity: %w: %s (%s)", ErrCallsRunning, strings.Join(running, ", "), runningNote)
	}
	return c.refresh(ctx, w, true)
}

// bytesHasAny reports whether data contains any of the needles.
func bytesHasAny(data []byte, needles ...string) bool {
	for _, n := range needles {
		if bytes.Contains(data, []byte(n)) {
			return true
		}
	}
	return false
}
