package gate

// Static analysis of Bash commands: which files a command may write and
// whether it runs `git commit`. These are facts only; the Rego policy decides
// what they mean (DES-STATE-BASH-WRITE, DES-PROTECTED-PATH, Gate 3 on commit).
//
// The command is parsed with mvdan.cc/sh/v3/syntax (Bash dialect) and walked
// without running anything. Nothing here reads the file system or the
// environment, so the same command always gives the same answer.

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// How values of [BashWrite]: the fixed vocabulary of ways a command writes.
const (
	BashHowRedirect    = "redirect"       // > >> >| &> &>> <> and >&FILE, on any command
	BashHowTee         = "tee"            // tee FILE...
	BashHowSedInPlace  = "sed -i"         // sed -i / --in-place: the file operands
	BashHowPerlInPlace = "perl -i"        // perl -i: the file operands
	BashHowRubyInPlace = "ruby -i"        // ruby -i: the file operands
	BashHowAwkInPlace  = "awk -i inplace" // gawk -i inplace: the file operands
	BashHowCp          = "cp"             // destination (or DIR/name of each source)
	BashHowMv          = "mv"             // destination and every source (moving deletes it)
	BashHowInstall     = "install"        // destination, or every operand with -d
	BashHowLn          = "ln"             // the link created
	BashHowRsync       = "rsync"          // local destination; sources with --remove-source-files
	BashHowDd          = "dd"             // dd of=FILE
	BashHowTruncate    = "truncate"       // truncate FILE...
	BashHowRm          = "rm"             // rm FILE...: deleting a document is writing it
	BashHowUnlink      = "unlink"         // unlink FILE
	BashHowShred       = "shred"          // shred FILE...
	BashHowTouch       = "touch"          // touch FILE...
	BashHowChmod       = "chmod"          // chmod MODE FILE...: can lock DES out of its files
	BashHowChown       = "chown"          // chown OWNER FILE...
	BashHowChgrp       = "chgrp"          // chgrp GROUP FILE...
	BashHowSponge      = "sponge"         // sponge FILE (moreutils)
	BashHowSortOut     = "sort -o"        // sort -o FILE / --output=FILE
	BashHowCurlOut     = "curl -o"        // curl -o FILE / --output FILE
	BashHowWgetOut     = "wget -O"        // wget -O FILE / --output-document=FILE
	BashHowFind        = "find"           // find -fprint/-fprint0/-fprintf/-fls FILE
	BashHowGitRm       = "git rm"         // git rm PATH... (not --cached)
	BashHowGitMv       = "git mv"         // git mv SRC... DST
	BashHowGitCheckout = "git checkout"   // git checkout [TREE] [--] PATH...
	BashHowGitRestore  = "git restore"    // git restore PATH... (unless only --staged)
	BashHowPython      = "python"         // python -c / stdin script opening a literal path for writing
	BashHowNode        = "node"           // node/bun/deno script writing a literal path
	BashHowRuby        = "ruby"           // ruby -e script writing a literal path
	BashHowPerl        = "perl"           // perl -e script writing a literal path
)

// BashWriteHows lists every How value AnalyzeBash can report, in a stable order.
var BashWriteHows = []string{
	BashHowRedirect, BashHowTee, BashHowSedInPlace, BashHowPerlInPlace, BashHowRubyInPlace, BashHowAwkInPlace,
	BashHowCp, BashHowMv, BashHowInstall, BashHowLn, BashHowRsync, BashHowDd, BashHowTruncate,
	BashHowRm, BashHowUnlink, BashHowShred, BashHowTouch, BashHowChmod, BashHowChown, BashHowChgrp,
	BashHowSponge, BashHowSortOut, BashHowCurlOut, BashHowWgetOut, BashHowFind,
	BashHowGitRm, BashHowGitMv, BashHowGitCheckout, BashHowGitRestore,
	BashHowPython, BashHowNode, BashHowRuby, BashHowPerl,
}

// BashWrite is a file a Bash command may write, and how.
//
// Path is the operand as written in the command after quote removal and
// backslash unescaping; it is not cleaned. A leading `~` and `$HOME`/`${HOME}`
// are kept as written (DES does not expand them; they only ever name the
// user's home). A relative Path is relative to Dir.
//
// A Path may name a directory: `rm -r d`, `cp -r x d`, `rsync ... d`,
// `chmod -R`, `git checkout .` write everything beneath it, and `cp f d`
// writes d/f when d is an existing directory. A policy should treat a guarded
// file under Path (Path + "/" prefix) as written too.
//
// Dir is the directory the command runs in at that point, as written in the
// command: "" is the hook's cwd; after `cd proj` it is "proj", after
// `cd /abs` it is "/abs", successive cds are joined and cleaned (`cd a && cd
// ../b` gives "b"). `pushd`/`popd`, `cd -`, `git -C`, `env -C`, `sudo -D` and
// `uv run --directory` are followed too. When a cd DES cannot follow ran
// before (`cd "$D"`, branches that end in different directories), Dir holds
// the best guess with the unresolved part as written (e.g. "$D"), and
// BashAnalysis.Dynamic is set for every relative Path written there.
//
// How is one of [BashWriteHows].
type BashWrite struct {
	Path string
	Dir  string
	How  string
}

// GitCommit is one `git commit` a Bash command runs.
type GitCommit struct {
	// Dir is where git runs: the cwd after any preceding cd joined with every
	// `git -C DIR`, written like BashWrite.Dir ("" = the hook's cwd).
	Dir string
	// Args are the words after `commit`, quotes removed. A word DES cannot
	// resolve statically (an expansion, or a command substitution such as
	// the usual `-m "$(cat <<'EOF' ... EOF)"`) has its literal parts unquoted
	// and each expansion kept as written: `"$(cat <<'EOF' ...)"` gives
	// `$(cat <<'EOF' ...)`.
	Args []string
}

// GitAdd is one `git add` (or `git stage`) a Bash command runs, read as
// GitCommit is: Gate 3 judges what a command stages before it commits.
type GitAdd struct {
	Dir  string
	Args []string
}

// BashAnalysis is what DES learns from a Bash command without running it.
type BashAnalysis struct {
	// Writes are the files the command may write, in the order DES meets
	// them (a statement's redirections before its command), without
	// duplicates. Only literal words give paths.
	Writes []BashWrite
	// Dynamic is set when the command may write paths DES cannot see
	// statically: a write target or written directory built from $VAR,
	// $(...), arithmetic, a glob or a brace sequence; eval or bash -c of a
	// non-literal script; xargs or find -exec running a writing command;
	// find -delete; a command name that is itself an expansion; an
	// interpreter reading its script from a pipe; a script whose write call
	// names a non-literal path or mode; a relative write or a commit after
	// a cd DES could not follow; input past DES's size bounds (brace groups,
	// directory length, write calls in one script, eight nested scripts);
	// and every ParseError. A policy may treat guarded directories
	// conservatively when it is set.
	Dynamic bool
	// GitCommits lists every `git commit` (also --amend, `git -C dir commit`,
	// through sudo/env/command/bash -c/eval...), never `git commit-tree` nor
	// the words "git commit" as arguments of another command.
	GitCommits []GitCommit
	// GitAdds lists every `git add` and `git stage`, found as GitCommits are.
	GitAdds []GitAdd
	// ParseError is non-empty when the command could not be parsed (or
	// nests too deeply to parse safely). Writes and GitCommits then come
	// from a conservative scan that ignores quoting: every word after a
	// redirection operator, and the operands of write commands, in every
	// `;`, `&&`, `||`, `|`, `(`, `)`, newline or `$(` separated piece.
	// Dynamic is always set with it.
	ParseError string
}

// AnalyzeBash reports the files a Bash command may write and the `git
// commit`s it runs, without running it.
//
// It looks through subshells, blocks, pipelines, lists, if/for/while/case
// bodies, function bodies, command and process substitutions, here-documents
// (their substitutions run; a here-document that feeds an interpreter is read
// as its script), the wrappers sudo, doas, env, command, builtin, exec, nohup,
// nice, ionice, timeout, stdbuf, time, chronic, unbuffer, caffeinate, xargs,
// `uv run`, `poetry run`, `pipenv run`, `bundle exec`; literal scripts given
// to bash/sh/zsh/dash/ksh -c, to eval, or on their stdin by a here-document
// are parsed recursively (eight levels at most, then Dynamic).
//
// Limits — what a determined command can still hide (DES reports the facts
// it sees; it cannot prove a command harmless):
//   - any program or script file it runs: `./x.sh`, `make`, `python x.py`,
//     `python -m`, `npm run`, `source f`, git hooks, aliases of the
//     user's shell, `git` aliases (`git ci`), a function called by name;
//   - tools not in the vocabulary: editors (`vim -c`, `ed`, `ex`), `patch`,
//     archive extraction (`tar -x`, `unzip`), `git stash`/`reset --hard`/
//     `clean`/`pull`/`apply`, `sudoedit`, `time -o`, `tar -f` output,
//     `python -m json.tool in out`, `curl -O`, `ssh`/`docker exec`;
//   - values built at run time that are not write targets DES inspects:
//     `F=.des/state.json; cp x "$F"` is Dynamic (the path is not reported),
//     `printf '%s' .des/state.json | xargs rm` is Dynamic, `eval "$(...)"`
//     is Dynamic;
//   - interpreter scripts are scanned with patterns, not parsed: a write
//     call whose path or mode is not one string literal (a variable, a
//     concatenation, an f-string) is Dynamic, but aliased imports (`from os
//     import remove as r`), `exec`/`eval`/`getattr` inside the script,
//     libraries outside the pattern list, and commands the script starts
//     (`os.system`, `subprocess`, `child_process`, backticks) are not seen;
//     a pattern inside a string or comment of the script counts as a write
//     (conservative);
//   - directories: CDPATH, symlinks, `cd` inside a function DES did not
//     see called, and os.chdir/process.chdir inside interpreter scripts are
//     not followed; a loop body is read once; `cd` in a `||` branch is
//     assumed to run;
//   - `git checkout X` without `--` reports X only when it looks like a file
//     (its last element has a dot); later operands are always reported.
//
// AnalyzeBash never panics: an internal failure is reported as ParseError
// with Dynamic set and the conservative scan.
func AnalyzeBash(command string) (res BashAnalysis) {
	defer func() {
		if r := recover(); r != nil {
			res = bashPanicResult(command, r)
		}
	}()
	return analyzeBash(command)
}

// bashPanicResult is the answer after a bug in the walker: fail towards
// "DES cannot see", never towards "no writes".
func bashPanicResult(command string, r any) (res BashAnalysis) {
	res = BashAnalysis{Dynamic: true, ParseError: fmt.Sprintf("internal error while analysing the command: %v", r)}
	defer func() { _ = recover() }() // the scan is best effort here
	a := &bashAnalyzer{src: command}
	a.fallback(command, &bashState{})
	res.Writes, res.GitCommits, res.GitAdds = a.res.Writes, a.res.GitCommits, a.res.GitAdds
	return res
}

// bashMaxNesting bounds how deeply nested a command may be before DES parses
// it: the parser recurses once per level (about 1.6 KB of stack; a Go stack
// overflow is fatal, which the hook would report as exit status 2) and slows
// down super-linearly on deep arithmetic. Real commands nest a few dozen
// levels; the estimate counts openers in here-document text too.
const bashMaxNesting = 5000

// bashMaxScripts bounds bash -c / eval recursion.
const bashMaxScripts = 8

func analyzeBash(command string) BashAnalysis {
	a := &bashAnalyzer{src: command}
	st := &bashState{}
	if d := bashNestingDepth(command); d > bashMaxNesting {
		a.res.ParseError = fmt.Sprintf("command nests about %d levels deep, more than the %d DES parses", d, bashMaxNesting)
		a.fallback(command, st)
		return a.res
	}
	f, err := bashParse(command)
	if err != nil {
		a.res.ParseError = err.Error()
		a.fallback(command, st)
		return a.res
	}
	a.stmts(f.Stmts, st)
	return a.res
}

func bashParse(src string) (*syntax.File, error) {
	return syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
}

// bashNestingDepth over-estimates how deeply src nests: brackets, backticks
// and compound-command keywords open a level, their closers close one. It
// skips only the bodies of here-documents with a quoted delimiter (literal
// text, often whole source files); other quoting is ignored, so the estimate
// is cheap. A text crafted to fool it can at worst crash the hook, which
// Claude Code treats as a block.
func bashNestingDepth(src string) int {
	depth, deepest := 0, 0
	open := func() {
		depth++
		if depth > deepest {
			deepest = depth
		}
	}
	closeOne := func() {
		if depth > 0 {
			depth--
		}
	}
	inTick := false
	var literal []string // quoted here-document delimiters whose bodies start at the next newline
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '<' && strings.HasPrefix(src[i:], "<<") && !strings.HasPrefix(src[i:], "<<<"):
			if d, n := bashQuotedHeredoc(src[i+2:]); n > 0 {
				literal = append(literal, d)
				i += 1 + n
			}
		case c == '\n' && len(literal) > 0:
			i = bashSkipBodies(src, i, literal)
			literal = literal[:0]
		case c == '(' || c == '{' || c == '[':
			open()
		case c == ')' || c == '}' || c == ']':
			closeOne()
		case c == '`':
			if inTick {
				closeOne()
			} else {
				open()
			}
			inTick = !inTick
		case c == '!' && (i == 0 || bashSpace(src[i-1])) && (i+1 == len(src) || bashSpace(src[i+1])):
			open()
		case c >= 'a' && c <= 'z' && (i == 0 || !bashIdentByte(src[i-1])):
			j := i
			for j < len(src) && bashIdentByte(src[j]) {
				j++
			}
			switch src[i:j] {
			case "if", "while", "until", "for", "case", "select", "time", "coproc", "function":
				open()
			case "fi", "done", "esac":
				closeOne()
			}
			i = j - 1
		}
	}
	return deepest
}

// bashQuotedHeredoc reads the delimiter after << when it is quoted ('EOF',
// "EOF", \EOF, optionally after - and blanks): it returns the delimiter and
// how many bytes it took, or 0 when the delimiter is not quoted.
func bashQuotedHeredoc(s string) (string, int) {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	if i >= len(s) {
		return "", 0
	}
	switch q := s[i]; q {
	case '\'', '"':
		end := strings.IndexByte(s[i+1:], q)
		if end <= 0 || strings.ContainsAny(s[i+1:i+1+end], "\n$`\\") {
			return "", 0
		}
		return s[i+1 : i+1+end], i + 2 + end
	case '\\':
		j := i + 1
		for j < len(s) && bashIdentByte(s[j]) {
			j++
		}
		if j == i+1 {
			return "", 0
		}
		return s[i+1 : j], j
	}
	return "", 0
}

// bashSkipBodies skips the here-document bodies that start after the
// newline at nl and returns the index of the newline ending the last one.
func bashSkipBodies(src string, nl int, delims []string) int {
	i := nl
	for _, d := range delims {
		for i < len(src) {
			end := strings.IndexByte(src[i+1:], '\n')
			line := src[i+1:]
			if end >= 0 {
				line = src[i+1 : i+1+end]
			}
			if end < 0 {
				return len(src)
			}
			i += end + 1
			if strings.TrimLeft(line, "\t") == d {
				break
			}
		}
	}
	return i
}

func bashSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == ';' }

func bashIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// ---------------------------------------------------------------------------
// Where commands run.

// bashPlace is a directory as written in the command ("" = the hook's cwd).
type bashPlace struct {
	path    string
	unknown bool // a cd DES could not resolve statically: path is a best guess
}

// bashState is the shell state DES follows: the directory, OLDPWD and the
// pushd stack. Subshells, pipeline members and child shells get a copy.
type bashState struct {
	dir    bashPlace
	old    bashPlace
	hasOld bool
	stack  []bashPlace
	lost   bool // the oldest pushd entries were forgotten (bashMaxStack)
}

func (s *bashState) clone() *bashState {
	c := *s
	c.stack = append([]bashPlace(nil), s.stack...)
	return &c
}

func (s *bashState) setDir(p bashPlace) {
	s.old, s.hasOld = s.dir, true
	s.dir = p
}

// cd moves to the directory operand t.
func (s *bashState) cd(t bashArg) {
	if t.lit {
		s.setDir(bashJoinDir(s.dir, t.val, false))
	} else {
		s.setDir(bashJoinDir(s.dir, t.src, true))
	}
}

// bashMaxDir bounds the directory text DES follows.
const bashMaxDir = 4096

// bashMaxStack bounds the pushd stack DES follows (it is copied per subshell).
const bashMaxStack = 32

// bashMerge is the directory after two alternative branches.
func bashMerge(a, b *bashState) *bashState {
	if a.dir != b.dir {
		a.dir.unknown = true
	}
	return a
}

func bashJoinDir(base bashPlace, p string, unknown bool) bashPlace {
	out := p
	if !bashIsAbs(p) && base.path != "" {
		if len(base.path)+len(p) >= bashMaxDir {
			return bashPlace{path: base.path, unknown: true} // cd a; cd a; ... without end
		}
		out = base.path + "/" + p
	}
	if len(out) >= bashMaxDir {
		return bashPlace{path: base.path, unknown: true}
	}
	out = path.Clean(out)
	if out == "." {
		out = ""
	}
	return bashPlace{path: out, unknown: unknown || base.unknown && !bashIsAbs(p)}
}

// bashIsAbs reports whether p does not depend on the cwd: /x, ~, ~user,
// $HOME, and Windows drive paths (Git Bash users write C:/...).
func bashIsAbs(p string) bool {
	if strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") || strings.HasPrefix(p, "$HOME") || strings.HasPrefix(p, "${HOME}") {
		return true
	}
	return len(p) >= 3 && p[1] == ':' && (p[2] == '/' || p[2] == '\\') &&
		(p[0] >= 'a' && p[0] <= 'z' || p[0] >= 'A' && p[0] <= 'Z')
}

// bashIsDevice reports the special files that are not documents.
func bashIsDevice(p string) bool {
	switch p {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty":
		return true
	}
	return strings.HasPrefix(p, "/dev/fd/")
}

// ---------------------------------------------------------------------------
// Words.

// bashArg is one command word after brace expansion.
type bashArg struct {
	val  string       // the value, quotes removed; valid when lit
	src  string       // as written; for a non-literal word, its literal parts unquoted and each expansion as written
	lit  bool         // the value is known statically
	proc bool         // a process substitution <(...) or >(...): a pipe, never a document
	word *syntax.Word // nil in the fallback scan and after brace expansion
}

func bashLit(v string) bashArg { return bashArg{val: v, src: v, lit: true} }

// bashMaxBraces bounds brace expansion of one word.
const bashMaxBraces = 256

func (a *bashAnalyzer) words(ws []*syntax.Word) []bashArg {
	out := make([]bashArg, 0, len(ws))
	for _, w := range ws {
		if len(w.Parts) == 1 {
			if _, ok := w.Parts[0].(*syntax.ProcSubst); ok {
				out = append(out, bashArg{src: a.source(w), proc: true})
				continue
			}
		}
		if bashHasBrace(w) && bashManyBraces(w) {
			out = append(out, bashArg{src: a.source(w), word: w})
			continue
		}
		if bashHasBrace(w) && syntax.SplitBraces(w) {
			vals, ok := bashExpandBraces(w.Parts)
			if !ok {
				out = append(out, bashArg{src: a.source(w), word: w})
				continue
			}
			for _, v := range vals {
				out = append(out, bashArg{val: v, src: v, lit: true})
			}
			continue
		}
		v, ok := bashWordValue(w.Parts)
		if ok {
			out = append(out, bashArg{val: v, src: a.source(w), lit: true, word: w})
		} else {
			out = append(out, bashArg{src: a.shape(w.Parts), word: w})
		}
	}
	return out
}

// shape renders a word DES cannot resolve: literal text unquoted, each
// expansion or substitution as written ("$D"/x gives $D/x).
func (a *bashAnalyzer) shape(parts []syntax.WordPart) string {
	var sb strings.Builder
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			bashUnquoted(&sb, p.Value, false)
		case *syntax.SglQuoted:
			if p.Dollar {
				sb.WriteString(a.source(p))
			} else {
				sb.WriteString(p.Value)
			}
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					bashDblQuoted(&sb, l.Value)
				} else {
					sb.WriteString(a.source(q))
				}
			}
		default:
			sb.WriteString(a.source(p))
		}
	}
	return sb.String()
}

func bashHasBrace(w *syntax.Word) bool {
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok && strings.Contains(l.Value, "{") {
			return true
		}
	}
	return false
}

// bashManyBraces reports a word with more braces than DES expands (brace
// splitting is quadratic in them): such a word is left unresolved.
func bashManyBraces(w *syntax.Word) bool {
	n := 0
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok {
			n += strings.Count(l.Value, "{")
		}
	}
	return n > bashMaxBraceGroups
}

// bashMaxBraceGroups bounds the braces of one word DES expands.
const bashMaxBraceGroups = 32

// bashExpandBraces expands {a,b} alternatives; sequences {1..9} and very
// large products are left to Dynamic.
func bashExpandBraces(parts []syntax.WordPart) ([]string, bool) {
	outs := []string{""}
	for _, p := range parts {
		be, ok := p.(*syntax.BraceExp)
		if !ok {
			v, ok := bashWordValue([]syntax.WordPart{p})
			if !ok {
				return nil, false
			}
			for i := range outs {
				outs[i] += v
			}
			continue
		}
		if be.Sequence {
			return nil, false
		}
		var alts []string
		for _, e := range be.Elems {
			vs, ok := bashExpandBraces(e.Parts)
			if !ok {
				return nil, false
			}
			alts = append(alts, vs...)
		}
		if len(outs)*len(alts) > bashMaxBraces {
			return nil, false
		}
		next := make([]string, 0, len(outs)*len(alts))
		for _, o := range outs {
			for _, al := range alts {
				next = append(next, o+al)
			}
		}
		outs = next
	}
	return outs, true
}

// bashWordValue is the static value of a word, or false when it depends on
// run time (expansions other than $HOME, substitutions, globs).
func bashWordValue(parts []syntax.WordPart) (string, bool) {
	if len(parts) == 1 { // most words: no copy needed
		switch p := parts[0].(type) {
		case *syntax.Lit:
			if !strings.ContainsAny(p.Value, `\*?[`) {
				return p.Value, true
			}
		case *syntax.SglQuoted:
			if !p.Dollar {
				return p.Value, true
			}
		case *syntax.DblQuoted:
			if len(p.Parts) == 0 {
				return "", true
			}
			if l, ok := p.Parts[0].(*syntax.Lit); ok && len(p.Parts) == 1 && !strings.Contains(l.Value, `\`) {
				return l.Value, true
			}
		}
	}
	var sb strings.Builder
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if !bashUnquoted(&sb, p.Value, true) {
				return "", false
			}
		case *syntax.SglQuoted:
			if p.Dollar && strings.Contains(p.Value, `\`) {
				return "", false // $'..' escapes: rare in paths, not worth decoding
			}
			sb.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				switch q := q.(type) {
				case *syntax.Lit:
					bashDblQuoted(&sb, q.Value)
				case *syntax.ParamExp:
					if !bashIsHome(q) {
						return "", false
					}
					sb.WriteString("$HOME")
				default:
					return "", false
				}
			}
		case *syntax.ParamExp:
			if !bashIsHome(p) {
				return "", false
			}
			sb.WriteString("$HOME")
		default:
			return "", false
		}
	}
	return sb.String(), true
}

// bashUnquoted writes an unquoted literal with its backslashes removed; with
// globs set, an unescaped * ? [ makes the word a pattern (false).
func bashUnquoted(sb *strings.Builder, v string, globs bool) bool {
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\' && i+1 < len(v):
			i++
			if v[i] != '\n' {
				sb.WriteByte(v[i])
			}
		case globs && (c == '*' || c == '?' || c == '['):
			return false
		default:
			sb.WriteByte(c)
		}
	}
	return true
}

// bashDblQuoted writes a double-quoted (or unquoted here-document) literal:
// only \$ \` \" \\ and \newline are escapes there.
func bashDblQuoted(sb *strings.Builder, v string) {
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\\' && i+1 < len(v) {
			switch v[i+1] {
			case '$', '`', '"', '\\':
				sb.WriteByte(v[i+1])
				i++
				continue
			case '\n':
				i++
				continue
			}
		}
		sb.WriteByte(c)
	}
}

func bashIsHome(p *syntax.ParamExp) bool {
	return p.Param != nil && p.Param.Value == "HOME" && p.Flags == nil && !p.Excl && !p.Length &&
		!p.Width && !p.IsSet && p.NestedParam == nil && p.Index == nil && len(p.Modifiers) == 0 &&
		p.Slice == nil && p.Repl == nil && p.Names == 0 && p.Exp == nil
}

// bashHole stands for text DES cannot know inside a script given to an
// interpreter; a string literal containing it is not literal.
const bashHole = "\x00"

// bashScriptText is the text a word gives an interpreter, with bashHole
// where the shell would substitute something.
func bashScriptText(parts []syntax.WordPart, hdoc bool) string {
	var sb strings.Builder
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if hdoc {
				bashDblQuoted(&sb, p.Value)
			} else {
				bashUnquoted(&sb, p.Value, false)
			}
		case *syntax.SglQuoted:
			sb.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					bashDblQuoted(&sb, l.Value)
				} else {
					sb.WriteString(bashHole)
				}
			}
		default:
			sb.WriteString(bashHole)
		}
	}
	return sb.String()
}

// bashScriptOf is the script text an argument gives an interpreter.
func bashScriptOf(arg bashArg) string {
	switch {
	case arg.lit:
		return arg.val
	case arg.word != nil:
		return bashScriptText(arg.word.Parts, false)
	case arg.val != "":
		return arg.val // the fallback scan: the raw text, read conservatively
	}
	return bashHole
}

// bashAttached is the script glued to a flag (-e'...'), without the flag.
func bashAttached(arg bashArg, flag string) string {
	text := bashScriptOf(arg)
	if len(text) < len(flag) {
		return bashHole
	}
	return text[len(flag):]
}

// ---------------------------------------------------------------------------
// The walker.

type bashAnalyzer struct {
	res   BashAnalysis
	seen  map[BashWrite]bool
	src   string // the script being walked, to quote words as written
	depth int    // nested scripts (bash -c, eval) being walked
}

func (a *bashAnalyzer) source(n syntax.Node) string {
	s, e := int(n.Pos().Offset()), int(n.End().Offset())
	if s < 0 || e > len(a.src) || s > e {
		return ""
	}
	return a.src[s:e]
}

func (a *bashAnalyzer) addWrite(p string, at bashPlace, how string) {
	if p == "" || bashIsDevice(p) {
		return
	}
	if at.unknown && !bashIsAbs(p) {
		a.res.Dynamic = true
	}
	w := BashWrite{Path: p, Dir: at.path, How: how}
	if a.seen[w] {
		return
	}
	if a.seen == nil {
		a.seen = map[BashWrite]bool{}
	}
	a.seen[w] = true
	a.res.Writes = append(a.res.Writes, w)
}

// writeArg records a write of an operand; a non-literal one is Dynamic.
func (a *bashAnalyzer) writeArg(arg bashArg, at bashPlace, how string) {
	switch {
	case arg.proc:
	case !arg.lit:
		a.res.Dynamic = true
	default:
		a.addWrite(arg.val, at, how)
	}
}

// bashMark remembers what was found so far, to tell whether a command added
// anything (xargs and find -exec make such commands Dynamic).
type bashMark struct {
	writes, commits int
	dynamic         bool
}

func (a *bashAnalyzer) mark() bashMark {
	return bashMark{len(a.res.Writes), len(a.res.GitCommits), a.res.Dynamic}
}

func (a *bashAnalyzer) changed(m bashMark) bool {
	return len(a.res.Writes) != m.writes || len(a.res.GitCommits) != m.commits || a.res.Dynamic != m.dynamic
}

func (a *bashAnalyzer) stmts(list []*syntax.Stmt, st *bashState) {
	for _, s := range list {
		a.stmt(s, st)
	}
}

func (a *bashAnalyzer) stmt(s *syntax.Stmt, st *bashState) {
	if s == nil {
		return
	}
	if s.Background || s.Coprocess {
		st = st.clone() // runs in a subshell: its cd does not stay
	}
	// Redirections are opened before the command runs, so before its cd.
	for _, r := range s.Redirs {
		a.redirect(r, st)
	}
	a.command(s.Cmd, s, st)
}

func (a *bashAnalyzer) redirect(r *syntax.Redirect, st *bashState) {
	if r.Word != nil {
		a.nested(r.Word, st)
	}
	if r.Hdoc != nil {
		a.nested(r.Hdoc, st)
	}
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll,
		syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob, syntax.RdrInOut:
		a.redirTarget(r.Word, st)
	case syntax.DplOut:
		// >&N and >&- duplicate or close a descriptor; >&FILE is &>FILE.
		if r.Word == nil {
			return
		}
		v, ok := bashWordValue(r.Word.Parts)
		if ok && (v == "-" || strings.Trim(strings.TrimSuffix(v, "-"), "0123456789") == "") {
			return
		}
		a.redirTarget(r.Word, st)
	}
}

func (a *bashAnalyzer) redirTarget(w *syntax.Word, st *bashState) {
	if w == nil {
		return
	}
	for _, arg := range a.words([]*syntax.Word{w}) {
		a.writeArg(arg, st.dir, BashHowRedirect)
	}
}

// nested walks the command and process substitutions inside a node that
// holds no statements of its own (words, assignments, tests, arithmetic).
func (a *bashAnalyzer) nested(n syntax.Node, st *bashState) {
	syntax.Walk(n, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst:
			a.stmts(n.Stmts, st.clone())
			return false
		case *syntax.ProcSubst:
			a.stmts(n.Stmts, st.clone())
			return false
		}
		return true
	})
}

func (a *bashAnalyzer) command(cmd syntax.Command, s *syntax.Stmt, st *bashState) {
	switch c := cmd.(type) {
	case nil:
	case *syntax.CallExpr:
		a.nested(c, st)
		if len(c.Args) > 0 {
			a.run(a.words(c.Args), st, bashCall{stmt: s})
		}
	case *syntax.BinaryCmd:
		if c.Op == syntax.Pipe || c.Op == syntax.PipeAll {
			// Every member of a pipeline runs in a subshell.
			a.stmt(c.X, st.clone())
			a.stmt(c.Y, st.clone())
			return
		}
		a.stmt(c.X, st)
		a.stmt(c.Y, st)
	case *syntax.Subshell:
		a.stmts(c.Stmts, st.clone())
	case *syntax.Block:
		a.stmts(c.Stmts, st)
	case *syntax.IfClause:
		a.ifClause(c, st)
	case *syntax.WhileClause:
		before := st.dir
		a.stmts(c.Cond, st)
		a.stmts(c.Do, st)
		if st.dir != before {
			st.dir.unknown = true // the body runs any number of times
		}
	case *syntax.ForClause:
		a.nested(c.Loop, st)
		before := st.dir
		a.stmts(c.Do, st)
		if st.dir != before {
			st.dir.unknown = true
		}
	case *syntax.CaseClause:
		a.nested(c.Word, st)
		var out *bashState
		for _, it := range c.Items {
			for _, p := range it.Patterns {
				a.nested(p, st)
			}
			branch := st.clone()
			a.stmts(it.Stmts, branch)
			if out == nil {
				out = branch
			} else {
				out = bashMerge(out, branch)
			}
		}
		if out != nil {
			*st = *bashMerge(out, st.clone()) // no pattern may match
		}
	case *syntax.FuncDecl:
		// The body may run wherever the function is called; DES reads it
		// once, where it is declared.
		a.stmt(c.Body, st.clone())
	case *syntax.TimeClause:
		a.stmt(c.Stmt, st)
	case *syntax.CoprocClause:
		a.stmt(c.Stmt, st.clone())
	case *syntax.TestDecl:
		a.stmt(c.Body, st.clone())
	default:
		// ArithmCmd, TestClause, DeclClause, LetClause: only substitutions
		// inside them can write.
		a.nested(c, st)
	}
}

func (a *bashAnalyzer) ifClause(c *syntax.IfClause, st *bashState) {
	if len(c.Cond) == 0 && !c.ThenPos.IsValid() {
		a.stmts(c.Then, st) // a plain else
		return
	}
	a.stmts(c.Cond, st)
	then := st.clone()
	a.stmts(c.Then, then)
	other := st.clone()
	if c.Else != nil {
		a.ifClause(c.Else, other)
	}
	*st = *bashMerge(then, other)
}

// ---------------------------------------------------------------------------
// Simple commands.

// bashCall is how a command is started.
type bashCall struct {
	stmt  *syntax.Stmt // its statement, for a here-document on stdin; nil in the fallback scan
	xargs bool         // it gets arguments DES cannot see (xargs, find -exec)
}

// bashWrapper describes a command that runs another command.
type bashWrapper struct {
	sub      string   // required subcommand ("run" for uv run)
	shortArg string   // short options taking a value
	longArg  []string // long options taking a value
	chdir    []string // options whose value is the directory the command runs in
	noRun    string   // short options meaning the command is not run (command -v)
	skip     int      // operands before the command (timeout's DURATION)
	assigns  bool     // NAME=VALUE operands before the command (env)
}

var bashWrappers = map[string]bashWrapper{
	"sudo": {shortArg: "CDghpRrtTUu", longArg: []string{"chdir", "close-from", "group", "host", "prompt", "chroot", "role", "type", "command-timeout", "other-user", "user"},
		chdir: []string{"-D", "--chdir"}, noRun: "lVv"},
	"doas":       {shortArg: "uC"},
	"env":        {shortArg: "uCS", longArg: []string{"unset", "chdir", "split-string"}, chdir: []string{"-C", "--chdir"}, assigns: true},
	"command":    {noRun: "vV"},
	"builtin":    {},
	"exec":       {shortArg: "a"},
	"nohup":      {},
	"nice":       {shortArg: "n", longArg: []string{"adjustment"}},
	"ionice":     {shortArg: "cnpPu", longArg: []string{"class", "classdata", "pid", "pgid", "uid"}},
	"timeout":    {shortArg: "sk", longArg: []string{"signal", "kill-after"}, skip: 1},
	"stdbuf":     {shortArg: "ioe", longArg: []string{"input", "output", "error"}},
	"time":       {shortArg: "fo", longArg: []string{"format", "output"}},
	"chronic":    {},
	"unbuffer":   {},
	"caffeinate": {shortArg: "tw"},
	"xargs":      {shortArg: "adEILnPs", longArg: []string{"arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"}},
	"uv": {sub: "run", shortArg: "pw", longArg: []string{"with", "with-editable", "with-requirements", "python", "project", "directory", "group", "extra",
		"env-file", "package", "index", "default-index", "index-url", "extra-index-url", "only-group", "no-group", "script"}, chdir: []string{"--directory"}},
	"poetry": {sub: "run", shortArg: "CP", longArg: []string{"directory", "project"}, chdir: []string{"-C", "--directory"}},
	"pipenv": {sub: "run"},
	"bundle": {sub: "exec"},
}

// run analyses one simple command given as words.
func (a *bashAnalyzer) run(args []bashArg, st *bashState, call bashCall) {
	for len(args) > 0 {
		first := args[0]
		if first.proc {
			return
		}
		if !first.lit {
			a.res.Dynamic = true // the command itself is computed: anything may run
			return
		}
		name := bashBase(first.val)
		w, ok := bashWrappers[name]
		if !ok {
			break
		}
		rest, at, ok := a.unwrap(name, w, args, st)
		if !ok {
			return
		}
		if name == "xargs" {
			call.xargs = true
		}
		args, st = rest, at
	}
	if len(args) == 0 {
		return
	}
	m := a.mark()
	writer := a.simple(bashBase(args[0].val), args, st, call)
	if call.xargs && (writer || a.changed(m)) {
		a.res.Dynamic = true // it also writes operands xargs/find supply
	}
}

// unwrap strips a wrapper and its options; false when no command runs.
func (a *bashAnalyzer) unwrap(name string, w bashWrapper, args []bashArg, st *bashState) ([]bashArg, *bashState, bool) {
	args = args[1:]
	if w.sub != "" {
		if len(args) == 0 || !args[0].lit || args[0].val != w.sub {
			return nil, nil, false
		}
		args = args[1:]
	}
	opts, rest := bashOptions(args, w.shortArg, w.longArg, false)
	at := st
	replace := "" // xargs -I: the words holding it name files DES cannot see
	for _, o := range opts {
		if len(o.name) == 2 && strings.IndexByte(w.noRun, o.name[1]) >= 0 {
			return nil, nil, false
		}
		for _, c := range w.chdir {
			if o.name == c {
				if at == st {
					at = st.clone()
				}
				at.cd(o.val)
			}
		}
		if name == "xargs" {
			switch {
			case o.name == "-I" && o.val.lit:
				replace = o.val.val
			case o.name == "-i" || o.name == "--replace":
				replace = "{}"
				if o.val.lit && o.val.val != "" {
					replace = o.val.val
				}
			}
		}
		if name == "env" && (o.name == "-S" || o.name == "--split-string") {
			// env -S splits one string into words; DES splits literal ones on spaces.
			if !o.val.lit {
				a.res.Dynamic = true
				return nil, nil, false
			}
			var split []bashArg
			for _, f := range strings.Fields(o.val.val) {
				split = append(split, bashLit(f))
			}
			rest = append(split, rest...)
		}
	}
	if w.assigns {
		for len(rest) > 0 && rest[0].lit && bashIsAssign(rest[0].val) {
			rest = rest[1:]
		}
	}
	if w.skip > 0 {
		if len(rest) < w.skip {
			return nil, nil, false
		}
		rest = rest[w.skip:]
	}
	return bashPlaceholders(rest, replace), at, len(rest) > 0
}

func bashIsAssign(v string) bool {
	i := strings.IndexByte(v, '=')
	return i > 0 && syntax.ValidName(v[:i])
}

// bashBase is the command name without its directory (and a Windows .exe).
func bashBase(v string) string {
	if i := strings.LastIndexAny(v, `/\`); i >= 0 {
		v = v[i+1:]
	}
	return strings.TrimSuffix(v, ".exe")
}

// bashOpt is one parsed option.
type bashOpt struct {
	name string  // "-t" or "--target-directory" (the full spelling when an abbreviation matched)
	val  bashArg // its value when it takes one
}

// bashOptions parses GNU-style options. shortArg lists short options taking
// a value (attached or next word), longArg long ones (--x=v or --x v, unique
// abbreviations accepted). With permute, options may follow operands (GNU
// tools) and the operands are returned; without, parsing stops at the first
// operand (wrappers) and the rest is returned. "--" ends the options.
func bashOptions(args []bashArg, shortArg string, longArg []string, permute bool) (opts []bashOpt, operands []bashArg) {
	for i := 0; i < len(args); i++ {
		arg := args[i]
		v := arg.val
		if !arg.lit {
			if strings.HasPrefix(arg.src, "-") {
				// An option DES cannot read: keep its name as written so
				// that callers can still see e.g. --target-directory=$D.
				name := arg.src
				if strings.HasPrefix(name, "--") {
					name, _, _ = strings.Cut(name, "=")
				} else if len(name) > 2 {
					name = name[:2]
				}
				opts = append(opts, bashOpt{name: name, val: bashArg{src: arg.src}})
				continue
			}
			if !permute {
				return opts, args[i:]
			}
			operands = append(operands, arg)
			continue
		}
		switch {
		case v == "--":
			return opts, append(operands, args[i+1:]...)
		case len(v) < 2 || v[0] != '-':
			if !permute {
				return opts, args[i:]
			}
			operands = append(operands, arg)
		case strings.HasPrefix(v, "--"):
			name, val, hasVal := strings.Cut(v[2:], "=")
			full := bashLongMatch(name, longArg)
			switch {
			case hasVal:
				if full == "" {
					full = name
				}
				opts = append(opts, bashOpt{name: "--" + full, val: bashLit(val)})
			case full != "" && i+1 < len(args):
				opts = append(opts, bashOpt{name: "--" + full, val: args[i+1]})
				i++
			default:
				opts = append(opts, bashOpt{name: "--" + name})
			}
		default:
			for j := 1; j < len(v); j++ {
				c := v[j]
				if strings.IndexByte(shortArg, c) < 0 {
					opts = append(opts, bashOpt{name: "-" + string(c)})
					continue
				}
				o := bashOpt{name: "-" + string(c)}
				if j+1 < len(v) {
					o.val = bashLit(v[j+1:])
				} else if i+1 < len(args) {
					o.val = args[i+1]
					i++
				}
				opts = append(opts, o)
				break
			}
		}
	}
	return opts, operands
}

// bashLongMatch resolves a long option name or unique-enough abbreviation.
func bashLongMatch(name string, longArg []string) string {
	if name == "" {
		return ""
	}
	match := ""
	for _, l := range longArg {
		if l == name {
			return l
		}
		if match == "" && strings.HasPrefix(l, name) {
			match = l
		}
	}
	return match
}

func bashHasOpt(opts []bashOpt, names ...string) bool {
	for _, o := range opts {
		for _, n := range names {
			if o.name == n {
				return true
			}
		}
	}
	return false
}

// bashSimpleWriter is a command whose every operand is written.
type bashSimpleWriter struct {
	how      string
	shortArg string
	longArg  []string
}

var bashSimpleWriters = map[string]bashSimpleWriter{
	"tee":      {how: BashHowTee},
	"rm":       {how: BashHowRm},
	"unlink":   {how: BashHowUnlink},
	"shred":    {how: BashHowShred, shortArg: "ns", longArg: []string{"iterations", "size", "random-source"}},
	"sponge":   {how: BashHowSponge},
	"truncate": {how: BashHowTruncate, shortArg: "sr", longArg: []string{"size", "reference"}},
	"touch":    {how: BashHowTouch, shortArg: "drt", longArg: []string{"date", "reference", "time"}},
}

// bashCopier is a cp-like command: sources, then a destination.
type bashCopier struct {
	how       string
	shortArg  string
	longArg   []string
	srcWrites bool // the sources go away (mv)
	single    bool // one operand makes ./basename (ln)
}

var bashCopiers = map[string]bashCopier{
	"cp":      {how: BashHowCp, shortArg: "tS", longArg: []string{"target-directory", "suffix"}},
	"mv":      {how: BashHowMv, shortArg: "tS", longArg: []string{"target-directory", "suffix"}, srcWrites: true},
	"install": {how: BashHowInstall, shortArg: "tSmog", longArg: []string{"target-directory", "suffix", "mode", "owner", "group", "strip-program"}},
	"ln":      {how: BashHowLn, shortArg: "tS", longArg: []string{"target-directory", "suffix"}, single: true},
}

// simple analyses a command that is not a wrapper; it reports whether the
// command is one that writes files.
func (a *bashAnalyzer) simple(name string, args []bashArg, st *bashState, call bashCall) bool {
	if w, ok := bashSimpleWriters[name]; ok {
		_, ops := bashOptions(args[1:], w.shortArg, w.longArg, true)
		for _, op := range ops {
			a.writeArg(op, st.dir, w.how)
		}
		return true
	}
	if c, ok := bashCopiers[name]; ok {
		a.copier(c, args[1:], st.dir)
		return true
	}
	switch name {
	case "cd", "chdir", "pushd", "popd":
		if !call.xargs {
			a.chdir(name, args[1:], st)
		}
		return false
	case "chmod", "chown", "chgrp":
		a.chmod(name, args[1:], st.dir)
		return true
	case "dd":
		for _, arg := range args[1:] {
			if arg.lit && strings.HasPrefix(arg.val, "of=") {
				a.addWrite(arg.val[3:], st.dir, BashHowDd)
			} else if !arg.lit && strings.HasPrefix(arg.src, "of=") {
				a.res.Dynamic = true
			}
		}
		return true
	case "sed":
		return a.sed(args[1:], st.dir)
	case "awk", "gawk":
		return a.awk(args[1:], st.dir)
	case "rsync":
		a.rsync(args[1:], st.dir)
		return true
	case "sort":
		opts, _ := bashOptions(args[1:], "kotST", []string{"key", "output", "field-separator", "buffer-size", "temporary-directory",
			"files0-from", "batch-size", "compress-program", "parallel", "random-source", "sort"}, true)
		for _, o := range opts {
			if o.name == "-o" || o.name == "--output" {
				a.writeArg(o.val, st.dir, BashHowSortOut)
			}
		}
		return true
	case "curl":
		a.curl(args[1:], st.dir)
		return true
	case "wget":
		a.wget(args[1:], st.dir)
		return true
	case "find":
		return a.find(args[1:], st)
	case "git":
		return a.git(args[1:], st)
	case "eval":
		m := a.mark()
		a.eval(args[1:], st)
		return a.changed(m)
	case "perl":
		return a.perl(args[1:], st, call)
	case "ruby":
		return a.ruby(args[1:], st, call)
	case "node", "nodejs":
		return a.node(args[1:], st, call)
	case "bun":
		return a.bun(args[1:], st)
	case "deno":
		return a.deno(args[1:], st)
	}
	if bashIsShell(name) {
		return a.shell(args[1:], st, call)
	}
	if bashIsPython(name) {
		return a.python(args[1:], st, call)
	}
	return false
}

func bashIsShell(name string) bool {
	switch name {
	case "bash", "sh", "zsh", "dash", "ksh", "mksh", "ash":
		return true
	}
	return false
}

func bashIsPython(name string) bool {
	rest, ok := strings.CutPrefix(name, "python")
	if !ok {
		rest, ok = strings.CutPrefix(name, "pypy")
	}
	return ok && strings.Trim(rest, "0123456789.") == ""
}

func (a *bashAnalyzer) chdir(name string, args []bashArg, st *bashState) {
	opts, ops := bashOptions(args, "", nil, false)
	switch name {
	case "cd", "chdir":
		if len(ops) == 0 {
			st.setDir(bashPlace{path: "~"})
			return
		}
		if ops[0].lit && ops[0].val == "-" {
			if st.hasOld {
				st.setDir(st.old)
			} else {
				st.setDir(bashPlace{path: st.dir.path, unknown: true})
			}
			return
		}
		st.cd(ops[0])
	case "pushd":
		if bashHasOpt(opts, "-n") {
			return // only the stack changes
		}
		if len(opts) > 0 && len(ops) == 0 {
			st.dir.unknown = true // pushd -N / +N rotates the stack
			return
		}
		if len(ops) == 0 {
			if n := len(st.stack); n > 0 {
				top := st.stack[n-1]
				st.stack[n-1] = st.dir
				st.setDir(top)
			}
			return
		}
		if ops[0].lit && strings.HasPrefix(ops[0].val, "+") {
			st.dir.unknown = true
			return
		}
		if len(st.stack) >= bashMaxStack {
			st.stack = st.stack[1:] // forget the oldest: popd that far is unknown
			st.lost = true
		}
		st.stack = append(st.stack, st.dir)
		st.cd(ops[0])
	case "popd":
		if len(opts) > 0 || len(ops) > 0 {
			return // popd -n / +N drop entries without moving
		}
		if n := len(st.stack); n > 0 {
			top := st.stack[n-1]
			st.stack = st.stack[:n-1]
			st.setDir(top)
		} else if st.lost {
			st.setDir(bashPlace{path: st.dir.path, unknown: true})
		}
	}
}

func (a *bashAnalyzer) copier(c bashCopier, args []bashArg, at bashPlace) {
	opts, ops := bashOptions(args, c.shortArg, c.longArg, true)
	var target *bashArg
	for _, o := range opts {
		switch o.name {
		case "-t", "--target-directory":
			v := o.val
			target = &v
		case "-d", "--directory":
			if c.how == BashHowInstall {
				for _, op := range ops {
					a.writeArg(op, at, c.how)
				}
				return
			}
		}
	}
	srcs := ops
	if target == nil && len(ops) == 1 {
		if c.single && ops[0].lit {
			a.addWrite(path.Base(strings.TrimRight(ops[0].val, "/")), at, c.how)
		} else if c.single {
			a.res.Dynamic = true
		}
		return
	}
	if target == nil && len(ops) > 1 {
		srcs = ops[:len(ops)-1]
	}
	if c.srcWrites {
		for _, s := range srcs {
			a.writeArg(s, at, c.how)
		}
	}
	switch {
	case target != nil:
		a.into(*target, srcs, at, c.how)
	case len(ops) > 1:
		dest := ops[len(ops)-1]
		if dest.lit && (len(srcs) > 1 || strings.HasSuffix(dest.val, "/")) {
			a.into(dest, srcs, at, c.how) // surely a directory
		} else {
			a.writeArg(dest, at, c.how)
		}
	}
}

// into records the files sources get inside directory dir.
func (a *bashAnalyzer) into(dir bashArg, srcs []bashArg, at bashPlace, how string) {
	if !dir.lit {
		a.res.Dynamic = true
		return
	}
	for _, s := range srcs {
		if !s.lit {
			a.res.Dynamic = true
			a.addWrite(dir.val, at, how) // somewhere inside it
			continue
		}
		name := path.Base(strings.TrimRight(s.val, "/"))
		if strings.HasSuffix(dir.val, "/") {
			a.addWrite(dir.val+name, at, how)
		} else {
			a.addWrite(dir.val+"/"+name, at, how)
		}
	}
}

func (a *bashAnalyzer) chmod(name string, args []bashArg, at bashPlace) {
	var ops []bashArg
	ref, done := false, false
	for i := 0; i < len(args); i++ {
		arg := args[i]
		v := arg.val
		if !done && arg.lit && len(v) > 1 && v[0] == '-' {
			switch {
			case v == "--":
				done = true
				continue
			case strings.HasPrefix(v, "--reference"):
				ref = true
				if !strings.Contains(v, "=") {
					i++
				}
				continue
			case strings.HasPrefix(v, "--"):
				continue
			case name == "chmod" && len(ops) == 0 && !ref && strings.Trim(v[1:], "rwxXst") == "":
				ops = append(ops, arg) // chmod -w FILE: a mode, not an option
				continue
			}
			continue
		}
		ops = append(ops, arg)
	}
	if !ref && len(ops) > 0 {
		ops = ops[1:] // the mode or owner
	}
	how := map[string]string{"chmod": BashHowChmod, "chown": BashHowChown, "chgrp": BashHowChgrp}[name]
	for _, op := range ops {
		a.writeArg(op, at, how)
	}
}

// sed reports the files of sed -i (GNU -i[SUF], --in-place[=SUF], BSD -i SUF).
func (a *bashAnalyzer) sed(args []bashArg, at bashPlace) bool {
	explicit := false // a script came with -e/-f: every operand is a file
	for _, arg := range args {
		v := arg.val
		if arg.lit && len(v) > 1 && v[0] == '-' && v[1] != '-' && strings.ContainsAny(v[1:], "ef") {
			// The first e or f of a cluster (before any i) is -e/-f.
			for _, c := range v[1:] {
				if c == 'e' || c == 'f' {
					explicit = true
					break
				}
				if c == 'i' || c == 'l' {
					break
				}
			}
		}
		if arg.lit && (strings.HasPrefix(v, "--e") || strings.HasPrefix(v, "--f")) {
			explicit = true
		}
	}
	inPlace := false
	var ops []bashArg
	for i := 0; i < len(args); i++ {
		arg := args[i]
		v := arg.val
		if !arg.lit || len(v) < 2 || v[0] != '-' {
			ops = append(ops, arg)
			continue
		}
		if v == "--" {
			ops = append(ops, args[i+1:]...)
			break
		}
		if strings.HasPrefix(v, "--") {
			name, _, hasVal := strings.Cut(v[2:], "=")
			full := bashLongMatch(name, []string{"in-place", "expression", "file", "line-length"})
			if full == "in-place" {
				inPlace = true
			} else if full != "" && !hasVal {
				i++ // the value of --expression/--file/--line-length
			}
			continue
		}
	cluster:
		for j := 1; j < len(v); j++ {
			switch v[j] {
			case 'i':
				inPlace = true
				// BSD sed takes the suffix as the next word: -i '' or -i .bak
				// (a sed script never starts with a dot).
				if j+1 == len(v) && i+1 < len(args) && args[i+1].lit &&
					(args[i+1].val == "" || strings.HasPrefix(args[i+1].val, ".") && !explicit) {
					i++
				}
				break cluster
			case 'e', 'f', 'l':
				if j+1 == len(v) {
					i++
				}
				break cluster
			}
		}
	}
	if !inPlace {
		return false
	}
	if !explicit && len(ops) > 0 {
		ops = ops[1:] // the script
	}
	for _, op := range ops {
		a.writeArg(op, at, BashHowSedInPlace)
	}
	return true
}

// awk reports the files of gawk -i inplace.
func (a *bashAnalyzer) awk(args []bashArg, at bashPlace) bool {
	opts, ops := bashOptions(args, "fvFieEl", []string{"file", "assign", "field-separator", "include", "source", "exec", "load"}, true)
	inPlace, program := false, false
	for _, o := range opts {
		switch o.name {
		case "-i", "--include":
			if o.val.lit && (o.val.val == "inplace" || o.val.val == "inplace.awk") {
				inPlace = true
			}
		case "-f", "--file", "-e", "--source", "-E", "--exec":
			program = true
		}
	}
	if !inPlace {
		return false
	}
	if !program && len(ops) > 0 {
		ops = ops[1:]
	}
	for _, op := range ops {
		if op.lit && bashIsAssign(op.val) {
			continue // var=value operands
		}
		a.writeArg(op, at, BashHowAwkInPlace)
	}
	return true
}

func (a *bashAnalyzer) rsync(args []bashArg, at bashPlace) {
	opts, ops := bashOptions(args, "efTBM@", []string{"exclude", "include", "filter", "exclude-from", "include-from", "files-from",
		"rsh", "rsync-path", "temp-dir", "backup-dir", "suffix", "chmod", "chown", "usermap", "groupmap", "block-size",
		"partial-dir", "log-file", "log-file-format", "out-format", "password-file", "port", "timeout", "contimeout",
		"compare-dest", "copy-dest", "link-dest", "max-size", "min-size", "max-delete", "bwlimit", "modify-window",
		"info", "debug", "compress-level", "compress-choice", "checksum-choice", "skip-compress", "iconv", "sockopts",
		"write-batch", "read-batch", "only-write-batch", "remote-option", "address", "protocol", "outbuf",
		"stop-after", "stop-at", "max-alloc"}, true)
	if len(ops) < 2 {
		return
	}
	if bashHasOpt(opts, "--remove-source-files", "--remove-sent-files") {
		for _, s := range ops[:len(ops)-1] {
			if !bashRemote(s) {
				a.writeArg(s, at, BashHowRsync)
			}
		}
	}
	if dest := ops[len(ops)-1]; !bashRemote(dest) {
		a.writeArg(dest, at, BashHowRsync)
	}
}

// bashRemote reports an rsync operand on another host (host:path, rsync://).
func bashRemote(arg bashArg) bool {
	v := arg.val
	if !arg.lit {
		v = arg.src
	}
	if strings.Contains(v, "://") {
		return true
	}
	colon := strings.IndexByte(v, ':')
	slash := strings.IndexByte(v, '/')
	return colon > 1 && (slash < 0 || colon < slash)
}

func (a *bashAnalyzer) curl(args []bashArg, at bashPlace) {
	const withValue = "AbCcDdEeFHKmoPQrTtUuwXxYyz"
	var outs []bashArg
	var dir *bashArg
	for i := 0; i < len(args); i++ {
		arg := args[i]
		v := arg.val
		if !arg.lit {
			if strings.HasPrefix(arg.src, "-o") || strings.HasPrefix(arg.src, "--output") {
				a.res.Dynamic = true
			}
			continue
		}
		switch {
		case v == "--output" || v == "--output-dir":
			if i+1 < len(args) {
				if v == "--output" {
					outs = append(outs, args[i+1])
				} else {
					d := args[i+1]
					dir = &d
				}
				i++
			}
		case strings.HasPrefix(v, "--"):
		case len(v) > 1 && v[0] == '-':
			for j := 1; j < len(v); j++ {
				if strings.IndexByte(withValue, v[j]) < 0 {
					continue
				}
				val := bashLit(v[j+1:])
				if j+1 == len(v) {
					if i+1 >= len(args) {
						break
					}
					i++
					val = args[i]
				}
				if v[j] == 'o' {
					outs = append(outs, val)
				}
				break
			}
		}
	}
	for _, o := range outs {
		if o.lit && o.val == "-" {
			continue // stdout
		}
		if dir != nil && o.lit && !bashIsAbs(o.val) {
			if !dir.lit {
				a.res.Dynamic = true
				continue
			}
			o = bashLit(strings.TrimSuffix(dir.val, "/") + "/" + o.val)
		}
		a.writeArg(o, at, BashHowCurlOut)
	}
}

func (a *bashAnalyzer) wget(args []bashArg, at bashPlace) {
	opts, _ := bashOptions(args, "oaOeDPQtTwYUBiIlAXR", []string{"output-document", "output-file", "append-output", "directory-prefix",
		"execute", "tries", "timeout", "wait", "user", "password", "header", "input-file", "level", "accept", "reject"}, true)
	for _, o := range opts {
		if (o.name == "-O" || o.name == "--output-document") && !(o.val.lit && o.val.val == "-") {
			a.writeArg(o.val, at, BashHowWgetOut)
		}
	}
}

func (a *bashAnalyzer) find(args []bashArg, st *bashState) bool {
	writer := false
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if !arg.lit {
			continue
		}
		switch arg.val {
		case "-delete":
			a.res.Dynamic = true
			writer = true
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			if i+1 < len(args) {
				a.writeArg(args[i+1], st.dir, BashHowFind)
				writer = true
				i++
			}
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(args) && !(args[j].lit && (args[j].val == ";" || args[j].val == "+")) {
				j++
			}
			m := a.mark()
			a.run(bashPlaceholders(args[i+1:j], "{}"), st.clone(), bashCall{xargs: true})
			writer = writer || a.changed(m)
			i = j
		}
	}
	return writer
}

// bashPlaceholders makes the words holding find's {} or xargs's -I string
// unknown: each stands for a file DES cannot see.
func bashPlaceholders(args []bashArg, mark string) []bashArg {
	out := make([]bashArg, len(args))
	for i, arg := range args {
		out[i] = arg
		if arg.lit && mark != "" && strings.Contains(arg.val, mark) {
			out[i].lit = false
		}
	}
	return out
}

// git records commits and the git subcommands that rewrite work-tree files.
func (a *bashAnalyzer) git(args []bashArg, st *bashState) bool {
	at := st.dir
	i := 0
	for ; i < len(args); i++ {
		arg := args[i]
		if !arg.lit {
			if strings.HasPrefix(arg.src, "-") {
				continue
			}
			return false // a computed subcommand (an alias DES cannot see either)
		}
		v := arg.val
		switch {
		case v == "-C":
			if i+1 < len(args) {
				d := args[i+1]
				if d.lit {
					at = bashJoinDir(at, d.val, false)
				} else {
					at = bashJoinDir(at, d.src, true)
				}
				i++
			}
			continue
		case v == "-c" || v == "--git-dir" || v == "--work-tree" || v == "--namespace" || v == "--super-prefix" || v == "--config-env":
			i++
			continue
		case strings.HasPrefix(v, "-"):
			continue
		}
		break
	}
	if i >= len(args) {
		return false
	}
	sub, rest := args[i].val, args[i+1:]
	switch sub {
	case "commit":
		c := GitCommit{Dir: at.path}
		for _, r := range rest {
			if r.lit {
				c.Args = append(c.Args, r.val)
			} else {
				c.Args = append(c.Args, r.src)
			}
		}
		if at.unknown {
			a.res.Dynamic = true
		}
		a.res.GitCommits = append(a.res.GitCommits, c)
		return true
	case "add", "stage":
		c := GitAdd{Dir: at.path}
		for _, r := range rest {
			if r.lit {
				c.Args = append(c.Args, r.val)
			} else {
				c.Args = append(c.Args, r.src)
			}
		}
		if at.unknown {
			a.res.Dynamic = true
		}
		a.res.GitAdds = append(a.res.GitAdds, c)
		return false // staging writes no work-tree file
	case "rm":
		opts, ops := bashOptions(rest, "", []string{"pathspec-from-file"}, true)
		if bashHasOpt(opts, "--cached") {
			return false
		}
		for _, op := range ops {
			a.writeArg(op, at, BashHowGitRm)
		}
		return true
	case "mv":
		a.copier(bashCopier{how: BashHowGitMv, srcWrites: true}, rest, at)
		return true
	case "restore":
		opts, ops := bashOptions(rest, "s", []string{"source", "pathspec-from-file", "conflict"}, true)
		if bashHasOpt(opts, "-S", "--staged") && !bashHasOpt(opts, "-W", "--worktree") {
			return false
		}
		for _, op := range ops {
			a.writeArg(op, at, BashHowGitRestore)
		}
		return true
	case "checkout":
		return a.gitCheckout(rest, at)
	}
	return false
}

func (a *bashAnalyzer) gitCheckout(args []bashArg, at bashPlace) bool {
	dd := -1
	for i, arg := range args {
		if arg.lit && arg.val == "--" {
			dd = i
			break
		}
	}
	before := args
	if dd >= 0 {
		before = args[:dd]
	}
	opts, ops := bashOptions(before, "bB", []string{"orphan", "conflict", "pathspec-from-file"}, true)
	if dd >= 0 {
		for _, op := range args[dd+1:] {
			a.writeArg(op, at, BashHowGitCheckout)
		}
		return true
	}
	if bashHasOpt(opts, "-b", "-B", "--orphan") || len(ops) == 0 {
		return false // a new branch: no file operands
	}
	// Without --, the first operand is a branch or a path: DES counts it
	// when it looks like a file; later operands are paths.
	if first := ops[0]; first.lit && strings.Contains(path.Base(first.val), ".") {
		a.writeArg(first, at, BashHowGitCheckout)
	}
	for _, op := range ops[1:] {
		a.writeArg(op, at, BashHowGitCheckout)
	}
	return true
}

// eval runs its words joined by spaces in the current shell.
func (a *bashAnalyzer) eval(args []bashArg, st *bashState) {
	parts := make([]string, 0, len(args))
	holes := false
	for _, arg := range args {
		if !arg.lit {
			holes = true
		}
		parts = append(parts, bashScriptOf(arg))
	}
	a.script(strings.Join(parts, " "), st, holes)
}

// script walks a shell script given as text (bash -c, eval, stdin); holes
// marks text with parts substituted at run time, which DES reads as
// unknown expansions.
func (a *bashAnalyzer) script(src string, st *bashState, holes bool) {
	if holes || strings.Contains(src, bashHole) {
		a.res.Dynamic = true
		src = strings.ReplaceAll(src, bashHole, "${__DES_UNKNOWN__}")
	}
	if strings.TrimSpace(src) == "" || strings.TrimSpace(strings.ReplaceAll(src, "${__DES_UNKNOWN__}", "")) == "" {
		return
	}
	if a.depth >= bashMaxScripts {
		a.res.Dynamic = true
		return
	}
	a.depth++
	saved := a.src
	a.src = src
	defer func() { a.depth--; a.src = saved }()
	if bashNestingDepth(src) > bashMaxNesting {
		a.fallback(src, st)
		return
	}
	f, err := bashParse(src)
	if err != nil {
		a.fallback(src, st)
		return
	}
	a.stmts(f.Stmts, st)
}

// bashStdin says what an interpreter reads as its script when it gets none
// in its arguments.
type bashStdin int

const (
	bashStdinUnknown bashStdin = iota // a pipe or the terminal
	bashStdinText                     // a here-document or here-string
	bashStdinFile                     // < file: a script DES does not read
)

func (a *bashAnalyzer) stdinScript(call bashCall) (string, bashStdin) {
	if call.stmt == nil {
		return "", bashStdinUnknown
	}
	text, kind := "", bashStdinUnknown
	for _, r := range call.stmt.Redirs {
		if r.N != nil && r.N.Value != "0" {
			continue
		}
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			if r.Hdoc == nil {
				text, kind = "", bashStdinText
				continue
			}
			if bashQuotedDelim(r.Word) {
				text = bashScriptText(r.Hdoc.Parts, false)
				if len(r.Hdoc.Parts) == 1 {
					if l, ok := r.Hdoc.Parts[0].(*syntax.Lit); ok {
						text = l.Value // quoted delimiter: the body is taken as is
					}
				}
			} else {
				text = bashScriptText(r.Hdoc.Parts, true)
			}
			kind = bashStdinText
		case syntax.WordHdoc:
			text, kind = bashScriptText(r.Word.Parts, false)+"\n", bashStdinText
		case syntax.RdrIn:
			text, kind = "", bashStdinFile
		}
	}
	return text, kind
}

func bashQuotedDelim(w *syntax.Word) bool {
	if w == nil {
		return false
	}
	for _, p := range w.Parts {
		l, ok := p.(*syntax.Lit)
		if !ok || strings.Contains(l.Value, `\`) {
			return true
		}
	}
	return false
}

func (a *bashAnalyzer) shell(args []bashArg, st *bashState, call bashCall) bool {
	cflag, sflag := false, false
	i := 0
options:
	for ; i < len(args); i++ {
		arg := args[i]
		v := arg.val
		if !arg.lit {
			if strings.HasPrefix(arg.src, "-") {
				continue
			}
			break
		}
		switch {
		case v == "--" || v == "-":
			i++
			break options
		case v == "--rcfile" || v == "--init-file":
			i++
		case v == "--version" || v == "--help":
			return false
		case strings.HasPrefix(v, "--"):
		case len(v) > 1 && (v[0] == '-' || v[0] == '+'):
			for _, c := range v[1:] {
				switch c {
				case 'c':
					cflag = true
				case 's':
					sflag = true
				case 'o', 'O':
					i++ // its option name
				}
			}
		default:
			break options
		}
	}
	m := a.mark()
	switch {
	case cflag:
		if i >= len(args) {
			return false
		}
		scr := args[i]
		a.script(bashScriptOf(scr), st.clone(), !scr.lit)
	case i < len(args) && !sflag:
		return false // a script file
	default:
		text, kind := a.stdinScript(call)
		switch kind {
		case bashStdinUnknown:
			a.res.Dynamic = true
		case bashStdinText:
			a.script(text, st.clone(), false)
		}
	}
	return a.changed(m)
}

func (a *bashAnalyzer) python(args []bashArg, st *bashState, call bashCall) bool {
	m := a.mark()
	code, found := "", false
	i := 0
options:
	for ; i < len(args); i++ {
		arg := args[i]
		v := arg.val
		if !arg.lit {
			if strings.HasPrefix(arg.src, "-c") {
				code, found = bashAttached(arg, "-c"), true
				break options
			}
			if strings.HasPrefix(arg.src, "-") {
				continue
			}
			return false // a computed script file name: running a file
		}
		switch {
		case v == "-":
			break options
		case v == "--":
			i++
			break options
		case v == "--version" || v == "--help":
			return false
		case v == "--check-hash-based-pycs":
			i++
			continue
		case strings.HasPrefix(v, "--"):
			continue
		case len(v) < 2 || v[0] != '-':
			break options
		}
		for j := 1; j < len(v); j++ {
			switch v[j] {
			case 'c':
				if j+1 < len(v) {
					code = v[j+1:]
				} else if i+1 < len(args) {
					code = bashScriptOf(args[i+1])
				}
				found = true
				break options
			case 'm':
				return false // a module: a file DES does not read
			case 'V', 'h', '?':
				return false
			case 'W', 'X':
				if j+1 == len(v) {
					i++
				}
				continue options
			}
		}
	}
	switch {
	case found:
		a.scan(bashPython, code, st.dir)
	case i < len(args) && !(args[i].lit && args[i].val == "-"):
		return false // a script file
	default:
		a.stdinScan(bashPython, call, st.dir)
	}
	return a.changed(m)
}

// stdinScan scans a script an interpreter reads from stdin.
func (a *bashAnalyzer) stdinScan(lang bashLang, call bashCall, at bashPlace) {
	text, kind := a.stdinScript(call)
	switch kind {
	case bashStdinUnknown:
		a.res.Dynamic = true
	case bashStdinText:
		a.scan(lang, text, at)
	}
}

func (a *bashAnalyzer) node(args []bashArg, st *bashState, call bashCall) bool {
	m := a.mark()
	for i := 0; i < len(args); i++ {
		arg := args[i]
		v := arg.val
		if !arg.lit {
			if strings.HasPrefix(arg.src, "-") {
				continue
			}
			return false
		}
		switch {
		case v == "-e" || v == "--eval" || v == "-p" || v == "--print" || v == "-pe" || v == "-ep":
			if i+1 < len(args) {
				a.scan(bashJS, bashScriptOf(args[i+1]), st.dir)
			}
			return a.changed(m)
		case strings.HasPrefix(v, "--eval=") || strings.HasPrefix(v, "--print="):
			_, code, _ := strings.Cut(v, "=")
			a.scan(bashJS, code, st.dir)
			return a.changed(m)
		case v == "-v" || v == "--version" || v == "-h" || v == "--help" || v == "-c" || v == "--check":
			return false
		case v == "-r" || v == "--require" || v == "--import" || v == "--loader" || v == "--experimental-loader" ||
			v == "-C" || v == "--conditions" || v == "--input-type" || v == "--env-file":
			i++
		case v == "-":
			a.stdinScan(bashJS, call, st.dir)
			return a.changed(m)
		case v == "--":
			return false
		case strings.HasPrefix(v, "-"):
		default:
			return false // a script file
		}
	}
	a.stdinScan(bashJS, call, st.dir)
	return a.changed(m)
}

// bun runs files and package scripts; only -e/-p give it literal code.
func (a *bashAnalyzer) bun(args []bashArg, st *bashState) bool {
	m := a.mark()
	for i, arg := range args {
		if arg.lit && (arg.val == "-e" || arg.val == "--eval" || arg.val == "-p" || arg.val == "--print") && i+1 < len(args) {
			a.scan(bashJS, bashScriptOf(args[i+1]), st.dir)
			break
		}
		if arg.lit && !strings.HasPrefix(arg.val, "-") {
			break
		}
	}
	return a.changed(m)
}

// deno eval CODE.
func (a *bashAnalyzer) deno(args []bashArg, st *bashState) bool {
	m := a.mark()
	if len(args) > 1 && args[0].lit && args[0].val == "eval" {
		_, ops := bashOptions(args[1:], "", []string{"ext", "config", "import-map", "location", "cert", "v8-flags"}, true)
		if len(ops) > 0 {
			a.scan(bashJS, bashScriptOf(ops[0]), st.dir)
		}
	}
	return a.changed(m)
}

// perl: -e/-E scripts are scanned; -i edits the file operands in place.
func (a *bashAnalyzer) perl(args []bashArg, st *bashState, call bashCall) bool {
	m := a.mark()
	var scripts []string
	inPlace, info := false, false
	var ops []bashArg
	for i := 0; i < len(args); i++ {
		arg := args[i]
		v := arg.val
		if !arg.lit {
			if strings.HasPrefix(arg.src, "-e") || strings.HasPrefix(arg.src, "-E") {
				scripts = append(scripts, bashAttached(arg, "-e"))
				continue
			}
			if strings.HasPrefix(arg.src, "-") {
				continue
			}
			ops = append(ops, args[i:]...)
			break
		}
		if v == "--" {
			ops = append(ops, args[i+1:]...)
			break
		}
		if len(v) < 2 || v[0] != '-' {
			ops = append(ops, args[i:]...)
			break // perl stops at the first operand
		}
		if v == "--version" || v == "--help" {
			return false
		}
	cluster:
		for j := 1; j < len(v); j++ {
			switch c := v[j]; c {
			case 'e', 'E':
				if j+1 < len(v) {
					scripts = append(scripts, v[j+1:])
				} else if i+1 < len(args) {
					i++
					scripts = append(scripts, bashScriptOf(args[i]))
				}
				break cluster
			case 'i':
				inPlace = true
				break cluster // the rest is the backup suffix
			case 'I', 'M', 'm', 'F', 'x', 'd', 'D', 'C':
				if j+1 == len(v) && (c == 'I' || c == 'M' || c == 'm') && i+1 < len(args) {
					i++
				}
				break cluster
			case '0', 'l':
				for j+1 < len(v) && strings.IndexByte("0123456789abcdefABCDEFx", v[j+1]) >= 0 {
					j++
				}
			case 'v', 'V', 'h':
				info = true
			}
		}
	}
	if len(scripts) == 0 {
		switch {
		case len(ops) > 0:
			ops = ops[1:] // the script file
		case info:
			return false
		default:
			a.stdinScan(bashPerl, call, st.dir)
		}
	}
	for _, s := range scripts {
		a.scan(bashPerl, s, st.dir)
	}
	if inPlace {
		for _, op := range ops {
			a.writeArg(op, st.dir, BashHowPerlInPlace)
		}
	}
	return a.changed(m) || inPlace
}

// ruby: like perl, with -C DIR moving first.
func (a *bashAnalyzer) ruby(args []bashArg, st *bashState, call bashCall) bool {
	m := a.mark()
	at := st.dir
	var scripts []string
	inPlace, info := false, false
	var ops []bashArg
	for i := 0; i < len(args); i++ {
		arg := args[i]
		v := arg.val
		if !arg.lit {
			if strings.HasPrefix(arg.src, "-e") {
				scripts = append(scripts, bashAttached(arg, "-e"))
				continue
			}
			if strings.HasPrefix(arg.src, "-") {
				continue
			}
			ops = append(ops, args[i:]...)
			break
		}
		if v == "--" {
			ops = append(ops, args[i+1:]...)
			break
		}
		if len(v) < 2 || v[0] != '-' {
			ops = append(ops, args[i:]...)
			break
		}
		if v == "--version" || v == "--help" {
			return false
		}
		if strings.HasPrefix(v, "--") {
			continue
		}
	cluster:
		for j := 1; j < len(v); j++ {
			switch c := v[j]; c {
			case 'e':
				if j+1 < len(v) {
					scripts = append(scripts, v[j+1:])
				} else if i+1 < len(args) {
					i++
					scripts = append(scripts, bashScriptOf(args[i]))
				}
				break cluster
			case 'i':
				inPlace = true
				break cluster
			case 'I', 'r', 'C', 'E', 'F':
				val := bashLit(v[j+1:])
				if j+1 == len(v) && i+1 < len(args) {
					i++
					val = args[i]
				}
				if c == 'C' {
					if val.lit {
						at = bashJoinDir(at, val.val, false)
					} else {
						at = bashJoinDir(at, val.src, true)
					}
				}
				break cluster
			case '0', 'l', 'W', 'x', 'T', 'K':
				break cluster
			case 'v', 'h':
				info = true
			}
		}
	}
	if len(scripts) == 0 {
		switch {
		case len(ops) > 0:
			ops = ops[1:]
		case info:
			return false
		default:
			a.stdinScan(bashRuby, call, at)
		}
	}
	for _, s := range scripts {
		a.scan(bashRuby, s, at)
	}
	if inPlace {
		for _, op := range ops {
			a.writeArg(op, at, BashHowRubyInPlace)
		}
	}
	return a.changed(m) || inPlace
}

// ---------------------------------------------------------------------------
// The conservative scan used when the command does not parse.

// bashRoughTok is a word, or a redirection operator (op set).
type bashRoughTok struct {
	text string
	op   string
}

// fallback reads src without trusting its quoting: every piece between
// command separators is a command; quotes are dropped, so text the shell
// would have kept inside a string is read as code (conservative).
func (a *bashAnalyzer) fallback(src string, st *bashState) {
	a.res.Dynamic = true
	for _, cmd := range bashRoughCommands(src) {
		var args []bashArg
		for i := 0; i < len(cmd); i++ {
			t := cmd[i]
			if t.op == "" {
				args = append(args, bashArg{val: t.text, src: t.text, lit: !strings.ContainsAny(t.text, "$*?[`")})
				continue
			}
			if i+1 >= len(cmd) || cmd[i+1].op != "" {
				continue
			}
			target := cmd[i+1].text
			i++
			switch t.op {
			case ">", ">>", ">|", "&>", "&>>", "<>":
			case ">&":
				if target == "-" || strings.Trim(strings.TrimSuffix(target, "-"), "0123456789") == "" {
					continue
				}
			default:
				continue // input and here-documents
			}
			a.writeArg(bashArg{val: target, src: target, lit: !strings.ContainsAny(target, "$*?[`")}, st.dir, BashHowRedirect)
		}
		// Pieces split at ; start with the keyword of the compound command.
		for len(args) > 0 && bashRoughKeywords[args[0].val] {
			args = args[1:]
		}
		a.run(args, st, bashCall{})
	}
}

var bashRoughKeywords = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "fi": true, "do": true, "done": true,
	"while": true, "until": true, "!": true, "{": true, "}": true, "time": true, "esac": true,
}

// bashRoughCommands splits src into commands of rough tokens, skipping the
// bodies of here-documents it recognises.
func bashRoughCommands(src string) [][]bashRoughTok {
	var cmds [][]bashRoughTok
	var cur []bashRoughTok
	var word strings.Builder
	inWord := false
	var pending []string // here-document delimiters waiting for the end of the line
	wantDelim := false   // the next word follows << or <<-
	flush := func() {
		if inWord {
			cur = append(cur, bashRoughTok{text: word.String()})
			if wantDelim {
				pending = append(pending, word.String())
				wantDelim = false
			}
		}
		word.Reset()
		inWord = false
	}
	endCmd := func() {
		flush()
		if len(cur) > 0 {
			cmds = append(cmds, cur)
		}
		cur = nil
	}
	op := func(o string) {
		// A descriptor number written just before the operator is not a word.
		if inWord && strings.Trim(word.String(), "0123456789") == "" {
			word.Reset()
			inWord = false
		}
		flush()
		cur = append(cur, bashRoughTok{op: o})
		wantDelim = o == "<<" || o == "<<-"
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		next := byte(0)
		if i+1 < len(src) {
			next = src[i+1]
		}
		switch {
		case c == '\\' && i+1 < len(src):
			if next != '\n' {
				word.WriteByte(next)
				inWord = true
			}
			i++
		case c == '\'' || c == '"':
			inWord = true
		case c == ' ' || c == '\t' || c == '\r':
			flush()
		case c == '\n':
			// The bodies of here-documents started on this line follow it.
			endCmd()
			for _, d := range pending {
				for i+1 < len(src) {
					end := strings.IndexByte(src[i+1:], '\n')
					line := src[i+1:]
					if end >= 0 {
						line = src[i+1 : i+1+end]
					}
					if end < 0 {
						i = len(src) - 1
					} else {
						i += end + 1
					}
					if strings.TrimLeft(line, "\t") == d {
						break
					}
				}
			}
			pending = nil
		case c == ';' || c == '|' || c == '(' || c == ')' || c == '`':
			endCmd()
		case c == '&' && next == '>':
			if i+2 < len(src) && src[i+2] == '>' {
				op("&>>")
				i += 2
			} else {
				op("&>")
				i++
			}
		case c == '&':
			endCmd()
		case c == '$' && next == '(':
			endCmd()
			i++
		case c == '>':
			switch next {
			case '>':
				op(">>")
				i++
			case '|':
				op(">|")
				i++
			case '&':
				op(">&")
				i++
			default:
				op(">")
			}
		case c == '<':
			switch {
			case strings.HasPrefix(src[i:], "<<<"):
				op("<<<")
				i += 2
			case strings.HasPrefix(src[i:], "<<-"):
				op("<<-")
				i += 2
			case next == '<':
				op("<<")
				i++
			case next == '>':
				op("<>")
				i++
			case next == '&':
				op("<&")
				i++
			case next == '(':
				endCmd() // process substitution
				i++
			default:
				op("<")
			}
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	endCmd()
	return cmds
}

// ---------------------------------------------------------------------------
// Interpreter scripts (python -c, node -e, ruby -e, perl -e, here-documents).
// They are scanned for calls that write files, not parsed: see AnalyzeBash.

type bashLang int

const (
	bashPython bashLang = iota
	bashJS
	bashRuby
	bashPerl
)

var bashLangHow = [...]string{BashHowPython, BashHowNode, BashHowRuby, BashHowPerl}

// bashModeKind says how a call decides whether it writes.
type bashModeKind int

const (
	bashModeNone     bashModeKind = iota // the call always writes
	bashModeChars                        // an open mode string ('w', 'a', 'r+'...); absent means read
	bashModeFlags                        // O_WRONLY/O_CREAT... flags
	bashModePerlOpen                     // perl open, 2- and 3-argument forms
	bashModeReceiver                     // a Python pathlib method: the receiver Path('...') is the file
)

// bashPat is a call in a script that writes files.
type bashPat struct {
	name   string // as written; a leading '.' means a method on any receiver
	paths  []int  // written path arguments; nil means every positional argument
	mode   int    // the argument holding the mode, -1 when none
	modeKw string // keyword spelling of the mode argument
	pathKw string // keyword spelling of the first path argument
	kind   bashModeKind
}

func bashPats(mode int, kind bashModeKind, paths []int, names ...string) []bashPat {
	out := make([]bashPat, 0, len(names))
	for _, n := range names {
		out = append(out, bashPat{name: n, paths: paths, mode: mode, kind: kind})
	}
	return out
}

func bashJoinPats(groups ...[]bashPat) []bashPat {
	var out []bashPat
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

var (
	bashArg0  = []int{0}
	bashArg1  = []int{1}
	bashArg01 = []int{0, 1}
)

var bashScriptPats = [...][]bashPat{
	bashPython: bashJoinPats(
		[]bashPat{{name: "open", paths: bashArg0, pathKw: "file", mode: 1, modeKw: "mode", kind: bashModeChars}},
		[]bashPat{{name: "os.open", paths: bashArg0, mode: 1, modeKw: "flags", kind: bashModeFlags}},
		bashPats(1, bashModeChars, bashArg0, "io.open", "codecs.open", "gzip.open", "bz2.open", "lzma.open", "builtins.open", "tarfile.open"),
		bashPats(-1, bashModeNone, bashArg0, "os.remove", "os.unlink", "os.truncate", "shutil.rmtree"),
		bashPats(-1, bashModeNone, bashArg01, "os.rename", "os.replace", "shutil.move"),
		bashPats(-1, bashModeNone, bashArg1, "shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.copytree", "os.symlink", "os.link"),
		bashPats(-1, bashModeReceiver, nil, ".write_text", ".write_bytes", ".touch", ".unlink", ".rename", ".replace", ".symlink_to", ".hardlink_to"),
		[]bashPat{{name: ".open", mode: 0, modeKw: "mode", kind: bashModeReceiver}},
	),
	bashJS: bashJoinPats(
		bashPats(-1, bashModeNone, bashArg0, "writeFileSync", "writeFile", "appendFileSync", "appendFile", "createWriteStream",
			"truncateSync", "unlinkSync", "rmSync", "rmdirSync", "outputFileSync", "outputFile", "writeJsonSync", "writeJSONSync",
			"writeJson", "writeJSON", "removeSync", "emptyDirSync", "Bun.write", "Deno.writeTextFile", "Deno.writeTextFileSync",
			"Deno.writeFile", "Deno.writeFileSync", "Deno.remove", "Deno.removeSync", "Deno.create", "Deno.createSync",
			"Deno.truncate", "Deno.truncateSync", ".rm", ".unlink", ".truncate", ".remove", ".rmdir"),
		bashPats(-1, bashModeNone, bashArg01, "renameSync", "moveSync", "Deno.rename", "Deno.renameSync", ".rename", ".move"),
		bashPats(-1, bashModeNone, bashArg1, "copyFileSync", "cpSync", "copySync", "symlinkSync", "linkSync",
			"Deno.copyFile", "Deno.copyFileSync", ".copyFile", ".cp", ".copy", ".symlink", ".link"),
		bashPats(1, bashModeChars, bashArg0, "openSync", ".open"),
	),
	bashRuby: bashJoinPats(
		bashPats(-1, bashModeNone, bashArg0, "File.write", "IO.write", "File.binwrite", "IO.binwrite", "File.truncate"),
		[]bashPat{
			{name: "File.open", paths: bashArg0, mode: 1, modeKw: "mode", kind: bashModeChars},
			{name: "File.new", paths: bashArg0, mode: 1, modeKw: "mode", kind: bashModeChars},
			{name: "open", paths: bashArg0, mode: 1, modeKw: "mode", kind: bashModeChars},
		},
		bashPats(-1, bashModeNone, nil, "File.delete", "File.unlink", "FileUtils.rm", "FileUtils.rm_f", "FileUtils.rm_r",
			"FileUtils.rm_rf", "FileUtils.remove", "FileUtils.remove_file", "FileUtils.touch", "FileUtils.remove_dir",
			"FileUtils.remove_entry", "FileUtils.rmtree"),
		bashPats(-1, bashModeNone, bashArg01, "File.rename", "FileUtils.mv", "FileUtils.move"),
		bashPats(-1, bashModeNone, bashArg1, "FileUtils.cp", "FileUtils.copy", "FileUtils.cp_r", "FileUtils.install",
			"FileUtils.copy_file", "FileUtils.ln", "FileUtils.ln_s", "FileUtils.ln_sf", "File.symlink", "File.link"),
	),
	bashPerl: bashJoinPats(
		[]bashPat{{name: "open", mode: 1, kind: bashModePerlOpen}},
		[]bashPat{{name: "sysopen", paths: bashArg1, mode: 2, kind: bashModeFlags}},
		bashPats(-1, bashModeNone, nil, "unlink", "rmtree", "remove_tree"),
		bashPats(-1, bashModeNone, bashArg01, "rename", "move"),
		bashPats(-1, bashModeNone, bashArg0, "truncate"),
		bashPats(-1, bashModeNone, bashArg1, "copy", "symlink", "link"),
	),
}

// bashScriptMatch is one write call found in a script.
type bashScriptMatch struct {
	at   int
	pat  *bashPat
	args []string
}

// scan records the files a script writes with literal paths, and Dynamic
// for write calls whose path or mode DES cannot read.
func (a *bashAnalyzer) scan(lang bashLang, script string, at bashPlace) {
	if strings.Trim(script, bashHole+" \t\r\n") == "" {
		if strings.Contains(script, bashHole) {
			a.res.Dynamic = true // the whole script is computed
		}
		return
	}
	var found []bashScriptMatch
	pats := bashScriptPats[lang]
	for i := range pats {
		p := &pats[i]
		for off := 0; off < len(script); {
			k := strings.Index(script[off:], p.name)
			if k < 0 {
				break
			}
			k += off
			off = k + len(p.name)
			if !bashCallBoundary(lang, script, k, p.name) {
				continue
			}
			if len(found) >= bashMaxScriptCalls {
				a.res.Dynamic = true
				break
			}
			if args, ok := bashCallArgs(lang, script, off); ok {
				found = append(found, bashScriptMatch{at: k, pat: p, args: args})
			}
		}
	}
	// Report in script order: insertion sort, matches are few.
	for i := 1; i < len(found); i++ {
		for j := i; j > 0 && found[j].at < found[j-1].at; j-- {
			found[j], found[j-1] = found[j-1], found[j]
		}
	}
	for _, m := range found {
		a.scriptCall(lang, m, script, at)
	}
}

// bashCallBoundary tells a call of name at k from a longer identifier.
func bashCallBoundary(lang bashLang, s string, k int, name string) bool {
	if name[0] == '.' {
		if k == 0 {
			return false
		}
		c := s[k-1]
		return bashIdentByte(c) || c == ')' || c == ']'
	}
	if k == 0 {
		return true
	}
	switch c := s[k-1]; {
	case bashIdentByte(c) || c == '$' || c == '@' || c == '%':
		return false
	case c == '.':
		return lang == bashJS // fs.writeFileSync, require('fs').rmSync
	case c == '>' && k >= 2 && s[k-2] == '-':
		return false // a Perl method ->open on some object
	}
	return true
}

// bashCallArgs returns the raw argument texts of the call whose name ends at off.
func bashCallArgs(lang bashLang, s string, off int) ([]string, bool) {
	j := off
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	if j >= len(s) {
		return nil, false
	}
	if s[j] == '(' {
		return bashSplitArgs(s[j+1:], true), true
	}
	if (lang == bashPerl || lang == bashRuby) && j > off {
		c := s[j]
		if c == '"' || c == '\'' || c == '$' || c == ':' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			return bashSplitArgs(s[j:], false), true
		}
	}
	return nil, false
}

// bashMaxCallText bounds how far DES reads the arguments of one call, and
// back to its receiver, so that a huge unbalanced script stays linear.
const bashMaxCallText = 4 << 10

// bashMaxScriptCalls bounds the write calls DES examines in one script;
// beyond it the script is Dynamic.
const bashMaxScriptCalls = 4096

// bashSplitArgs splits call arguments at top-level commas, up to the closing
// parenthesis (paren) or the end of the statement (Perl/Ruby without one).
func bashSplitArgs(s string, paren bool) []string {
	if len(s) > bashMaxCallText {
		s = s[:bashMaxCallText]
	}
	var args []string
	depth, start := 0, 0
	done := func(end int) []string {
		if last := strings.TrimSpace(s[start:end]); last != "" || len(args) > 0 {
			args = append(args, s[start:end])
		}
		return args
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\'', '"', '`':
			for i++; i < len(s) && s[i] != c; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			if depth == 0 {
				return done(i)
			}
			depth--
		case ',':
			if depth == 0 {
				args = append(args, s[start:i])
				start = i + 1
			}
		case ';', '\n':
			if !paren && depth == 0 {
				return done(i)
			}
		case ' ':
			if !paren && depth == 0 {
				rest := s[i:]
				for _, stop := range []string{" or ", " and ", " || ", " && ", " if ", " unless ", " do ", " do\n", " {"} {
					if strings.HasPrefix(rest, stop) {
						return done(i)
					}
				}
			}
		}
	}
	if i := len(s); i > start {
		return done(i)
	}
	return args
}

// bashSplitKw separates keyword arguments (Python name=, Ruby name:) from
// positional ones.
func bashSplitKw(lang bashLang, args []string) ([]string, map[string]string) {
	var pos []string
	var kw map[string]string
	for _, a := range args {
		t := strings.TrimSpace(a)
		n := 0
		for n < len(t) && bashIdentByte(t[n]) {
			n++
		}
		isKw := false
		if n > 0 && n < len(t) {
			rest := strings.TrimLeft(t[n:], " ")
			switch lang {
			case bashPython:
				isKw = strings.HasPrefix(rest, "=") && !strings.HasPrefix(rest, "==")
			case bashRuby:
				isKw = t[n] == ':' && !strings.HasPrefix(t[n:], "::")
			}
			if isKw {
				if kw == nil {
					kw = map[string]string{}
				}
				kw[t[:n]] = strings.TrimSpace(rest[1:])
				continue
			}
		}
		pos = append(pos, a)
	}
	return pos, kw
}

func bashArgAt(pos []string, kw map[string]string, i int, name string) (string, bool) {
	if i >= 0 && i < len(pos) {
		return pos[i], true
	}
	if name != "" {
		v, ok := kw[name]
		return v, ok
	}
	return "", false
}

// bashScriptString is the value of a string literal argument; false when
// the argument is anything else (a variable, a concatenation, an
// interpolating string, text the shell substitutes).
func bashScriptString(lang bashLang, arg string) (string, bool) {
	s := strings.TrimSpace(arg)
	raw, fstr := false, false
	if lang == bashPython {
		for n := 0; n < 2 && len(s) > 1 && strings.IndexByte("rRbBuUfF", s[0]) >= 0; n++ {
			raw = raw || s[0] == 'r' || s[0] == 'R'
			fstr = fstr || s[0] == 'f' || s[0] == 'F'
			s = s[1:]
		}
	}
	if len(s) < 2 {
		return "", false
	}
	q := s[0]
	switch {
	case q == '\'' || q == '"':
	case q == '`' && lang == bashJS:
	default:
		return "", false
	}
	var body, rest string
	if triple := strings.Repeat(string(q), 3); lang == bashPython && strings.HasPrefix(s, triple) {
		end := strings.Index(s[3:], triple)
		if end < 0 {
			return "", false
		}
		body, rest = s[3:3+end], s[3+end+3:]
	} else {
		end := -1
		for i := 1; i < len(s); i++ {
			if s[i] == '\\' {
				i++
				continue
			}
			if s[i] == q {
				end = i
				break
			}
		}
		if end < 0 {
			return "", false
		}
		body, rest = s[1:end], s[end+1:]
	}
	if strings.TrimSpace(rest) != "" || strings.Contains(body, bashHole) {
		return "", false
	}
	switch {
	case fstr && strings.Contains(body, "{"),
		lang == bashJS && q == '`' && strings.Contains(body, "${"),
		lang == bashRuby && q == '"' && strings.Contains(body, "#{"),
		lang == bashPerl && q == '"' && bashPerlInterpolates(body):
		return "", false
	}
	if raw || (q == '\'' && (lang == bashRuby || lang == bashPerl)) {
		// Only \\ and \' are escapes in these (and none in raw strings).
		if raw {
			return body, true
		}
		return strings.NewReplacer(`\\`, `\`, `\'`, `'`).Replace(body), true
	}
	var sb strings.Builder
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' || i+1 == len(body) {
			sb.WriteByte(c)
			continue
		}
		i++
		switch body[i] {
		case 'n':
			sb.WriteByte('\n')
		case 't':
			sb.WriteByte('\t')
		case '\\', '\'', '"', '`', '$', '@', '#', '{':
			sb.WriteByte(body[i])
		default:
			sb.WriteByte('\\')
			sb.WriteByte(body[i])
		}
	}
	return sb.String(), true
}

func bashPerlInterpolates(body string) bool {
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '\\':
			i++
		case '$', '@':
			return true
		}
	}
	return false
}

// bashModeWrites tells whether an open mode argument writes; known is
// false when DES cannot read it.
func bashModeWrites(lang bashLang, kind bashModeKind, arg string) (writes, known bool) {
	flags := func(s string) bool {
		for _, f := range []string{"WRONLY", "RDWR", "CREAT", "TRUNC", "APPEND"} {
			if strings.Contains(s, f) {
				return true
			}
		}
		return false
	}
	s, ok := bashScriptString(lang, arg)
	switch {
	case !ok && flags(arg):
		return true, true
	case !ok && strings.Contains(arg, "RDONLY"):
		return false, true
	case !ok:
		return false, false
	case lang == bashPython && kind == bashModeChars:
		return strings.ContainsAny(s, "wax+"), true
	}
	return strings.ContainsAny(s, "wa+"), true
}

// writeScriptArg records a path argument of a script call.
func (a *bashAnalyzer) writeScriptArg(lang bashLang, arg string, at bashPlace) {
	if p, ok := bashScriptString(lang, arg); ok {
		a.addWrite(p, at, bashLangHow[lang])
		return
	}
	a.res.Dynamic = true
}

func (a *bashAnalyzer) scriptCall(lang bashLang, m bashScriptMatch, script string, at bashPlace) {
	p := m.pat
	pos, kw := bashSplitKw(lang, m.args)
	switch p.kind {
	case bashModeReceiver:
		a.pathMethod(p, script, m.at, pos, kw, at)
		return
	case bashModePerlOpen:
		a.perlOpen(pos, at)
		return
	}
	if p.mode >= 0 {
		mode, has := bashArgAt(pos, kw, p.mode, p.modeKw)
		if !has {
			if p.kind == bashModeChars {
				return // the default mode reads
			}
			a.res.Dynamic = true
			return
		}
		w, known := bashModeWrites(lang, p.kind, mode)
		if !known {
			a.res.Dynamic = true
			return
		}
		if !w {
			return
		}
	}
	if p.paths == nil {
		for _, arg := range pos {
			a.writeScriptArg(lang, arg, at)
		}
		if len(pos) == 0 {
			a.res.Dynamic = true // e.g. Perl's unlink with no list works on $_
		}
		return
	}
	for n, i := range p.paths {
		name := ""
		if n == 0 {
			name = p.pathKw
		}
		if arg, ok := bashArgAt(pos, kw, i, name); ok {
			a.writeScriptArg(lang, arg, at)
		}
	}
}

// pathMethod handles pathlib methods: Path('x').write_text(...) writes x;
// the same method on a variable receiver is Dynamic.
func (a *bashAnalyzer) pathMethod(p *bashPat, script string, k int, pos []string, kw map[string]string, at bashPlace) {
	file, recv := bashPyReceiver(script, k)
	switch p.name {
	case ".open":
		mode, has := bashArgAt(pos, kw, 0, "mode")
		if !has || recv == bashRecvModule {
			return
		}
		w, known := bashModeWrites(bashPython, bashModeChars, mode)
		if known && !w {
			return
		}
		if !known || recv != bashRecvPath {
			a.res.Dynamic = true
			return
		}
		a.addWrite(file, at, BashHowPython)
	case ".rename", ".replace", ".symlink_to", ".hardlink_to":
		// Common names on other objects (str.replace): only a literal
		// Path receiver counts.
		if recv != bashRecvPath {
			return
		}
		if p.name == ".rename" || p.name == ".replace" {
			a.addWrite(file, at, BashHowPython)
			if arg, ok := bashArgAt(pos, kw, 0, "target"); ok {
				a.writeScriptArg(bashPython, arg, at)
			}
			return
		}
		a.addWrite(file, at, BashHowPython)
	default:
		switch recv {
		case bashRecvPath:
			a.addWrite(file, at, BashHowPython)
		case bashRecvModule:
		default:
			a.res.Dynamic = true
		}
	}
}

type bashRecv int

const (
	bashRecvUnknown bashRecv = iota // a variable or an expression
	bashRecvPath                    // Path('literal', ...)
	bashRecvModule                  // a module such as io or os
)

// bashPyReceiver reads the receiver of the method whose '.' is at dot.
func bashPyReceiver(s string, dot int) (string, bashRecv) {
	r := strings.TrimRight(s[max(0, dot-bashMaxCallText):dot], " \t")
	if strings.HasSuffix(r, ")") {
		depth := 0
		open := -1
		for i := len(r) - 1; i >= 0; i-- {
			if r[i] == ')' {
				depth++
			} else if r[i] == '(' {
				depth--
				if depth == 0 {
					open = i
					break
				}
			}
		}
		if open < 0 {
			return "", bashRecvUnknown
		}
		n := open
		for n > 0 && (bashIdentByte(r[n-1]) || r[n-1] == '.') {
			n--
		}
		switch r[n:open] {
		case "Path", "pathlib.Path", "PurePath", "PosixPath", "WindowsPath", "pathlib.PurePath", "pathlib.PosixPath":
		default:
			return "", bashRecvUnknown
		}
		var parts []string
		for _, arg := range bashSplitArgs(r[open+1:], true) {
			v, ok := bashScriptString(bashPython, arg)
			if !ok {
				return "", bashRecvUnknown
			}
			parts = append(parts, v)
		}
		if len(parts) == 0 {
			return "", bashRecvUnknown
		}
		return strings.Join(parts, "/"), bashRecvPath
	}
	n := len(r)
	for n > 0 && bashIdentByte(r[n-1]) {
		n--
	}
	switch r[n:] {
	case "io", "codecs", "gzip", "bz2", "lzma", "builtins", "tarfile", "os", "zipfile", "shutil", "webbrowser", "subprocess", "urllib", "request":
		return "", bashRecvModule
	}
	return "", bashRecvUnknown
}

// perlOpen handles open(FH, '>file') and open(FH, '>', 'file').
func (a *bashAnalyzer) perlOpen(pos []string, at bashPlace) {
	if len(pos) < 2 {
		return
	}
	if len(pos) == 2 {
		m := pos[1]
		if s, ok := bashScriptString(bashPerl, m); ok {
			t := strings.TrimLeft(s, " \t")
			var rest string
			switch {
			case strings.HasPrefix(t, "+<"), strings.HasPrefix(t, "+>"), strings.HasPrefix(t, ">>"):
				rest = t[2:]
			case strings.HasPrefix(t, ">"):
				rest = t[1:]
			default:
				return // reading, or a pipe
			}
			rest = strings.TrimSpace(rest)
			if rest == "" || rest == "-" || strings.HasPrefix(rest, "&") {
				return // a duplicated handle
			}
			a.addWrite(rest, at, BashHowPerl)
			return
		}
		t := strings.TrimSpace(m)
		if len(t) > 0 && (t[0] == '"' || t[0] == '\'') {
			body := strings.TrimLeft(t[1:], " \t")
			if strings.HasPrefix(body, ">") || strings.HasPrefix(body, "+") {
				a.res.Dynamic = true
			}
			return // reading an interpolated name
		}
		a.res.Dynamic = true // the mode and name come from a variable
		return
	}
	s, ok := bashScriptString(bashPerl, pos[1])
	if !ok {
		a.res.Dynamic = true
		return
	}
	if t := strings.TrimSpace(s); strings.HasPrefix(t, ">") || strings.HasPrefix(t, "+") {
		a.writeScriptArg(bashPerl, pos[2], at)
	}
}
