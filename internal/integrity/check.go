package integrity

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/deterministic-exec/des/internal/fileio"
)

// Begin is called before a watched tool call runs (PreToolUse). When no
// other watched call is in flight, and none has outlived its lifetime
// without an End since the last Begin, the disk is taken as the baseline:
// the changes made between tool calls (a user's hand edit) are accepted. The
// call is then recorded as in flight under id. w is the watched set of the
// settings in force, nil when they could not be loaded (the baseline's own
// is used). The call counts as in flight for at most lifetime
// (InFlightLifetime when 0) if End never comes. It returns whether the
// baseline was refreshed.
func (c *Checker) Begin(ctx context.Context, id string, w *Watch, lifetime time.Duration) (bool, error) {
	unlock, err := c.lock(ctx)
	if err != nil {
		return false, err
	}
	defer unlock()
	refreshed := false
	// A call whose End never came (its PostToolUse was never sent: Claude
	// Code killed or crashed during it) was never checked: what it changed
	// is not a hand edit made between calls. The baseline stays, and this
	// call's End compares with it.
	if lapsed := c.lapsed(id); len(c.inFlight(id)) == 0 && !lapsed {
		if err := c.refresh(ctx, w, false); err != nil {
			return false, err
		}
		refreshed = true
	} else if _, err := os.Lstat(c.manifestPath()); errors.Is(err, fs.ErrNotExist) {
		if err := c.refresh(ctx, w, false); err != nil {
			return false, err
		}
		refreshed = true
	}
	return refreshed, c.mark(id, lifetime)
}

// Cancel clears a call that will not run (denied at PreToolUse) from the
// calls in flight.
func (c *Checker) Cancel(id string) { c.unmark(id) }

// End is called once a watched tool call has run (PostToolUse or
// PostToolUseFailure): it compares every watched path with the baseline and
// restores what changed outside an announced write, then clears the call
// from the calls in flight, unless stillRunning (a command left running in
// the background, whose later writes the next checks must still judge).
// With no baseline it returns ErrNoBaseline.
func (c *Checker) End(ctx context.Context, id string, stillRunning bool) (Report, error) {
	return c.EndCall(ctx, Call{ID: id, StillRunning: stillRunning})
}

// EndCall is End with what the hook knows of the command: the git
// subcommands it ran let End take what git rewrote honestly (gitsync.go).
func (c *Checker) EndCall(ctx context.Context, call Call) (Report, error) {
	unlock, err := c.lock(ctx)
	if err != nil {
		return Report{}, err
	}
	defer unlock()
	return c.end(ctx, call)
}

// EndOpen ends a call whose End never came once Claude Code reports it
// done (PostToolBatch lists the calls of a batch: one the user declined
// has no PostToolUse), with the check its End would have made: what
// changed while it was in flight is judged, and the next Begin takes the
// disk again rather than keeping the baseline for the call's whole
// lifetime. ok is false, and nothing is done, when the call is not in
// flight or its End came (a command that left something running stays in
// flight until that ends).
func (c *Checker) EndOpen(ctx context.Context, call Call) (rep Report, ok bool, err error) {
	p := c.flightPath(call.ID)
	if _, err := os.Lstat(p); call.ID == "" || err != nil {
		return Report{}, false, nil // not in flight: no need to wait for the lock
	}
	unlock, err := c.lock(ctx)
	if err != nil {
		return Report{}, false, err
	}
	defer unlock()
	if _, err := os.Lstat(p); err != nil {
		return Report{}, false, nil
	}
	if f := readFlight(p); f != nil && f.ended() {
		return Report{}, false, nil
	}
	rep, err = c.end(ctx, call)
	return rep, true, err
}

// end is EndCall under the lock.
func (c *Checker) end(ctx context.Context, call Call) (rep Report, err error) {
	var finish func(id string)
	switch {
	case !call.StillRunning:
		finish = c.unmark
	case call.ID == "":
	case !c.leave(ctx, call):
		// Looked at before the check: what a process that has ended by now
		// wrote is on disk for this check; what runs on keeps the call in
		// flight.
		finish = c.unmark
	default:
		finish = c.markEnded
	}
	// A check that did not run to its end (out of time, a baseline it
	// could not read or save) judged nothing for sure: the call stays in
	// flight, so that the next Begin keeps the baseline once its lifetime
	// lapses, and a later check judges what it did.
	defer func() {
		if finish != nil && (err == nil || errors.Is(err, ErrNoBaseline)) {
			finish(call.ID)
		}
	}()
	m, err := c.load()
	if err != nil {
		return Report{}, err
	}
	if m == nil {
		// Begin records a baseline before every watched call: none now
		// means the state directory was removed during the call (or DES
		// was installed during it).
		return Report{}, ErrNoBaseline
	}
	// Calls that have lapsed by now (their processes ended, or their End
	// never came) did what they did before this check: it judges that, so
	// the next Begin may take the disk again.
	_, lapsed := c.flights(call.ID)
	rep, changed, err := c.check(ctx, m, call)
	if err == nil {
		for _, p := range lapsed {
			_ = os.Remove(p)
		}
	}
	if changed {
		if serr := c.save(m); serr != nil && err == nil {
			err = serr
		}
	}
	return rep, err
}

// ErrCallsRunning is returned by Accept while watched calls are in flight:
// what is on disk may be their doing.
var ErrCallsRunning = errors.New("tool calls are running")

// Check compares and restores like End, for a caller outside a tool call
// (`des-hook integrity check`).
func (c *Checker) Check(ctx context.Context) (Report, error) {
	return c.EndCall(ctx, Call{StillRunning: true})
}

// check compares m with the disk and restores. It updates m (stat of
// unchanged content, restored files, accepted writes); changed tells
// whether m must be saved.
func (c *Checker) check(ctx context.Context, m *manifest, call Call) (rep Report, changed bool, err error) {
	ts, err := c.targets(ctx, m, false)
	if err != nil {
		return rep, false, err
	}
	all := map[string]target{}
	for k, e := range m.Entries {
		all[k] = target{key: k, kind: e.Kind, tree: e.Tree, keep: e.Keep}
	}
	for _, t := range ts {
		if _, ok := all[t.key]; !ok {
			all[t.key] = t
		}
	}
	keys := make([]string, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	// Parents sort before their children: a directory is restored before
	// what it holds.
	sort.Strings(keys)
	dirs := &openDirs{}
	defer dirs.close()
	var later, laterDirs []*deferred
	var items []keptItem
	for _, key := range keys {
		if err := ctx.Err(); err != nil {
			return rep, changed, fmt.Errorf("integrity: the check ran out of time: %w", err)
		}
		t := all[key]
		was, known := m.Entries[key]
		if !known {
			was = &entry{Kind: t.kind, Tree: t.tree, stat: stat{Type: typeAbsent}}
		}
		s, _, err := lstat(c.abs(key))
		if err != nil {
			return rep, changed, fmt.Errorf("integrity: %w", err)
		}
		if known && was.sameStat(s, m.Recorded) {
			continue
		}
		now, data, err := c.snapshot(key, was.Kind, s)
		if err != nil {
			return rep, changed, err
		}
		now.Tree, now.Keep = was.Tree, was.Keep
		if !known && was.Kind == KindDir && now.Type == typeDir {
			// A new directory in a protected one holds nothing by itself;
			// the files put in it are judged one by one. DES makes some
			// (the pending records' directory).
			m.Entries[key], changed = now, true
			continue
		}
		if equivalent(was, now) {
			if known && now.Type == typeFile {
				if err := c.keep(now.SHA256, data); err != nil {
					return rep, changed, err
				}
			}
			if known {
				m.Entries[key], changed = now, true
			}
			continue
		}
		sum := now.SHA256
		if now.Type == typeAbsent {
			sum = typeAbsent
		}
		if (now.Type == typeFile || now.Type == typeAbsent) && c.expected(key, sum) {
			if now.Type == typeFile {
				if err := c.keep(now.SHA256, data); err != nil {
					return rep, changed, err
				}
			}
			c.forget(key, sum)
			c.put(m, key, now)
			rep.Accepted = append(rep.Accepted, key)
			changed = true
			continue
		}
		if was.Kind == KindDir && was.Tree == "" && was.Type == typeDir && now.Type == typeAbsent && !filepath.IsAbs(filepath.FromSlash(key)) {
			// A directory on the way to guarded documents, gone: git
			// removes the directories a checkout empties. Judged once the
			// documents below it are.
			laterDirs = append(laterDirs, &deferred{key: key, was: was, now: now})
			continue
		}
		if c.gitCandidate(m, key, was, now) {
			// Judged against git once every path is compared: one git
			// command for them all.
			later = append(later, &deferred{key: key, was: was, now: now, data: data})
			continue
		}
		c.undo(dirs, &rep, &items, m, call, key, was, now, data)
		changed = true
	}
	if len(later) > 0 {
		changed = true
		head, gerr := c.judgeGit(ctx, m, call, later)
		if gerr != nil {
			c.logger.Warn("integrity: cannot read git's commits; the changed guarded documents are undone", "err", gerr)
		}
		c.sync(ctx, dirs, &rep, &items, m, call, head, later)
	}
	// Deepest first: a directory emptied with its documents leaves its
	// parent empty too.
	slices.Reverse(laterDirs)
	for _, d := range laterDirs {
		changed = true
		if len(rep.Synced) > 0 && !c.holdsAny(m, d.key) {
			delete(m.Entries, d.key) // emptied by git with the documents it held
			continue
		}
		// A restore below may have made it again: look afresh, so that
		// what was restored in it is not removed.
		s, _, err := lstat(c.abs(d.key))
		if err != nil {
			return rep, changed, fmt.Errorf("integrity: %w", err)
		}
		if now, _, err := c.snapshot(d.key, KindDir, s); err == nil && !equivalent(d.was, now) {
			if now.Type == typeDir {
				// Made again by a restore below it: only its mode.
				dirs.close()
			}
			c.undo(dirs, &rep, &items, m, call, d.key, d.was, now, nil)
		} else if err == nil {
			now.Tree, now.Keep = d.was.Tree, d.was.Keep
			m.Entries[d.key] = now
		}
	}
	if len(items) > 0 {
		alive, kerr := c.keepAll(items)
		if kerr != nil {
			c.logger.Error("integrity: the kept contents' index was not updated", "err", kerr)
		}
		for i := range rep.Changes {
			if id := rep.Changes[i].Kept; id != "" && !alive[id] {
				rep.Changes[i].Kept = ""
			}
		}
		for i := range rep.Synced {
			if id := rep.Synced[i].Kept; id != "" && !alive[id] {
				rep.Synced[i].Kept = ""
			}
		}
	}
	return rep, changed, nil
}

// sync takes the deferred changes git made honestly and undoes the rest.
func (c *Checker) sync(ctx context.Context, dirs *openDirs, rep *Report, items *[]keptItem, m *manifest, call Call, head Head, ds []*deferred) {
	before := m.Git
	committed := c.committed(ctx, before, head, ds)
	for _, d := range ds {
		if d.syncedHow != "" && call.AcceptSync != nil && !c.acceptSync(ctx, call, d) {
			d.syncedHow = ""
		}
		if d.syncedHow == "" {
			c.undo(dirs, rep, items, m, call, d.key, d.was, d.now, d.data)
			continue
		}
		s := Synced{Path: d.key, What: what(d.was, d.now), Was: sumOf(d.was), Now: sumOf(d.now), From: d.syncedHow}
		if d.now.Type == typeFile {
			if err := c.keep(d.now.SHA256, d.data); err != nil {
				c.logger.Error("integrity: cannot keep a copy of what git wrote; undoing it", "path", d.key, "err", err)
				c.undo(dirs, rep, items, m, call, d.key, d.was, d.now, d.data)
				continue
			}
		}
		if d.was.Type == typeFile && !committed[d.key] {
			// Git replaced a content no commit DES read holds (a step in
			// progress, stashed or reset away): kept, so nothing is lost,
			// and a later `git stash pop` of it is honest.
			if old, err := c.copyOf(d.was.SHA256); err == nil {
				it := c.newKept(d.key, old, d.was.Mode, KeptByGit, call.ID)
				if err := c.keepBlob(it.SHA256, old); err == nil {
					*items = append(*items, it)
					s.Kept = it.ID
				}
			} else {
				c.logger.Warn("integrity: the content git replaced is not kept", "path", d.key, "err", err)
			}
		}
		d.now.Tree, d.now.Keep = d.was.Tree, d.was.Keep
		c.put(m, d.key, d.now)
		rep.Synced = append(rep.Synced, s)
	}
	if len(rep.Synced) > 0 {
		if before != nil {
			rep.GitBefore = *before
		}
		rep.GitAfter = head
		m.Git = &head
	}
}

// holdsAny reports whether the baseline records a path below dir that is
// not absent.
func (c *Checker) holdsAny(m *manifest, dir string) bool {
	for k, e := range m.Entries {
		if e.Type != typeAbsent && strings.HasPrefix(k, dir+"/") {
			return true
		}
	}
	return false
}

// sumOf is an entry's content hash, or typeAbsent.
func sumOf(e *entry) string {
	if e.Type == typeAbsent {
		return typeAbsent
	}
	return e.SHA256
}

// undo restores was at key, where now (content data) was found, keeping
// the content it undoes first (bounded: at most KeptMax a check).
func (c *Checker) undo(dirs *openDirs, rep *Report, items *[]keptItem, m *manifest, call Call, key string, was, now *entry, data []byte) {
	ch := Change{Path: key, Kind: was.Kind, What: what(was, now), Was: was.Type, Now: now.Type}
	if now.Type == typeFile && data != nil && len(*items) < KeptMax {
		it := c.newKept(key, data, now.Mode, KeptUndone, call.ID)
		if err := c.keepBlob(it.SHA256, data); err != nil {
			c.logger.Error("integrity: the undone content is not kept", "path", key, "err", err)
		} else {
			*items = append(*items, it)
			ch.Kept = it.ID
		}
	}
	if err := c.restore(dirs, key, was, now, data); err != nil {
		ch.Error = err.Error()
		c.logger.Error("integrity: cannot restore", "path", key, "err", err)
	} else {
		ch.Restored = true
	}
	rep.Changes = append(rep.Changes, ch)
	// What is on disk now is the baseline again (a merged settings
	// file included): record its stat so the next check is cheap.
	if ch.Restored {
		after, err := c.observe(key, was.Kind, was.Tree)
		if err == nil {
			after.Keep = was.Keep
			c.put(m, key, after)
		}
	}
}

// snapshot reads key as it is now (s is its lstat), without keeping a copy.
func (c *Checker) snapshot(key, kind string, s stat) (*entry, []byte, error) {
	e := &entry{Kind: kind, stat: s}
	if s.Type != typeFile {
		if kind == KindClaudeSettings || kind == KindGitConfig {
			e.View = c.view(kind, nil)
		}
		return e, nil, nil
	}
	data, err := read(c.abs(key))
	if err != nil {
		// A file des cannot read (larger than any of its files, say) is
		// a change like any other, undone with the rest: one poison file
		// must not stop the undo of the others.
		c.logger.Warn("integrity: a watched file cannot be read; taken as changed", "path", key, "err", err)
		e.SHA256 = unreadableSum
		return e, nil, nil
	}
	e.SHA256 = hashOf(data)
	if kind == KindClaudeSettings || kind == KindGitConfig {
		e.View = c.view(kind, data)
	}
	return e, data, nil
}

// unreadableSum stands for the content of a file des could not read: it
// equals no real content's hash.
const unreadableSum = "unreadable"

// beforeRestore, when set (by a test), runs before each restore.
var beforeRestore func(key string)

// restore puts was back at key, where now (with content data) is found.
func (c *Checker) restore(dirs *openDirs, key string, was, now *entry, data []byte) error {
	if beforeRestore != nil {
		beforeRestore(key)
	}
	if rel := filepath.FromSlash(key); !filepath.IsAbs(rel) {
		return c.restoreIn(dirs, rel, was, now, data)
	}
	p := c.abs(key)
	switch was.Type {
	case typeAbsent:
		if was.Kind == KindClaudeSettings || was.Kind == KindGitConfig {
			if merged, ok := c.merge(was.Kind, data, nil); ok && now.Type == typeFile {
				return fileio.WriteAtomic(p, merged)
			}
		}
		return os.RemoveAll(p)
	case typeDir:
		if now.Type != typeDir {
			if err := os.RemoveAll(p); err != nil {
				return err
			}
			if err := os.MkdirAll(p, fs.FileMode(was.Mode)); err != nil {
				return err
			}
		}
		return os.Chmod(p, fs.FileMode(was.Mode))
	case typeSymlink:
		if err := os.RemoveAll(p); err != nil {
			return err
		}
		return os.Symlink(was.Link, p)
	case typeFile:
		good, err := c.copyOf(was.SHA256)
		if err != nil {
			return err
		}
		if (was.Kind == KindClaudeSettings || was.Kind == KindGitConfig) && now.Type == typeFile {
			if merged, ok := c.merge(was.Kind, data, good); ok {
				good = merged
			}
		}
		if now.Type != typeFile {
			if err := os.RemoveAll(p); err != nil {
				return err
			}
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		// A new temporary file renamed over the path: a hard link the agent
		// made to the old file keeps the old inode and is cut off.
		if err := fileio.WriteAtomic(p, good); err != nil {
			return err
		}
		return os.Chmod(p, fs.FileMode(was.Mode))
	}
	return fmt.Errorf("cannot restore a %s", was.Type)
}

// restoreIn is restore for rel, a path inside the project, through no
// link: the check runs outside Claude Code's sandbox, and the agent can
// swap a link in for rel or for a directory above it (a background loop in
// a watched tree it may write, .des/runs, a steps directory) between the
// check's look and the restore, to carry the removal or the write to the
// user's files. The directory of rel is opened with fileio.OpenDirIn (a
// link there is refused: the next check sees what is there) and rel is
// changed by name within it; a link found at rel is removed, never
// followed.
func (c *Checker) restoreIn(dirs *openDirs, rel string, was, now *entry, data []byte) error {
	dirRel, base := filepath.Split(rel)
	if dirRel == "" {
		dirRel = "."
	}
	d, err := dirs.open(c.root, dirRel, was.Type != typeAbsent)
	if err != nil {
		if was.Type == typeAbsent && errors.Is(err, fs.ErrNotExist) {
			return nil // gone with its directory
		}
		return err
	}
	if was.Type == typeDir || now.Type == typeDir {
		defer dirs.close() // a directory made or removed: open afresh after it
	}
	switch was.Type {
	case typeAbsent:
		if was.Kind == KindClaudeSettings || was.Kind == KindGitConfig {
			if merged, ok := c.merge(was.Kind, data, nil); ok && now.Type == typeFile {
				return fileio.WriteAtomicAt(d, base, merged)
			}
		}
		return d.RemoveAll(base)
	case typeDir:
		if now.Type != typeDir {
			if err := d.RemoveAll(base); err != nil {
				return err
			}
			if err := d.Mkdir(base, fs.FileMode(was.Mode)); err != nil {
				return err
			}
		}
		if fi, err := d.Lstat(base); err != nil || !fi.IsDir() {
			return fmt.Errorf("%s changed while it was restored", rel)
		}
		return d.Chmod(base, fs.FileMode(was.Mode))
	case typeSymlink:
		if err := d.RemoveAll(base); err != nil {
			return err
		}
		return d.Symlink(was.Link, base)
	case typeFile:
		good, err := c.copyOf(was.SHA256)
		if err != nil {
			return err
		}
		if (was.Kind == KindClaudeSettings || was.Kind == KindGitConfig) && now.Type == typeFile {
			if merged, ok := c.merge(was.Kind, data, good); ok {
				good = merged
			}
		}
		if fi, err := d.Lstat(base); err == nil && !fi.Mode().IsRegular() {
			if err := d.RemoveAll(base); err != nil {
				return err
			}
		}
		// A new temporary file renamed over the path: a hard link the agent
		// made to the old file keeps the old inode and is cut off.
		if err := fileio.WriteAtomicAt(d, base, good); err != nil {
			return err
		}
		return d.Chmod(base, fs.FileMode(was.Mode))
	}
	return fmt.Errorf("cannot restore a %s", was.Type)
}

// merge puts the compared part of the good content into the current one
// (Claude Code's and git's own changes kept). ok is false when the current
// content cannot be read as its format: the whole good copy is restored.
func (c *Checker) merge(kind string, current, good []byte) ([]byte, bool) {
	switch kind {
	case KindClaudeSettings:
		return mergeClaude(current, good)
	case KindGitConfig:
		return mergeGit(current, good)
	}
	return nil, false
}

// openDirs keeps the directory the last restore inside the project opened
// (fileio.OpenDirIn), so that a flood of files in one directory (25,000 new
// files the agent made to exhaust the check's budget) is undone with one
// open, not one per file. The directory stays the one opened, even if a
// path is swapped for a link meanwhile: changes go where the check looked.
type openDirs struct {
	rel string
	d   *os.Root
}

func (o *openDirs) open(root, rel string, create bool) (*os.Root, error) {
	if o.d != nil && o.rel == rel {
		return o.d, nil
	}
	o.close()
	d, err := fileio.OpenDirIn(root, rel, create)
	if err != nil {
		return nil, err
	}
	o.rel, o.d = rel, d
	return d, nil
}

func (o *openDirs) close() {
	if o.d != nil {
		o.d.Close()
		o.d = nil
	}
}

// acceptSync asks call.AcceptSync about d with the contents before and
// after. A content des cannot read back counts as refused.
func (c *Checker) acceptSync(ctx context.Context, call Call, d *deferred) bool {
	var was []byte
	if d.was.Type == typeFile {
		old, err := c.copyOf(d.was.SHA256)
		if err != nil {
			return false
		}
		was = old
	}
	var now []byte
	if d.now.Type == typeFile {
		now = d.data
	}
	return call.AcceptSync(ctx, d.key, was, now)
}
