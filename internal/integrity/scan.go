package integrity

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/deterministic-exec/des/internal/glob"
	"github.com/deterministic-exec/des/internal/stepdoc"
)

// target is a path the baseline watches.
type target struct {
	key, kind, tree string
	keep            bool // recorded even when absent: a file appearing there is new
}

// Claude Code's project settings files, where DES's hooks live.
var claudeSettings = []string{".claude/settings.json", ".claude/settings.local.json"}

// skipDirs are never walked for step files: they are not the project's
// documents, and they can be huge.
var skipDirs = map[string]bool{".git": true, "node_modules": true, "vendor": true}

// tempName matches the temporary files DES's writers rename into place
// (os.CreateTemp's ".run-*", fileio.WriteAtomic's ".NAME.tmp-*"): a check
// must not remove one between its creation and its rename. The names end
// in digits, so no policy or data loader takes them for its own.
var tempName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\.(run-|.+\.tmp-)[0-9]+$`) })

// looksLikeStep tells a DES step file from any JSON file under a "steps"
// folder (a CI workflow's, an onboarding flow's, a test fixture named
// 01-01.json): the write guard's rule, by its shape (stepdoc.Looks).
func looksLikeStep(data []byte) bool { return stepdoc.Looks(data) }

func isMeta(s string) bool { return strings.ContainsAny(s, "*?[\\") }

func matchAny(globs []string, key string) bool {
	for _, g := range globs {
		if glob.Match(g, key) {
			return true
		}
	}
	return false
}

func pathDir(key string) string {
	d := path.Dir(key)
	if d == "." {
		return ""
	}
	return d
}

// deepGlobs are the globs a directory walk finds ("**"), as opposed to
// those filepath.Glob expands.
func deepGlobs(w Watch) []string {
	var out []string
	for _, g := range append(slices.Clone(w.StepGlobs), w.StateGlobs...) {
		if strings.Contains(g, "**") {
			out = append(out, g)
		}
	}
	return out
}

// walkStepDirs walks the project, boundedly, for directories holding a
// file that a "**" glob matches.
func (c *Checker) walkStepDirs(ctx context.Context, globs []string) ([]string, error) {
	if len(globs) == 0 {
		return nil, nil
	}
	seen, n := map[string]bool{}, 0
	err := filepath.WalkDir(c.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == c.root {
				return err
			}
			return nil // an unreadable directory is not DES's
		}
		if n++; n > maxWalk {
			c.logger.Warn("integrity: the walk for step files stopped at its bound", "entries", maxWalk)
			return filepath.SkipAll
		}
		if n%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if d.IsDir() {
			if p != c.root && skipDirs[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if key := c.key(p); matchAny(globs, key) {
			seen[pathDir(key)] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("integrity: walk %s: %w", c.root, err)
	}
	dirs := make([]string, 0, len(seen))
	for d := range seen {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	return dirs, nil
}

// targets lists the watched paths as the disk shows them now, from the
// watched set and the step directories of m (walked again when walk).
func (c *Checker) targets(ctx context.Context, m *manifest, walk bool) ([]target, error) {
	w := m.Watch
	out := map[string]target{}
	add := func(t target) {
		if t.key == "" {
			return
		}
		if old, ok := out[t.key]; ok {
			t.keep = t.keep || old.keep
		}
		out[t.key] = t
	}
	add(target{key: cleanRel(w.ConfigFile), kind: KindFile, keep: true})
	for _, s := range claudeSettings {
		add(target{key: s, kind: KindClaudeSettings, keep: true})
	}

	// Protected directories: the directory and all below it.
	for _, tree := range w.Trees {
		root := c.abs(tree)
		add(target{key: c.key(root), kind: KindDir, tree: tree})
		n := 0
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || p == root {
				return nil
			}
			if n++; n > maxTreeSize {
				return fmt.Errorf("integrity: more than %d entries under %s", maxTreeSize, tree)
			}
			if tempName().MatchString(d.Name()) {
				return nil // DES's own writer's temporary file, about to be renamed
			}
			kind := KindFile
			if d.IsDir() {
				kind = KindDir
			}
			add(target{key: c.key(p), kind: kind, tree: tree})
			return nil
		})
		if err != nil {
			return nil, err
		}
	}

	// Workflow-state documents: literal paths are kept even when absent.
	for _, g := range w.StateGlobs {
		switch {
		case strings.Contains(g, "**"):
			continue // found with the step directories
		case !isMeta(g):
			add(target{key: cleanRel(g), kind: KindFile, keep: true})
		default:
			matches, _ := filepath.Glob(c.abs(g))
			for _, p := range matches {
				add(target{key: c.key(p), kind: KindFile})
			}
		}
	}

	// Step files (and "**" state globs) in the known directories.
	deep := deepGlobs(w)
	if walk {
		dirs, err := c.walkStepDirs(ctx, deep)
		if err != nil {
			return nil, err
		}
		m.StepDirs, m.Scanned = dirs, c.now()
	}
	for _, d := range m.StepDirs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ents, err := os.ReadDir(c.abs(d))
		if err != nil {
			continue // gone: its files are entries, checked as such
		}
		for _, e := range ents {
			key := path.Join(d, e.Name())
			if !matchAny(deep, key) {
				continue
			}
			if _, known := m.Entries[key]; !known && matchAny(w.StepGlobs, key) && !matchAny(w.StateGlobs, key) {
				// One DES cannot read (a link to a directory, a FIFO) is
				// watched, as the write guard takes it for a step file.
				if data, err := read(c.abs(key)); err == nil && !looksLikeStep(data) {
					continue // a JSON file in a "steps" folder that is not DES's
				}
			}
			add(target{key: key, kind: KindFile})
		}
	}

	for p, kind := range c.user {
		if kind == KindClaudeSettings || kind == KindGitConfig {
			add(target{key: c.key(filepath.Clean(p)), kind: kind, keep: true})
		}
	}

	// Git's files that can switch DES's git hooks off: pre-commit,
	// reference-transaction, which judges every branch or tag move, and
	// post-commit, which notes the audit trail's head on each commit.
	if cfg, hooks := c.gitPaths(m); cfg != "" {
		add(target{key: c.key(cfg), kind: KindGitConfig, keep: true})
		add(target{key: c.key(filepath.Join(hooks, "pre-commit")), kind: KindFile, keep: true})
		add(target{key: c.key(filepath.Join(hooks, "reference-transaction")), kind: KindFile, keep: true})
		add(target{key: c.key(filepath.Join(hooks, "post-commit")), kind: KindFile, keep: true})
		for _, p := range c.worktreeConfigs() {
			add(target{key: c.key(p), kind: KindGitConfig, keep: true})
		}
	}
	for _, p := range c.includeTargets(m) {
		if _, known := out[c.key(p)]; !known {
			add(target{key: c.key(p), kind: KindGitConfig, keep: true})
		}
	}

	list := make([]target, 0, len(out))
	for _, t := range out {
		list = append(list, t)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].key < list[j].key })
	return list, nil
}

// ancestors lists the directories between the root and each target inside
// it, so that a directory replaced by a link (which would carry every
// write through it elsewhere) is seen and restored first.
func ancestors(ts []target) []target {
	seen := map[string]bool{}
	var out []target
	for _, t := range ts {
		if filepath.IsAbs(filepath.FromSlash(t.key)) {
			continue
		}
		for d := pathDir(t.key); d != ""; d = pathDir(d) {
			if seen[d] {
				break
			}
			seen[d] = true
			out = append(out, target{key: d, kind: KindDir})
		}
	}
	return out
}

// gitPaths finds git's config file and hooks directory for the project:
// the repository whose work tree holds the root (a worktree's .git file
// followed to its common directory). The hooks directory is core.hooksPath
// as the baseline recorded it, else the common directory's hooks.
func (c *Checker) gitPaths(m *manifest) (config, hooks string) {
	top, _, common := c.gitLayout()
	if common == "" {
		return "", ""
	}
	config = filepath.Clean(filepath.Join(common, "config"))
	hooks = filepath.Join(common, "hooks")
	if m != nil {
		if e, ok := m.Entries[c.key(config)]; ok && e.View != "" {
			if hp := hooksPathOf(e.View); hp != "" {
				if strings.HasPrefix(hp, "~/") {
					if home := c.homeDir(); home != "" {
						hp = filepath.Join(home, hp[2:])
					}
				}
				if !filepath.IsAbs(hp) {
					hp = filepath.Join(top, hp)
				}
				hooks = hp
			}
		}
	}
	return config, filepath.Clean(hooks)
}

// gitLayout finds the work tree's top, its git directory and the common
// directory (the same but for a linked worktree); "" when the root is in
// no repository.
func (c *Checker) gitLayout() (top, gitDir, common string) {
	for dir := c.root; ; {
		p := filepath.Join(dir, ".git")
		if fi, err := os.Stat(p); err == nil {
			top = dir
			if fi.IsDir() {
				gitDir = p
			} else if data, err := read(p); err == nil {
				if s, ok := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:"); ok {
					gitDir = strings.TrimSpace(s)
					if !filepath.IsAbs(gitDir) {
						gitDir = filepath.Join(dir, gitDir)
					}
				}
			}
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", "", ""
		}
		dir = parent
	}
	if gitDir == "" {
		return "", "", ""
	}
	common = gitDir
	if data, err := read(filepath.Join(gitDir, "commondir")); err == nil {
		common = strings.TrimSpace(string(data))
		if !filepath.IsAbs(common) {
			common = filepath.Join(gitDir, common)
		}
	}
	return top, filepath.Clean(gitDir), filepath.Clean(common)
}

// worktreeConfigs are the files git reads when extensions.worktreeConfig
// is on (`git config --worktree`): config.worktree in the common directory
// and, for a linked worktree, in its own git directory. They are watched
// whether or not the extension is on, since one command can switch it on
// and write them.
func (c *Checker) worktreeConfigs() []string {
	_, gitDir, common := c.gitLayout()
	if common == "" {
		return nil
	}
	out := []string{filepath.Join(common, "config.worktree")}
	if gitDir != common {
		out = append(out, filepath.Join(gitDir, "config.worktree"))
	}
	return out
}

// includeTargets are the files the include directives of the git config
// files m records name (include.path, includeIf.*.path, whatever the
// condition): "~/" is the home directory, a relative path is relative to
// the including file's directory, as git resolves them. One level: an
// included file's own includes are found once it is recorded.
func (c *Checker) includeTargets(m *manifest) []string {
	var out []string
	for key, e := range m.Entries {
		if e.Kind != KindGitConfig || e.View == "" {
			continue
		}
		for _, inc := range includesOf(e.View) {
			_, p, ok := strings.Cut(inc, " ")
			if !ok || p == "" {
				continue
			}
			switch {
			case strings.HasPrefix(p, "~/"):
				home := c.homeDir()
				if home == "" {
					continue
				}
				p = filepath.Join(home, p[2:])
			case !filepath.IsAbs(p):
				p = filepath.Join(filepath.Dir(c.abs(key)), p)
			}
			out = append(out, filepath.Clean(p))
		}
	}
	sort.Strings(out)
	return out
}

// isGuardedDoc reports whether key names a guarded document of m's watch.
func (c *Checker) isGuardedDoc(m *manifest, key string) bool {
	return matchAny(m.Watch.StateGlobs, key) || matchAny(m.Watch.StepGlobs, key)
}

// treeOf is the protected directory key is in, "" when none.
func (c *Checker) treeOf(m *manifest, key string) string {
	for _, t := range m.Watch.Trees {
		if key == t || strings.HasPrefix(key, t+"/") {
			return t
		}
	}
	return ""
}

// refresh takes the disk as the baseline. Entries whose stat did not
// change are kept without reading the file. full walks for step
// directories again whatever the age of the last walk.
func (c *Checker) refresh(ctx context.Context, w *Watch, full bool) error {
	old, err := c.load()
	if err != nil {
		c.logger.Warn("integrity: recording a new baseline", "err", err)
		old = nil
	}
	watch := DefaultWatch()
	switch {
	case w != nil:
		watch = w.merge(DefaultWatch())
	case old != nil:
		watch = old.Watch.merge(DefaultWatch())
	}
	m := &manifest{Version: manifestVersion, Watch: watch, Entries: map[string]*entry{}}
	walk := full || old == nil || c.now().Sub(old.Scanned) > stepRescan || !slices.Equal(deepGlobs(old.Watch), deepGlobs(watch))
	if !walk {
		m.StepDirs, m.Scanned = old.StepDirs, old.Scanned
	}
	// Git's config comes first: its recorded core.hooksPath says where the
	// pre-commit hook is.
	// The other config files come with it: their include directives say
	// which files to watch too.
	m.Entries = map[string]*entry{}
	var configs []string
	if cfg, _ := c.gitPaths(nil); cfg != "" {
		configs = append([]string{cfg}, c.worktreeConfigs()...)
	}
	for p, kind := range c.user {
		if kind == KindGitConfig {
			configs = append(configs, filepath.Clean(p))
		}
	}
	for _, p := range configs {
		e, err := c.observe(c.key(p), KindGitConfig, "")
		if err != nil {
			if e = c.unreadable(old, c.key(p), err); e == nil {
				continue
			}
		}
		m.Entries[c.key(p)] = e
	}
	if !walk { // lets targets tell known step files from new ones
		for k, e := range old.Entries {
			if _, ok := m.Entries[k]; !ok {
				m.Entries[k] = e
			}
		}
	}
	ts, err := c.targets(ctx, m, walk)
	if err != nil {
		return err
	}
	ts = append(ts, ancestors(ts)...)
	entries := map[string]*entry{}
	for _, t := range ts {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("integrity: %w", err)
		}
		s, _, err := lstat(c.abs(t.key))
		if err != nil {
			return fmt.Errorf("integrity: %w", err)
		}
		if t.kind == KindDir && s.Type == typeAbsent {
			continue // a missing directory above a watched path is not recorded
		}
		if old != nil {
			if e, ok := old.Entries[t.key]; ok && e.Kind == t.kind && e.sameStat(s, old.Recorded) {
				e.Tree, e.Keep = t.tree, t.keep
				entries[t.key] = e
				continue
			}
		}
		e, err := c.observe(t.key, t.kind, t.tree)
		if err != nil {
			if e = c.unreadable(old, t.key, err); e == nil {
				continue
			}
		}
		e.Keep = t.keep
		if e.Type == typeAbsent && !e.Keep {
			continue
		}
		entries[t.key] = e
	}
	m.Entries = entries
	m.Recorded = c.now()
	// Where HEAD points now: a later check takes what git rewrote when
	// HEAD moved from here (gitsync.go).
	if h, ok := c.readHead(ctx); ok {
		m.Git = &h
	}
	if old != nil && old.sameAs(m) {
		return nil
	}
	if err := c.save(m); err != nil {
		return err
	}
	c.collect(m)
	return nil
}

// unreadable is what a new baseline records for a file it could not read
// (too large, say): the last good entry when there is one, so that the
// next check puts the good content back; else nothing, so that the next
// check finds the file new and removes it. A file des cannot read is never
// taken as good, and never stops the baseline of the others.
func (c *Checker) unreadable(old *manifest, key string, err error) *entry {
	c.logger.Warn("integrity: a watched file cannot be read; not taken as good", "path", key, "err", err)
	if old != nil {
		if e, ok := old.Entries[key]; ok {
			return e
		}
	}
	return nil
}

// sameAs reports whether two baselines record the same thing, so that an
// unchanged one is not written again.
func (m *manifest) sameAs(o *manifest) bool {
	if (m.Git == nil) != (o.Git == nil) || m.Git != nil && *m.Git != *o.Git {
		return false
	}
	if !slices.Equal(m.StepDirs, o.StepDirs) || !m.Scanned.Equal(o.Scanned) || len(m.Entries) != len(o.Entries) ||
		m.Watch.ConfigFile != o.Watch.ConfigFile || !slices.Equal(m.Watch.Trees, o.Watch.Trees) ||
		!slices.Equal(m.Watch.StateGlobs, o.Watch.StateGlobs) || !slices.Equal(m.Watch.StepGlobs, o.Watch.StepGlobs) {
		return false
	}
	for k, e := range m.Entries {
		if f, ok := o.Entries[k]; !ok || *f != *e {
			return false
		}
	}
	return true
}

// collect removes the copies the baseline no longer refers to, once they
// outnumber the ones it does.
func (c *Checker) collect(m *manifest) {
	ents, err := os.ReadDir(filepath.Join(c.dir, "objects"))
	if err != nil || len(ents) <= 2*len(m.Entries)+64 {
		return
	}
	used := map[string]bool{}
	for _, e := range m.Entries {
		used[e.SHA256] = true
	}
	for _, e := range ents {
		if !used[e.Name()] {
			_ = os.Remove(filepath.Join(c.dir, "objects", e.Name()))
		}
	}
}

// GitConfigFiles lists, absolute, the git config files that can set
// core.hooksPath for the project as they are on disk now: the repository's
// config and config.worktree files, the user's (Options.UserFiles of kind
// KindGitConfig) and the files their include directives name. A Write or
// Edit of one is judged on what it does to core.hooksPath (HooksPathChanged).
func (c *Checker) GitConfigFiles() []string {
	m := &manifest{Entries: map[string]*entry{}}
	var files []string
	if cfg, _ := c.gitPaths(nil); cfg != "" {
		files = append([]string{cfg}, c.worktreeConfigs()...)
	}
	for p, kind := range c.user {
		if kind == KindGitConfig {
			files = append(files, filepath.Clean(p))
		}
	}
	for _, p := range files {
		data, err := read(p)
		if err != nil {
			continue
		}
		m.Entries[c.key(p)] = &entry{Kind: KindGitConfig, View: c.cache.gitView(data)}
	}
	files = append(files, c.includeTargets(m)...)
	slices.Sort(files)
	return slices.Compact(files)
}

// homeDir is the user's home directory for git's "~/" paths: the hook's
// (Options.Home), else this process's.
func (c *Checker) homeDir() string {
	if filepath.IsAbs(c.home) {
		return c.home
	}
	home, _ := os.UserHomeDir()
	return home
}
