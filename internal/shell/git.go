package shell

import (
	"path"
	"strings"
	"sync"
)

// gitBuiltins are git's own subcommands (git 2.39, `git help -a`): any
// other word is an alias or an external git-* command. Built on first use,
// not in init: most hook events never read a git command.
var gitBuiltins = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, c := range strings.Fields(`add am annotate apply archimport archive bisect blame branch bugreport bundle
		cat-file check-attr check-ignore check-mailmap check-ref-format checkout checkout-index cherry cherry-pick
		citool clean clone column commit commit-graph commit-tree config count-objects credential credential-cache
		credential-store cvsexportcommit cvsimport cvsserver daemon describe diagnose diff diff-files diff-index
		diff-tree difftool fast-export fast-import fetch fetch-pack filter-branch fmt-merge-msg for-each-ref
		for-each-repo format-patch fsck fsck-objects fsmonitor--daemon gc get-tar-commit-id gitk gitweb grep gui
		hash-object help hook http-backend http-fetch http-push imap-send index-pack init init-db instaweb
		interpret-trailers log ls-files ls-remote ls-tree mailinfo mailsplit maintenance merge merge-base
		merge-file merge-index merge-one-file merge-tree mergetool mktag mktree multi-pack-index mv name-rev notes
		p4 pack-objects pack-redundant pack-refs patch-id prune prune-packed pull push quiltimport range-diff
		read-tree rebase receive-pack reflog remote repack replace request-pull rerere reset restore rev-list
		rev-parse revert rm scalar send-email send-pack sh-i18n sh-setup shortlog show show-branch show-index
		show-ref sparse-checkout stage stash status stripspace submodule svn switch symbolic-ref tag
		unpack-file unpack-objects update-index update-ref update-server-info upload-archive upload-pack var
		verify-commit verify-pack verify-tag version whatchanged worktree write-tree`) {
		m[c] = true
	}
	return m
})

// gitCommitting are the subcommands that make commits on the current
// branch (or a commit object for update-ref): each is a GitCommit.
var gitCommitting = map[string]bool{
	"commit": true, "merge": true, "cherry-pick": true, "revert": true, "rebase": true, "am": true,
	"pull": true, "commit-tree": true,
}

// gitValueOpts are git's global options that take the next word as value.
var gitValueOpts = map[string]bool{
	"-C": true, "-c": true, "--git-dir": true, "--work-tree": true, "--namespace": true,
	"--super-prefix": true, "--config-env": true, "--list-cmds": true, "--attr-source": true,
}

// maxAliasHops bounds alias expansion (git itself refuses loops).
const maxAliasHops = 10

// git records commits, adds, and the git subcommands that rewrite
// work-tree files.
func (a *analyzer) git(args []word, st *walkState) bool {
	at := st
	var options []string
	aliases := map[string]string{} // -c alias.NAME=VALUE
	dynAlias := false              // an alias defined with a value DES cannot read
	i := 0
	for ; i < len(args); i++ {
		arg := args[i]
		if !arg.lit {
			if strings.HasPrefix(arg.src, "-") {
				options = append(options, arg.src)
				dynAlias = true // -c "$X" may define anything
				continue
			}
			break
		}
		v := arg.val
		if !strings.HasPrefix(v, "-") {
			break
		}
		options = append(options, v)
		name, val, hasVal := strings.Cut(v, "=")
		if gitValueOpts[name] && !hasVal && i+1 < len(args) {
			i++
			valArg := args[i]
			options = append(options, texts([]word{valArg})...)
			if !valArg.lit {
				if name == "-c" || name == "--config-env" {
					dynAlias = true
				}
				if name == "-C" {
					at = a.cd(at, valArg)
				}
				continue
			}
			val, hasVal = valArg.val, true
			if valArg.lit && name == "-C" {
				at = a.cd(at, valArg)
			}
		}
		if !hasVal {
			continue
		}
		switch name {
		case "-c":
			if k, def, ok := strings.Cut(val, "="); ok && strings.HasPrefix(strings.ToLower(k), "alias.") {
				aliases[k[len("alias."):]] = def
			}
		case "--config-env":
			if strings.HasPrefix(strings.ToLower(val), "alias.") {
				dynAlias = true
			}
		}
	}
	if i >= len(args) {
		return false
	}
	sub, rest := args[i], args[i+1:]
	if !sub.lit {
		a.gitCommit(at, "", sub.src, rest, options, true, false)
		return true
	}
	name := sub.val
	for hops := 0; !gitBuiltins()[name]; hops++ {
		def, ok := aliases[name]
		if !ok {
			def, ok = a.gitAliases[name]
		}
		if !ok || hops >= maxAliasHops {
			break
		}
		if strings.HasPrefix(def, "!") {
			// A shell alias: git runs it with sh -c, the words after it as
			// arguments.
			m := a.mark()
			script := def[1:]
			for _, r := range rest {
				script += " " + syntaxQuote(r)
			}
			a.script(script, at, false)
			return a.changed(m)
		}
		fields := strings.Fields(def)
		if len(fields) == 0 {
			break
		}
		name = fields[0]
		extra := make([]word, 0, len(fields)-1+len(rest))
		for _, f := range fields[1:] {
			extra = append(extra, litArg(strings.Trim(f, `'"`)))
		}
		rest = append(extra, rest...)
	}
	if gitBuiltins()[name] {
		for _, l := range at.dir.list() {
			a.res.GitRuns = append(a.res.GitRuns, GitRun{Dir: l.path, Subcommand: name, Args: texts(rest)})
		}
	}
	switch {
	case gitCommitting[name]:
		a.gitCommit(at, name, name, rest, options, dynAlias, false)
		return true
	case !gitBuiltins()[name]:
		a.gitCommit(at, name, name, rest, options, dynAlias, true)
		return true
	case name == "config":
		a.gitConfig(rest)
		return false
	case name == "add" || name == "stage":
		for _, l := range at.dir.list() {
			c := GitAdd{Dir: l.path, Args: texts(rest)}
			if l.unknown || at.dir.over {
				a.res.Dynamic = true
			}
			a.res.GitAdds = append(a.res.GitAdds, c)
		}
		return false // staging writes no work-tree file
	case name == "rm":
		opts, ops := parseOptions(rest, "", []string{"pathspec-from-file"}, true)
		if hasOpt(opts, "--cached") {
			return false
		}
		for _, op := range ops {
			a.writeArg(op, at, HowGitRm)
		}
		return true
	case name == "mv":
		a.copier(copierSpec{how: HowGitMv, srcWrites: true}, rest, at)
		return true
	case name == "restore":
		opts, ops := parseOptions(rest, "s", []string{"source", "pathspec-from-file", "conflict"}, true)
		if hasOpt(opts, "-S", "--staged") && !hasOpt(opts, "-W", "--worktree") {
			return false
		}
		a.detail = ""
		if hasOpt(opts, "-S", "--staged") {
			a.detail = "HEAD"
		}
		for _, o := range opts {
			if o.name == "-s" || o.name == "--source" {
				a.detail = o.val.val
				if !o.val.lit {
					a.detail = o.val.src
				}
			}
		}
		defer func() { a.detail = "" }()
		for _, op := range ops {
			a.writeArg(op, at, HowGitRestore)
		}
		return true
	case name == "checkout":
		return a.gitCheckout(rest, at)
	}
	return false
}

// gitCommit records one commit-like invocation per directory git may run in.
func (a *analyzer) gitCommit(at *walkState, sub, written string, rest []word, options []string, dynamic, alias bool) {
	if !dynamic {
		sub = written
	} else if sub == "" {
		sub = written
	}
	for _, l := range at.dir.list() {
		c := GitCommit{Dir: l.path, Args: texts(rest), Subcommand: sub, Alias: alias, Options: options,
			GitDir: a.gitDir, Dynamic: dynamic || l.unknown || at.dir.over}
		if c.Dynamic {
			a.res.Dynamic = true
		}
		a.res.GitCommits = append(a.res.GitCommits, c)
	}
}

// dynamicGit reads a command whose name DES cannot know (`$G commit`): when
// what follows looks like git's (a committing subcommand, a global option,
// or a word DES cannot read either), it is a Dynamic GitCommit.
func (a *analyzer) dynamicGit(args []word, st *walkState) {
	if len(args) < 2 {
		return
	}
	next := args[1]
	if next.lit && !gitCommitting[next.val] && !gitValueOpts[strings.SplitN(next.val, "=", 2)[0]] {
		return
	}
	before := len(a.res.GitCommits)
	a.git(args[1:], st)
	if len(a.res.GitCommits) == before {
		a.gitCommit(st, "", next.src, args[2:], nil, true, false)
	}
	for i := before; i < len(a.res.GitCommits); i++ {
		a.res.GitCommits[i].Dynamic = true
	}
}

// gitConfig remembers `git config alias.NAME VALUE` for later git
// commands of the same command.
func (a *analyzer) gitConfig(args []word) {
	_, ops := parseOptions(args, "f", []string{"file", "blob", "type", "default", "comment"}, true)
	if len(ops) < 2 || !ops[0].lit || !strings.HasPrefix(strings.ToLower(ops[0].val), "alias.") {
		return
	}
	name := ops[0].val[len("alias."):]
	if a.gitAliases == nil {
		a.gitAliases = map[string]string{}
	}
	if ops[1].lit {
		a.gitAliases[name] = ops[1].val
	} else {
		a.gitAliases[name] = "!" + ops[1].src // unknown: read as a shell script DES cannot see
		a.res.Dynamic = true
	}
}

// texts are words as GitCommit.Args gives them.
func texts(ws []word) []string {
	var out []string
	for _, r := range ws {
		if r.lit {
			out = append(out, r.val)
		} else {
			out = append(out, r.src)
		}
	}
	return out
}

// syntaxQuote quotes a word for a shell script DES builds.
func syntaxQuote(w word) string {
	if !w.lit {
		return w.src
	}
	return "'" + strings.ReplaceAll(w.val, "'", `'\''`) + "'"
}

func (a *analyzer) gitCheckout(args []word, st *walkState) bool {
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
	opts, ops := parseOptions(before, "bB", []string{"orphan", "conflict", "pathspec-from-file"}, true)
	defer func() { a.detail = "" }()
	if dd >= 0 {
		if len(ops) > 0 {
			a.detail = ops[0].val // the tree the paths come from
			if !ops[0].lit {
				a.detail = ops[0].src
			}
		}
		for _, op := range args[dd+1:] {
			a.writeArg(op, st, HowGitCheckout)
		}
		return true
	}
	if hasOpt(opts, "-b", "-B", "--orphan") || len(ops) == 0 {
		return false // a new branch: no file operands
	}
	// Without --, the first operand is a branch or a path: DES counts it
	// when it looks like a file; later operands are paths.
	if first := ops[0]; first.lit && strings.Contains(path.Base(first.val), ".") {
		a.writeArg(first, st, HowGitCheckout)
	} else {
		a.detail = first.val // a branch or tree: later operands come from it
		if !first.lit {
			a.detail = first.src
		}
	}
	for _, op := range ops[1:] {
		a.writeArg(op, st, HowGitCheckout)
	}
	return true
}
