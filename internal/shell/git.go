package shell

import (
	"path"
	"strings"
)

// git records commits and the git subcommands that rewrite work-tree files.
func (a *analyzer) git(args []word, st *walkState) bool {
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
					at = joinDir(at, d.val, false)
				} else {
					at = joinDir(at, d.src, true)
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
		opts, ops := parseOptions(rest, "", []string{"pathspec-from-file"}, true)
		if hasOpt(opts, "--cached") {
			return false
		}
		for _, op := range ops {
			a.writeArg(op, at, HowGitRm)
		}
		return true
	case "mv":
		a.copier(copierSpec{how: HowGitMv, srcWrites: true}, rest, at)
		return true
	case "restore":
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
	case "checkout":
		return a.gitCheckout(rest, at)
	}
	return false
}

func (a *analyzer) gitCheckout(args []word, at location) bool {
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
			a.writeArg(op, at, HowGitCheckout)
		}
		return true
	}
	if hasOpt(opts, "-b", "-B", "--orphan") || len(ops) == 0 {
		return false // a new branch: no file operands
	}
	// Without --, the first operand is a branch or a path: DES counts it
	// when it looks like a file; later operands are paths.
	if first := ops[0]; first.lit && strings.Contains(path.Base(first.val), ".") {
		a.writeArg(first, at, HowGitCheckout)
	} else {
		a.detail = first.val // a branch or tree: later operands come from it
		if !first.lit {
			a.detail = first.src
		}
	}
	for _, op := range ops[1:] {
		a.writeArg(op, at, HowGitCheckout)
	}
	return true
}
