// Package shell reads a Bash command without running it: which files it may
// write and which git commits and adds it runs. These are facts only; the
// Rego policy decides what they mean (DES-STATE-BASH-WRITE,
// DES-PROTECTED-PATH, Gate 3 on commit).
//
// The command is parsed with mvdan.cc/sh/v3/syntax (Bash dialect) and walked
// without running anything. Nothing here reads the file system or the
// environment (the caller passes HOME, the cwd, OLDPWD and the starting
// environment as options), so the same command and options always give the
// same answer.
//
// Analyze looks through subshells, blocks, pipelines, && and || lists,
// if/for/while/case bodies, function bodies, command and process
// substitutions, here-documents (their substitutions run; a here-document
// that feeds an interpreter is read as its script), the wrappers sudo, doas,
// env, command, builtin, exec, nohup, nice, ionice, timeout, stdbuf, time,
// chronic, unbuffer, caffeinate, xargs, `uv run`, `poetry run`, `pipenv run`,
// `bundle exec`. Literal scripts given to bash/sh/zsh/dash/ksh -c, to eval,
// on a shell's stdin by a here-document, to `source`/`.`/`bash` as a process
// substitution of a literal echo, printf or here-document, to awk's
// system(), to git `!` aliases, and the literal commands that python, node,
// perl and ruby scripts run (os.system, subprocess with a string or a
// literal list, child_process exec/spawn, system, backticks, %x, qx) are
// parsed recursively (eight levels at most, then Dynamic). It follows the
// directory through cd, pushd, popd (a set of possible directories where a
// cd may not run), set -e, exit, true and false, literal variable
// assignments, and the links the command makes.
//
// Limits — what a determined command can still hide (DES reports the facts
// it sees; it cannot prove a command harmless):
//   - any program or script file it runs: `./x.sh`, `make`, `python x.py`,
//     `python -m`, `npm run`, `source f`, `sed -f f`, `awk -f f`, git hooks,
//     aliases of the user's shell, a function called by name (its body is
//     read where it is declared; where it leaves the shell is not
//     followed: the directories become unknown);
//   - git aliases of the repository or the user (`git ci`): reported as a
//     GitCommit with Alias set, for the caller to resolve; `git stash`,
//     `reset --hard`, `clean`, `apply`, `update-ref`, `filter-branch` are not
//     writes or commits here;
//   - tools not in the vocabulary: `sudoedit`, `python -m json.tool in out`,
//     `curl -O`, `ssh`/`docker exec`, `install -D`, `git apply`, `emacs
//     --batch`, `jq` in place through sponge is seen but `yq -i` is not;
//     `patch` without a file operand, `sed -f`, `awk -f` are Dynamic or
//     unseen; tar, unzip and cpio extraction is reported as the target
//     directory (every file beneath may change), not the members;
//   - values built at run time: a variable from the environment when no
//     WithEnv was given (or it lacks the name), read,
//     a loop variable, `$(...)`, `${X:-y}` and other parameter operations
//     are Dynamic with the expansion kept as written; `printf '%s' f |
//     xargs rm` is Dynamic; `eval "$(...)"` is Dynamic; $PWD is known only
//     where the directory is one known absolute directory;
//   - interpreter scripts are scanned with patterns, not parsed: a write
//     call whose path or mode is not one string literal (a variable, a
//     concatenation, an f-string) is Dynamic, but aliased imports (`from os
//     import remove as r`, `from subprocess import run`), `exec`/`eval`/
//     `getattr` inside the script and libraries outside the pattern list
//     are not seen; a pattern inside a string or comment of the script
//     counts (conservative); sed and awk programs are scanned the same way;
//   - directories: CDPATH, symbolic links that existed before the command,
//     os.chdir/process.chdir inside interpreter scripts are not followed; a
//     loop body is read twice at most (three nested loops deep, then
//     Dynamic); a `true`, `false`, `cd` or `exit` redefined as a function
//     is read as an unknown command; an alias of the shell is not;
//   - links: only `ln`/`link` with two literal operands are followed (not
//     `ln -t`, not a link into an existing directory), at most 32;
//   - `git checkout X` without `--` reports X only when it looks like a file
//     (its last element has a dot); later operands are always reported.
package shell

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// How values of [Write]: the fixed vocabulary of ways a command writes.
const (
	HowRedirect    = "redirect"       // > >> >| &> &>> <> and >&FILE, on any command
	HowTee         = "tee"            // tee FILE...
	HowSedInPlace  = "sed -i"         // sed -i / --in-place: the file operands
	HowPerlInPlace = "perl -i"        // perl -i: the file operands
	HowRubyInPlace = "ruby -i"        // ruby -i: the file operands
	HowAwkInPlace  = "awk -i inplace" // gawk -i inplace: the file operands
	HowCp          = "cp"             // destination (or DIR/name of each source)
	HowMv          = "mv"             // destination and every source (moving deletes it)
	HowInstall     = "install"        // destination, or every operand with -d
	HowLn          = "ln"             // the link created
	HowRsync       = "rsync"          // local destination; sources with --remove-source-files
	HowDd          = "dd"             // dd of=FILE
	HowTruncate    = "truncate"       // truncate FILE...
	HowRm          = "rm"             // rm FILE...: deleting a document is writing it
	HowUnlink      = "unlink"         // unlink FILE
	HowShred       = "shred"          // shred FILE...
	HowTouch       = "touch"          // touch FILE...
	HowChmod       = "chmod"          // chmod MODE FILE...: can lock DES out of its files
	HowChown       = "chown"          // chown OWNER FILE...
	HowChgrp       = "chgrp"          // chgrp GROUP FILE...
	HowSponge      = "sponge"         // sponge FILE (moreutils)
	HowSortOut     = "sort -o"        // sort -o FILE / --output=FILE
	HowCurlOut     = "curl -o"        // curl -o FILE / --output FILE
	HowWgetOut     = "wget -O"        // wget -O FILE / --output-document=FILE
	HowFind        = "find"           // find -fprint/-fprint0/-fprintf/-fls FILE
	HowGitRm       = "git rm"         // git rm PATH... (not --cached)
	HowGitMv       = "git mv"         // git mv SRC... DST
	HowGitCheckout = "git checkout"   // git checkout [TREE] [--] PATH...
	HowGitRestore  = "git restore"    // git restore PATH... (unless only --staged)
	HowPython      = "python"         // python -c / stdin script opening a literal path for writing
	HowNode        = "node"           // node/bun/deno script writing a literal path
	HowRuby        = "ruby"           // ruby -e script writing a literal path
	HowPerl        = "perl"           // perl -e script writing a literal path
	HowHardLink    = "hard link"      // ln TARGET LINK, cp -l, link: the existing file, writable under another name
	HowTimeOut     = "time -o"        // time -o FILE / --output=FILE
	HowShufOut     = "shuf -o"        // shuf -o FILE / --output=FILE
	HowUniq        = "uniq"           // uniq IN OUT: OUT
	HowSedWrite    = "sed w"          // sed 'w FILE' and s///w FILE
	HowAwk         = "awk"            // awk print/printf > "FILE" and >> "FILE"
	HowTarExtract  = "tar -x"         // tar -x: the members named, or the whole directory (-C DIR, else .)
	HowTarCreate   = "tar -c"         // tar -c/-r/-u -f FILE: the archive
	HowUnzip       = "unzip"          // unzip: the directory it extracts into (-d DIR, else .)
	HowCpio        = "cpio -i"        // cpio -i: the directory it extracts into (-D DIR, else .)
	HowFindDelete  = "find -delete"   // find -delete, or -exec of a writing command: each start directory (Detail: the name tests)
	HowPatch       = "patch"          // patch FILE, -o FILE; patch without a file operand is Dynamic
	HowEditor      = "editor"         // ed, ex, vim/vi/nvim with -c/-s/-e/+cmd: the file operands
	HowCompress    = "compress"       // gzip/bzip2/xz/zstd/lz4 and their un- forms: FILE replaced
	HowSplit       = "split"          // split/csplit: the output pieces (PREFIX*)
	HowMkfifo      = "mkfifo"         // mkfifo/mknod NAME
	HowScript      = "script"         // script FILE (default typescript)
)

// Hows lists every How value Analyze can report, in a stable order.
var Hows = []string{
	HowRedirect, HowTee, HowSedInPlace, HowPerlInPlace, HowRubyInPlace, HowAwkInPlace,
	HowCp, HowMv, HowInstall, HowLn, HowRsync, HowDd, HowTruncate,
	HowRm, HowUnlink, HowShred, HowTouch, HowChmod, HowChown, HowChgrp,
	HowSponge, HowSortOut, HowCurlOut, HowWgetOut, HowFind,
	HowGitRm, HowGitMv, HowGitCheckout, HowGitRestore,
	HowPython, HowNode, HowRuby, HowPerl,
	HowHardLink, HowTimeOut, HowShufOut, HowUniq, HowSedWrite, HowAwk, HowTarExtract, HowTarCreate,
	HowUnzip, HowCpio, HowFindDelete, HowPatch, HowEditor, HowCompress, HowSplit, HowMkfifo, HowScript,
}

// Write is a file a Bash command may write, and how.
//
// Path is the operand after quote removal, backslash unescaping, $'...'
// decoding and the expansions DES knows: variables assigned a literal
// value earlier in the command (`F=x`, `export`, `declare`, `local`,
// `readonly`, `typeset`), and with the options ~, ~/x, ~+, ~-, $HOME,
// ${HOME}, $PWD and $OLDPWD (which follow the command's cds). It is not
// cleaned. A relative Path is relative to Dir. When an expansion is not
// known (no option, a variable WithEnv does not know, $(...)), Path keeps
// the literal parts with the expansion as written and Dynamic is set:
// `.isdlc/$X`, `$D/state.json`, `~/x`. A target with an unquoted * ? or [
// is a pattern (Glob).
//
// A Path may name a directory: `rm -r d`, `cp -r x d`, `rsync ... d`,
// `chmod -R`, `git checkout .`, `tar -x`, `unzip`, `cpio -i` and `find
// -delete` (each start point) write everything beneath it, and `cp f d`
// writes d/f when d is an existing directory. A policy should treat a
// guarded file under Path (Path + "/" prefix) as written too.
//
// Dir is the directory the command runs in at that point, as written in the
// command: "" is the hook's cwd; after `cd proj` it is "proj", after
// `cd /abs` it is "/abs", successive cds are joined and cleaned (`cd a && cd
// ../b` gives "b"). `pushd`/`popd`, `cd -`, `git -C`, `env -C`, `sudo -D` and
// `uv run --directory` are followed too. A cd that may not run (`cd x;`,
// `cd x || true`, a cd in an if, case or loop body) leaves both directories
// possible, and the write is reported once per possible directory (at most
// 8; past that every relative write is Dynamic). A cd that succeeds or
// ends the shell (`cd x && ...`, `cd x || exit`, after `set -e`) leaves only
// the new one. When a cd DES cannot follow ran before (`cd "$D"`), Dir holds
// the best guess with the unresolved part as written (e.g. "$D") and a
// relative Path there is Dynamic.
//
// A write through a link the command made before (`ln -s .des/config.json
// c; echo x > c`, a hard link, a symbolic link to a directory) is reported
// again as a write of the link's target, with Dir "" and the target joined
// with the directory it was made from.
//
// How is one of [Hows].
type Write struct {
	Path string
	Dir  string
	How  string
	// Glob is set when Path is a pattern (an unquoted * ? or [ in the
	// target): it names the existing files it matches, or itself when none
	// does. Metacharacters that were quoted are escaped with a backslash, as
	// path.Match reads them.
	Glob bool
	// Dynamic is set when DES cannot know the path: Path then holds the
	// literal parts of the target with each expansion DES could not resolve
	// as written (`.isdlc/$X`, `$D/state.json`, `~/x` without WithHome), or
	// the directory is not known (Dir holds the best guess).
	Dynamic bool
	// Detail is what the write depends on, for the writes whose effect DES
	// can compare with the disk: for chmod, the mode as written ("" when
	// it is unknown: --reference or an expansion); for git checkout and
	// git restore, the tree the files come from as written ("" for the
	// index; "HEAD" for restore --staged --worktree); for find -delete
	// (and an -exec writing the entry found), the name tests an entry
	// under the start must pass to be written, read with FindTests (""
	// when every entry may be). Other writes have none.
	Detail string
}

// GitCommit is one `git commit` a Bash command runs.
type GitCommit struct {
	// Dir is where git runs: the cwd after any preceding cd joined with every
	// `git -C DIR`, written like Write.Dir ("" = the hook's cwd).
	Dir string
	// Args are the words after `commit`, quotes removed. A word DES cannot
	// resolve statically (an expansion, or a command substitution such as
	// the usual `-m "$(cat <<'EOF' ... EOF)"`) has its literal parts unquoted
	// and each expansion kept as written: `"$(cat <<'EOF' ...)"` gives
	// `$(cat <<'EOF' ...)`.
	Args []string
	// Subcommand is the git subcommand as DES read it: "commit", another
	// subcommand that makes commits (merge, cherry-pick, revert, rebase,
	// am, pull), a word that is not a built-in git command (Alias set: a
	// repository or user alias such as `git ci`, or an external git-*
	// command), or, with Dynamic, the word as written. For an alias defined
	// in the command (`git -c alias.c=commit c`) it is what the alias runs
	// ("commit"), and Args start with the alias's own words.
	Subcommand string
	// Alias is set when Subcommand is not a built-in git command: only the
	// repository's (or user's) configuration can tell what it runs.
	Alias bool
	// Dynamic is set when DES cannot read the command name or the
	// subcommand (`$G commit`, `git $(echo commit)`, `git "$SUB"`), or the
	// directory.
	Dynamic bool
	// Options are git's global options before the subcommand, as read
	// (`-c`, `core.hooksPath=/dev/null`, `--git-dir=x`, ...).
	Options []string
	// GitDir is GIT_DIR as the command sets it in git's environment
	// (`GIT_DIR=x git commit`, `env GIT_DIR=x git commit`, inherited by a
	// nested `sh -c`), as written; "" when it does not. An --git-dir
	// option overrides it, as in git.
	GitDir string
}

// GitAdd is one `git add` (or `git stage`) a Bash command runs, read as
// GitCommit is: Gate 3 judges what a command stages before it commits.
type GitAdd struct {
	Dir  string
	Args []string
}

// GitRun is one built-in git subcommand a Bash command runs.
type GitRun struct {
	Dir        string   // as GitCommit.Dir
	Subcommand string   // "checkout", "stash", ...
	Args       []string // the words after it, as GitCommit.Args
}

// Analysis is what DES learns from a Bash command without running it.
type Analysis struct {
	// Writes are the files the command may write, in the order DES meets
	// them (a statement's redirections before its command), without
	// duplicates.
	Writes []Write
	// Dynamic is set when the command may write paths DES cannot see
	// statically: any Write or GitCommit with Dynamic set; a brace
	// sequence; eval or bash -c of a non-literal script; xargs or find
	// -exec running a writing command; a command name that is itself an
	// expansion; an interpreter reading its script from a pipe; a script
	// whose write call, shell command or argument list is not literal;
	// sed's e command, an awk print to a non-literal file; patch without a
	// file operand; `source <(...)`/`bash <(...)` of a script DES cannot
	// read; input past DES's bounds (brace groups, directory sets and
	// length, write calls in one script, nested scripts, loops read twice);
	// and every ParseError. A policy may treat guarded directories
	// conservatively when it is set.
	Dynamic bool
	// GitCommits lists every git invocation that may make a commit: `git
	// commit` (also --amend, after any global option, through sudo, env,
	// command, bash -c, eval, aliases defined in the command), the other
	// committing subcommands, unknown subcommands (possible aliases), and
	// computed ones; see GitCommit. Never the words "git commit" as
	// arguments of another command. One per directory git may run in.
	GitCommits []GitCommit
	// GitAdds lists every `git add` and `git stage`, found as GitCommits are.
	GitAdds []GitAdd
	// GitRuns lists every built-in git subcommand the command runs, found
	// as GitCommits are (an alias the command defines is resolved; one of
	// the repository's is not, and is not listed): the effect check asks
	// whether git may have rewritten the work tree (checkout, stash, ...).
	GitRuns []GitRun
	// Runs are the simple commands the line runs, in the order DES meets
	// them, each as its words with the wrappers that run another command
	// taken off (env, timeout, nice, sudo, uv run, poetry run, bundle exec,
	// ...): `cd x && env CI=1 go test ./...` runs [cd x] and [go test
	// ./...]. A word DES cannot know statically is as written. Found as
	// GitRuns are (inside bash -c, eval, loops, xargs, find -exec); not
	// the commands a script file runs. At most MaxRuns, without duplicates.
	Runs [][]string
	// ParseError is non-empty when the command could not be parsed (or
	// nests too deeply to parse safely). Writes and GitCommits then come
	// from a conservative scan that ignores quoting: every word after a
	// redirection operator, and the operands of write commands, in every
	// `;`, `&&`, `||`, `|`, `(`, `)`, newline or `$(` separated piece.
	// Dynamic is always set with it.
	ParseError string
	// Detaches is set when something the command runs may outlive it: a
	// statement put in the background (`&`, coproc) or a command that
	// detaches (nohup, setsid, disown, screen, tmux, ...), wherever Analyze
	// reads (nested scripts, substitutions, the literal commands of
	// interpreter scripts). An `&` or such a word inside a quoted argument
	// (`echo "Tom & Jerry"`) is not. What Analyze cannot read is Dynamic
	// or ParseError: a caller that must not miss a detaching command
	// counts those too.
	Detaches bool
}

// Analyze reports the files a Bash command may write and the git commits
// and adds it runs, without running it. Options tell it the shell's home,
// cwd and OLDPWD; without them those expansions stay as written (Dynamic).
// See the package documentation for what it reads and its limits.
//
// Analyze never panics and runs in time linear in the command: a command
// past its bounds (100000 words and operators, 5000 nesting levels) gets
// the conservative scan, reported with ParseError; so does an internal
// failure. Dynamic is set with ParseError.
func Analyze(command string, opts ...Option) (res Analysis) {
	defer func() {
		if r := recover(); r != nil {
			res = panicResult(command, r)
		}
	}()
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	return analyzeWith(command, cfg)
}

// Option tells Analyze about the shell the command runs in.
type Option func(*config)

// absClean is an absolute directory cleaned, or "" for any other.
func absClean(dir string) string {
	if !strings.HasPrefix(dir, "/") {
		return ""
	}
	return path.Clean(dir)
}

// config is what the options set.
type config struct {
	home, cwd, oldpwd string
	env               func(string) (string, bool)
}

// WithHome is the home directory (absolute) that ~, ~/x, $HOME and ${HOME}
// expand to, and a bare cd goes to. Without it they stay as written and a
// write there is Dynamic.
func WithHome(dir string) Option { return func(c *config) { c.home = absClean(dir) } }

// WithCwd is the absolute directory the command starts in: $PWD and ~+
// expand from it (following the command's cds). Write.Dir stays relative
// to it as before.
func WithCwd(dir string) Option { return func(c *config) { c.cwd = absClean(dir) } }

// WithEnv gives the environment the command starts with: a variable the
// command does not assign (nor unset, read, ...) expands to its value
// there, so `> "$CLAUDE_PROJECT_DIR/.des/config.json"` names the file it
// writes. HOME, PWD and OLDPWD still come from WithHome, WithCwd and
// WithOldPwd. The hook passes its own environment, which Claude Code's Bash
// tool shares; a variable it lacks stays unknown (Dynamic).
func WithEnv(lookup func(string) (string, bool)) Option {
	return func(c *config) { c.env = lookup }
}

// WithOldPwd is $OLDPWD when the command starts: ~-, $OLDPWD and `cd -`
// before any cd of the command use it.
func WithOldPwd(dir string) Option { return func(c *config) { c.oldpwd = absClean(dir) } }

// panicResult is the answer after a bug in the walker: fail towards
// "DES cannot see", never towards "no writes".
func panicResult(command string, r any) (res Analysis) {
	res = Analysis{Dynamic: true, ParseError: fmt.Sprintf("internal error while analysing the command: %v", r)}
	defer func() { _ = recover() }() // the scan is best effort here
	a := &analyzer{src: command}
	a.fallback(command, a.start())
	res.Writes, res.GitCommits, res.GitAdds, res.GitRuns = a.res.Writes, a.res.GitCommits, a.res.GitAdds, a.res.GitRuns
	return res
}

// maxNesting bounds how deeply nested a command may be before DES parses
// it: the parser recurses once per level (about 1.6 KB of stack; a Go stack
// overflow is fatal, which the hook would report as exit status 2) and slows
// down super-linearly on deep arithmetic. Real commands nest a few dozen
// levels; the estimate counts openers in here-document text too.
const maxNesting = 5000

// maxTokens bounds the tokens (words and operators, over-estimated) of a
// command DES parses: the parser and the walk cost about a microsecond per
// token, and the hook must answer within its timeout. Larger commands get
// the linear rough scan. Real commands have a few hundred tokens; a large
// here-document with a quoted delimiter counts as one.
const maxTokens = 100000

// tooBig says why DES does not parse src, or "".
func tooBig(src string) string {
	m := measureSrc(src)
	switch {
	case m.depth > maxNesting:
		return fmt.Sprintf("command nests about %d levels deep, more than the %d DES parses", m.depth, maxNesting)
	case m.tokens > maxTokens:
		return fmt.Sprintf("command has about %d words and operators, more than the %d DES parses", m.tokens, maxTokens)
	}
	return ""
}

// maxScripts bounds bash -c / eval recursion.
const maxScripts = 8

func analyze(command string) Analysis { return analyzeWith(command, config{}) }

func analyzeWith(command string, cfg config) Analysis {
	a := &analyzer{src: command, cfg: cfg}
	st := a.start()
	if msg := tooBig(command); msg != "" {
		a.res.ParseError = msg
		a.fallback(command, st)
		return a.res
	}
	f, err := parseBash(command)
	if err != nil {
		a.res.ParseError = err.Error()
		a.fallback(command, st)
		return a.res
	}
	a.stmts(f.Stmts, st)
	return a.res
}

func parseBash(src string) (*syntax.File, error) {
	return syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
}
