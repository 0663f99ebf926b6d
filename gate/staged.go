package gate

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/deterministic-exec/des/internal/gitexec"
	"github.com/deterministic-exec/des/internal/shell"
	"github.com/deterministic-exec/des/statemachine"
)

// GitTimeout bounds each git command a gate runs (Gate 2's scope, Gate 3's
// staged files).
const GitTimeout = gitexec.Timeout

// ErrNotRepository is wrapped when a directory is not in a git work tree.
var ErrNotRepository = errors.New("not in a git work tree")

// ErrStepFileUnreadable reports a step file of the commit that exists but
// cannot be read (too large, unreadable): the commit holds step files, so a
// caller is in charge and fails closed.
var ErrStepFileUnreadable = errors.New("a step file of the commit cannot be read")

// StagedStepFiles is Staged with the default setting (DefaultStepGlobs),
// relative to the repository's top level.
func StagedStepFiles(ctx context.Context, dir string) ([]CommitFile, error) {
	return StepFiles{}.Staged(ctx, dir)
}

// BashCommitFiles is BashCommit with the default setting
// (DefaultStepGlobs), relative to each repository's top level.
func BashCommitFiles(ctx context.Context, cwd, command string) ([]CommitFile, error) {
	return StepFiles{}.BashCommit(ctx, cwd, command)
}

// HasStepFiles is OnDisk with the default setting for the project at root.
func HasStepFiles(ctx context.Context, root string) (bool, error) {
	return StepFiles{Root: root}.OnDisk(ctx)
}

// Staged returns the step files staged in the git work tree that holds
// dir: the step files (s) that the index adds,
// copies, modifies or renames relative to HEAD (every staged file before
// the first commit), with the staged content, which is what the commit will
// hold whatever the work tree says. Deleted files and symbolic links are
// not step-file content and are left out. Paths are absolute.
//
// git runs without a shell, each command bounded by GitTimeout, in this
// process's environment: under a git hook it reads the index git prepared
// (GIT_INDEX_FILE), which is exactly what `git commit -a` or `git commit
// PATH` is about to commit.
func (s StepFiles) Staged(ctx context.Context, dir string) ([]CommitFile, error) {
	git := new(gitexec.Runner)
	top, err := gitTopLevel(ctx, git, dir)
	if err != nil {
		return nil, err
	}
	return s.collect(ctx, git, top, map[string]string{}, true, nil)
}

// BashCommit returns the step files (s) that the git invocations of a
// Bash command that may commit (as internal/shell analyses it; cwd is
// where it runs, absolute) would commit, as far as DES can tell before the
// command runs:
//   - the staged step files of each commit's repository, with their staged
//     content (Staged);
//   - with -a/--all, the tracked step files changed in the work tree; with
//     pathspecs, the changed step files they name (and, unless -i, not the
//     rest of the index); with their work-tree content;
//   - for each `git add`/`git stage` of the command in the same repository,
//     the changed or untracked step files it would stage (work-tree
//     content), wherever it stands in the command;
//   - when DES cannot read the arguments (an expansion, an option it does
//     not know, an interactive -p), every changed or untracked step file of
//     the repository: judging more is the safe side.
//
// A subcommand is read through the repository's aliases (an alias that
// runs a shell command widens as above); one DES cannot read at all
// (`git $(echo commit)`) is a commit. merge, cherry-pick, revert and
// rebase add the step files the commits they make hold, one entry per
// version (the blob's content); a --continue commits the index; am and
// pull, whose content is not in the repository yet, add nothing. An
// invocation that names its repository with --git-dir, --work-tree or
// core.worktree is an error wrapping ErrRepositoryUnknown.
//
// A commit in a directory that is not in a git work tree (or does not
// exist) commits nothing and adds no file. A directory written with an
// unresolved expansion (`cd "$D"`) is taken up to the expansion, i.e. the
// nearest literal directory; `~` is the user's home. `git commit --dry-run`
// commits nothing. Paths are absolute, sorted within each repository.
func (s StepFiles) BashCommit(ctx context.Context, cwd, command string) ([]CommitFile, error) {
	var opts []shell.Option
	home := s.home()
	if filepath.IsAbs(home) {
		opts = append(opts, shell.WithHome(filepath.ToSlash(home)))
	}
	if filepath.IsAbs(cwd) {
		opts = append(opts, shell.WithCwd(filepath.ToSlash(cwd)))
	}
	a := shell.Analyze(command, opts...)
	if len(a.GitCommits) == 0 {
		return nil, nil // no git to ask
	}
	git := new(gitexec.Runner)
	tops := map[string]string{} // directory -> top level ("" when not a repository)
	topOf := func(dir string) (string, error) {
		abs := bashDir(cwd, dir, home)
		if top, ok := tops[abs]; ok {
			return top, nil
		}
		top, err := gitTopLevel(ctx, git, abs)
		if errors.Is(err, ErrNotRepository) {
			top, err = "", nil
		}
		tops[abs] = top
		return top, err
	}
	type repo struct {
		staged   bool
		worktree map[string]string // repository path -> "" (work-tree content)
		blobs    blobSet           // versions the new commits hold (merge, pick, revert, rebase)
	}
	repos := map[string]*repo{}
	var order []string
	aliases := map[string]map[string]string{} // top level -> alias name -> value
	aliasesOf := func(top string) (map[string]string, error) {
		if al, ok := aliases[top]; ok {
			return al, nil
		}
		entries, err := git.Config(ctx, top, aliasConfigKey)
		if err != nil {
			return nil, fmt.Errorf("read the repository's aliases: %w", err)
		}
		al := map[string]string{}
		for _, e := range entries {
			al[strings.TrimPrefix(e[0], "alias.")] = e[1] // the last definition wins, as in git
		}
		aliases[top] = al
		return al, nil
	}
	for _, c := range a.GitCommits {
		if err := repositoryOptions(c); err != nil {
			return nil, err
		}
		top, err := topOf(c.Dir)
		if err != nil {
			return nil, err
		}
		if top == "" {
			continue
		}
		sub, dynamic := gitSubcommand(c)
		var al map[string]string
		if !dynamic && !knownSubcommand(sub) {
			if al, err = aliasesOf(top); err != nil {
				return nil, err
			}
		}
		inv := classify(sub, c.Args, dynamic, al)
		plan := parseCommitArgs(inv.args)
		if inv.kind == commitNone || inv.kind == commitOutside || inv.kind == commitIndex && plan.dryRun {
			continue
		}
		r := repos[top]
		if r == nil {
			pick := s.picker(top)
			r = &repo{worktree: map[string]string{}, blobs: blobSet{keep: func(p string) bool { return pick(p) != pickNo }}}
			repos[top] = r
			order = append(order, top)
		}
		dir := bashDir(cwd, c.Dir, home)
		// A command name or directory DES cannot read (`$G commit`) hides
		// words too: judge every changed step file besides.
		widen := inv.kind == commitWiden || c.Dynamic
		switch inv.kind {
		case commitIndex:
			switch {
			case plan.widen:
				widen = true
			case len(plan.pathspecs) > 0:
				r.staged = r.staged || plan.include
				if err := changedPaths(ctx, git, dir, plan.pathspecs, true, false, r.worktree); err != nil {
					return nil, err
				}
			default:
				r.staged = true
				if plan.all {
					if err := changedPaths(ctx, git, top, nil, false, false, r.worktree); err != nil {
						return nil, err
					}
				}
			}
		case commitMerge, commitPick, commitRevert, commitRebase:
			err := sequencerBlobs(ctx, git, top, inv, &r.blobs)
			if errors.Is(err, errWiden) {
				widen, err = true, nil
			}
			if err != nil {
				return nil, err
			}
		}
		if widen {
			r.staged = true
			if err := changedPaths(ctx, git, top, nil, true, true, r.worktree); err != nil {
				return nil, err
			}
		}
	}
	for _, add := range a.GitAdds {
		top, err := topOf(add.Dir)
		if err != nil {
			return nil, err
		}
		r := repos[top]
		if top == "" || r == nil {
			continue // no commit in that repository
		}
		plan := parseAddArgs(add.Args)
		var err2 error
		switch {
		case plan.none:
		case plan.widen:
			err2 = changedPaths(ctx, git, top, nil, true, true, r.worktree)
		case len(plan.pathspecs) == 0: // -A or -u: the whole tree
			err2 = changedPaths(ctx, git, top, []string{":/"}, false, !plan.update, r.worktree)
		default:
			err2 = changedPaths(ctx, git, bashDir(cwd, add.Dir, home), plan.pathspecs, false, !plan.update, r.worktree)
		}
		if err2 != nil {
			return nil, err2
		}
	}
	var out []CommitFile
	for _, top := range order {
		r := repos[top]
		var files []CommitFile
		var err error
		if r.staged || len(r.worktree) > 0 || len(r.blobs.refs) > 0 {
			files, err = s.collect(ctx, git, top, r.worktree, r.staged, r.blobs.refs)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, files...)
	}
	return out, nil
}

// collect reads the step files of a repository: the staged ones (when
// staged is set) with their staged content, and those in worktree with
// their work-tree content, which wins for a file in both; then each
// version in extra (the commits a merge, pick, revert or rebase makes),
// with its blob's content, once per path and blob.
//
// A path is a step file as s says: by its name, else by its content.
func (s StepFiles) collect(ctx context.Context, git *gitexec.Runner, top string, worktree map[string]string, staged bool, extra []blobRef) ([]CommitFile, error) {
	pick := s.picker(top)
	blobs := map[string]string{} // repository path -> staged blob
	if staged {
		out, err := runGit(ctx, git, top, nil, "diff", "--cached", "--raw", "-z", "--no-abbrev", "--no-relative", "--no-renames", "--diff-filter=ACMRT")
		if err != nil {
			return nil, err
		}
		fields := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
		for i := 0; i+1 < len(fields); i += 2 {
			meta, path := strings.Fields(fields[i]), fields[i+1]
			// :oldmode newmode oldsha newsha status
			if len(meta) != 5 || pick(path) == pickNo || !strings.HasPrefix(meta[1], "100") {
				continue
			}
			blobs[path] = meta[3]
		}
	}
	var paths []string
	for p := range blobs {
		if _, ok := worktree[p]; !ok {
			paths = append(paths, p)
		}
	}
	for p := range worktree {
		if pick(p) != pickNo {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	var refs []blobRef // staged versions, then the commits' own
	for _, p := range paths {
		if _, ok := worktree[p]; !ok {
			refs = append(refs, blobRef{p, blobs[p]})
		}
	}
	seen := map[blobRef]bool{}
	for _, b := range refs {
		seen[b] = true
	}
	for _, b := range extra {
		if !seen[b] {
			seen[b] = true
			refs = append(refs, b)
		}
	}
	oids := make([]string, len(refs))
	for i, b := range refs {
		oids[i] = b.oid
	}
	contents, err := catBlobs(ctx, git, top, oids)
	if err != nil {
		return nil, err
	}
	out := make([]CommitFile, 0, len(paths)+len(extra))
	for _, b := range refs {
		if content := contents[b.oid]; pick(b.path).keep(content) {
			out = append(out, CommitFile{Path: filepath.Join(top, filepath.FromSlash(b.path)), Content: content})
		}
	}
	for _, p := range paths {
		if _, ok := worktree[p]; !ok {
			continue
		}
		abs := filepath.Join(top, filepath.FromSlash(p))
		content, err := readBounded(abs)
		if err != nil {
			return nil, fmt.Errorf("%w: read %s: %w", ErrStepFileUnreadable, abs, err)
		}
		if content == nil || !pick(p).keep(content) {
			continue // deleted in the work tree (the commit removes it), or not a step file
		}
		out = append(out, CommitFile{Path: abs, Content: content})
	}
	return out, nil
}

// changedPaths adds to into the repository paths, under pathspecs (relative
// to dir; none means all of dir), of tracked files that differ between the
// index and the work tree, and with staged also between HEAD and the index;
// with untracked also the untracked files that are not ignored.
func changedPaths(ctx context.Context, git *gitexec.Runner, dir string, pathspecs []string, staged, untracked bool, into map[string]string) error {
	run := func(args ...string) error {
		args = append(append(args, "--"), pathspecs...)
		out, err := runGit(ctx, git, dir, nil, args...)
		if err != nil {
			return err
		}
		for _, p := range strings.Split(string(out), "\x00") {
			if p != "" {
				into[p] = ""
			}
		}
		return nil
	}
	if err := run("diff", "--name-only", "--no-relative", "-z", "--no-renames", "--diff-filter=ACMRT"); err != nil {
		return err
	}
	if staged {
		if err := run("diff", "--cached", "--name-only", "--no-relative", "-z", "--no-renames", "--diff-filter=ACMRT"); err != nil {
			return err
		}
	}
	if untracked {
		if err := run("ls-files", "-z", "--others", "--exclude-standard", "--full-name"); err != nil {
			return err
		}
	}
	return nil
}

// catBlobs reads blobs with one `git cat-file --batch`.
func catBlobs(ctx context.Context, git *gitexec.Runner, top string, oids []string) (map[string][]byte, error) {
	out := map[string][]byte{}
	if len(oids) == 0 {
		return out, nil
	}
	raw, err := runGit(ctx, git, top, []byte(strings.Join(oids, "\n")+"\n"), "cat-file", "--batch")
	if err != nil {
		return nil, err
	}
	r := bufio.NewReader(bytes.NewReader(raw))
	for range oids {
		header, err := r.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("git cat-file: %w", err)
		}
		f := strings.Fields(header) // <oid> <type> <size>, or <oid> missing
		if len(f) != 3 {
			return nil, fmt.Errorf("git cat-file: %s", strings.TrimSpace(header))
		}
		size, err := strconv.Atoi(f[2])
		if err != nil || size < 0 || size > statemachine.MaxStepFileSize {
			return nil, fmt.Errorf("%w: git cat-file: blob %s: size %s (at most %d MiB)", ErrStepFileUnreadable, f[0], f[2], statemachine.MaxStepFileSize>>20)
		}
		buf := make([]byte, size+1) // content, then "\n"
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, fmt.Errorf("git cat-file: blob %s: %w", f[0], err)
		}
		out[f[0]] = buf[:size]
	}
	return out, nil
}

// gitTopLevel is the top of the work tree that holds dir.
func gitTopLevel(ctx context.Context, git *gitexec.Runner, dir string) (string, error) {
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%s: %w", dir, ErrNotRepository)
	}
	out, err := runGit(ctx, git, dir, nil, "rev-parse", "--show-toplevel")
	var exit *exec.ExitError
	// Only git's own "not a git repository" says so (gitexec runs git in
	// the C locale): a repository whose config git cannot read is an error,
	// not a directory without a repository.
	if errors.As(err, &exit) && ctx.Err() == nil && strings.Contains(err.Error(), "not a git repository") {
		return "", fmt.Errorf("%s: %w: %w", dir, ErrNotRepository, err)
	}
	if err != nil {
		return "", err
	}
	top := strings.TrimSpace(string(out))
	if top == "" {
		return "", fmt.Errorf("%s: %w (a bare repository or a .git directory)", dir, ErrNotRepository)
	}
	return filepath.FromSlash(top), nil
}

// runGit runs one git command in dir through git (gitexec: nothing the
// repository configures is run), bounded by GitTimeout and ctx.
// home is Home, else this process's home directory.
func (s StepFiles) home() string {
	if s.Home != "" {
		return s.Home
	}
	home, _ := os.UserHomeDir()
	return home
}

func runGit(ctx context.Context, git *gitexec.Runner, dir string, stdin []byte, args ...string) ([]byte, error) {
	return git.Run(ctx, dir, stdin, args...)
}

// bashDir is the absolute directory a git command of a Bash command runs
// in: dir as shell.Write.Dir writes it, taken up to its first unresolved
// expansion, against cwd; a leading ~ is home.
func bashDir(cwd, dir, home string) string {
	if i := strings.IndexAny(dir, "$`"); i >= 0 {
		dir = dir[:i]
		if j := strings.LastIndex(dir, "/"); j >= 0 {
			dir = dir[:j]
		} else {
			dir = ""
		}
	}
	if (dir == "~" || strings.HasPrefix(dir, "~/")) && home != "" {
		dir = home + dir[1:]
	}
	if dir == "" {
		return cwd
	}
	if filepath.IsAbs(filepath.FromSlash(dir)) {
		return filepath.Clean(filepath.FromSlash(dir))
	}
	return filepath.Join(cwd, filepath.FromSlash(dir))
}

// commitPlan is what the arguments of one `git commit` say it commits.
type commitPlan struct {
	dryRun    bool     // --dry-run: nothing
	all       bool     // -a: the index, and tracked changes of the work tree
	include   bool     // -i: the index, and the pathspecs
	widen     bool     // DES cannot tell: judge every changed step file
	pathspecs []string // commit these (with --only, the default, only these)
}

// commitValueShort are git commit's short options that take a value.
const commitValueShort = "mFCct"

// commitLong are git commit's long options DES knows, each with whether it
// takes a value as the next word (when not given with "=").
var commitLong = map[string]bool{
	"message": true, "file": true, "reuse-message": true, "reedit-message": true, "template": true,
	"author": true, "date": true, "cleanup": true, "fixup": true, "squash": true, "trailer": true,
	"all": false, "include": false, "only": false, "amend": false, "edit": false, "no-edit": false,
	"signoff": false, "no-signoff": false, "verify": false, "no-verify": false, "allow-empty": false,
	"allow-empty-message": false, "quiet": false, "verbose": false, "dry-run": false, "short": false,
	"branch": false, "porcelain": false, "long": false, "null": false, "reset-author": false,
	"no-post-rewrite": false, "status": false, "no-status": false, "no-gpg-sign": false,
	"gpg-sign": false, "untracked-files": false, "no-ahead-behind": false, "ahead-behind": false,
	"pathspec-file-nul": false,
}

func parseCommitArgs(args []string) commitPlan {
	var p commitPlan
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			p.pathspecs = append(p.pathspecs, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "--"):
			name, _, hasVal := strings.Cut(a[2:], "=")
			takesVal, known := commitLong[name]
			switch {
			case !known || name == "pathspec-from-file" || name == "patch" || name == "interactive":
				p.widen = true
			case name == "dry-run":
				p.dryRun = true
			case name == "all":
				p.all = true
			case name == "include":
				p.include = true
			case takesVal && !hasVal:
				i++
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
		cluster:
			for j := 1; j < len(a); j++ {
				switch c := a[j]; {
				case strings.IndexByte(commitValueShort, c) >= 0:
					if j == len(a)-1 {
						i++
					}
					break cluster
				case c == 'a':
					p.all = true
				case c == 'i':
					p.include = true
				case c == 'p':
					p.widen = true // hunks chosen interactively
				case c == 'u' || c == 'S':
					break cluster // an optional value, attached
				case c == '$' || c == '`':
					p.widen = true // options DES cannot read
					break cluster
				}
			}
		default:
			p.pathspecs = append(p.pathspecs, a)
		}
	}
	// A pathspec DES cannot read could name anything. Option values (a
	// message from a command substitution, say) do not matter.
	for _, ps := range p.pathspecs {
		if strings.ContainsAny(ps, "$`") {
			p.widen = true
		}
	}
	return p
}

// addPlan is what the arguments of one `git add` say it stages.
type addPlan struct {
	none      bool // stages nothing (dry run, --refresh, no pathspec without -A/-u)
	update    bool // -u: tracked files only
	widen     bool
	pathspecs []string
}

func parseAddArgs(args []string) addPlan {
	var p addPlan
	whole := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			p.pathspecs = append(p.pathspecs, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "--"):
			name, _, _ := strings.Cut(a[2:], "=")
			switch name {
			case "all", "no-ignore-removal":
				whole = true
			case "update":
				whole, p.update = true, true
			case "dry-run", "refresh":
				p.none = true
			case "pathspec-from-file", "patch", "interactive", "edit":
				p.widen = true
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			for _, c := range a[1:] {
				switch c {
				case 'A':
					whole = true
				case 'u':
					whole, p.update = true, true
				case 'n':
					p.none = true
				case 'p', 'i', 'e', '$', '`':
					p.widen = true
				}
			}
		default:
			p.pathspecs = append(p.pathspecs, a)
		}
	}
	for _, ps := range p.pathspecs {
		if strings.ContainsAny(ps, "$`") {
			p.widen = true
		}
	}
	switch {
	case p.widen:
		p.none = false
	case p.none:
	case len(p.pathspecs) == 0 && !whole:
		p.none = true // `git add` alone stages nothing
	}
	return p
}

// maxStepFileSearch bounds the entries HasStepFiles looks at.
const maxStepFileSearch = 50000

// errSearchBound stops HasStepFiles' walk at its bound.
var errSearchBound = errors.New("search bound reached")

// OnDisk reports whether the project under s.Root holds a step file (as s
// says) on disk, looking at most at 50,000 entries and leaving
// out .git directories. It is how a caller decides whether DES is in charge
// of a commit when git cannot say which files the commit holds: a project
// with step files is DES's. When the bound or ctx ends the search first,
// it reports true with the reason: DES cannot show that it is not in
// charge.
func (s StepFiles) OnDisk(ctx context.Context) (bool, error) {
	root := s.Root
	n := 0
	found := errors.New("found")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable directory holds nothing DES can judge
		}
		if n++; n > maxStepFileSearch {
			return errSearchBound
		}
		if n%256 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if rel, err := filepath.Rel(root, path); err == nil {
			switch s.pickRel(filepath.ToSlash(rel)) {
			case pickYes:
				return found
			case pickIfLooks:
				// Unreadable counts as a step file, as for the write guard.
				if content, err := readBounded(path); err != nil || LooksLikeStep(content) {
					return found
				}
			}
		}
		return nil
	})
	switch {
	case errors.Is(err, found):
		return true, nil
	case errors.Is(err, errSearchBound):
		return true, fmt.Errorf("looked for step files in %s: %w (%d entries)", root, err, maxStepFileSearch)
	case err != nil:
		return true, fmt.Errorf("looked for step files in %s: %w", root, err)
	}
	return false, nil
}
