package shell

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// location is a directory as written in the command ("" = the hook's cwd).
type location struct {
	path    string
	unknown bool // a cd DES could not resolve statically: path is a best guess
}

// walkState is the shell state DES follows: the directory, OLDPWD and the
// pushd stack. Subshells, pipeline members and child shells get a copy.
type walkState struct {
	dir    location
	old    location
	hasOld bool
	stack  []location
	lost   bool // the oldest pushd entries were forgotten (maxStack)
}

func (s *walkState) clone() *walkState {
	c := *s
	c.stack = append([]location(nil), s.stack...)
	return &c
}

func (s *walkState) setDir(p location) {
	s.old, s.hasOld = s.dir, true
	s.dir = p
}

// cd moves to the directory operand t.
func (s *walkState) cd(t word) {
	if t.lit {
		s.setDir(joinDir(s.dir, t.val, false))
	} else {
		s.setDir(joinDir(s.dir, t.src, true))
	}
}

// maxDir bounds the directory text DES follows.
const maxDir = 4096

// maxStack bounds the pushd stack DES follows (it is copied per subshell).
const maxStack = 32

// merge is the directory after two alternative branches.
func merge(a, b *walkState) *walkState {
	if a.dir != b.dir {
		a.dir.unknown = true
	}
	return a
}

func joinDir(base location, p string, unknown bool) location {
	out := p
	if !isAbs(p) && base.path != "" {
		if len(base.path)+len(p) >= maxDir {
			return location{path: base.path, unknown: true} // cd a; cd a; ... without end
		}
		out = base.path + "/" + p
	}
	if len(out) >= maxDir {
		return location{path: base.path, unknown: true}
	}
	out = path.Clean(out)
	if out == "." {
		out = ""
	}
	return location{path: out, unknown: unknown || base.unknown && !isAbs(p)}
}

// isAbs reports whether p does not depend on the cwd: /x, ~, ~user,
// $HOME, and Windows drive paths (Git Bash users write C:/...).
func isAbs(p string) bool {
	if strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") || strings.HasPrefix(p, "$HOME") || strings.HasPrefix(p, "${HOME}") {
		return true
	}
	return len(p) >= 3 && p[1] == ':' && (p[2] == '/' || p[2] == '\\') &&
		(p[0] >= 'a' && p[0] <= 'z' || p[0] >= 'A' && p[0] <= 'Z')
}

// isDevice reports the special files that are not documents.
func isDevice(p string) bool {
	switch p {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty":
		return true
	}
	return strings.HasPrefix(p, "/dev/fd/")
}

type analyzer struct {
	res   Analysis
	seen  map[Write]bool
	src   string // the script being walked, to quote words as written
	depth int    // nested scripts (bash -c, eval) being walked
	// detail is the Detail of the writes being added (chmod's mode, git
	// checkout's tree), set around the calls that add them.
	detail string
}

func (a *analyzer) source(n syntax.Node) string {
	s, e := int(n.Pos().Offset()), int(n.End().Offset())
	if s < 0 || e > len(a.src) || s > e {
		return ""
	}
	return a.src[s:e]
}

func (a *analyzer) addWrite(p string, at location, how string) {
	if p == "" || isDevice(p) {
		return
	}
	if at.unknown && !isAbs(p) {
		a.res.Dynamic = true
	}
	w := Write{Path: p, Dir: at.path, How: how, Detail: a.detail}
	if a.seen[w] {
		return
	}
	if a.seen == nil {
		a.seen = map[Write]bool{}
	}
	a.seen[w] = true
	a.res.Writes = append(a.res.Writes, w)
}

// writeArg records a write of an operand; a non-literal one is Dynamic.
func (a *analyzer) writeArg(arg word, at location, how string) {
	switch {
	case arg.proc:
	case !arg.lit:
		a.res.Dynamic = true
	default:
		a.addWrite(arg.val, at, how)
	}
}

// marker remembers what was found so far, to tell whether a command added
// anything (xargs and find -exec make such commands Dynamic).
type marker struct {
	writes, commits int
	dynamic         bool
}

func (a *analyzer) mark() marker {
	return marker{len(a.res.Writes), len(a.res.GitCommits), a.res.Dynamic}
}

func (a *analyzer) changed(m marker) bool {
	return len(a.res.Writes) != m.writes || len(a.res.GitCommits) != m.commits || a.res.Dynamic != m.dynamic
}

func (a *analyzer) stmts(list []*syntax.Stmt, st *walkState) {
	for _, s := range list {
		a.stmt(s, st)
	}
}

func (a *analyzer) stmt(s *syntax.Stmt, st *walkState) {
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

func (a *analyzer) redirect(r *syntax.Redirect, st *walkState) {
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
		v, ok := wordValue(r.Word.Parts)
		if ok && (v == "-" || strings.Trim(strings.TrimSuffix(v, "-"), "0123456789") == "") {
			return
		}
		a.redirTarget(r.Word, st)
	}
}

func (a *analyzer) redirTarget(w *syntax.Word, st *walkState) {
	if w == nil {
		return
	}
	for _, arg := range a.words([]*syntax.Word{w}) {
		a.writeArg(arg, st.dir, HowRedirect)
	}
}

// nested walks the command and process substitutions inside a node that
// holds no statements of its own (words, assignments, tests, arithmetic).
func (a *analyzer) nested(n syntax.Node, st *walkState) {
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

func (a *analyzer) command(cmd syntax.Command, s *syntax.Stmt, st *walkState) {
	switch c := cmd.(type) {
	case nil:
	case *syntax.CallExpr:
		a.nested(c, st)
		if len(c.Args) > 0 {
			a.run(a.words(c.Args), st, callInfo{stmt: s})
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
		var out *walkState
		for _, it := range c.Items {
			for _, p := range it.Patterns {
				a.nested(p, st)
			}
			branch := st.clone()
			a.stmts(it.Stmts, branch)
			if out == nil {
				out = branch
			} else {
				out = merge(out, branch)
			}
		}
		if out != nil {
			*st = *merge(out, st.clone()) // no pattern may match
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

func (a *analyzer) ifClause(c *syntax.IfClause, st *walkState) {
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
	*st = *merge(then, other)
}

func (a *analyzer) chdir(name string, args []word, st *walkState) {
	opts, ops := parseOptions(args, "", nil, false)
	switch name {
	case "cd", "chdir":
		if len(ops) == 0 {
			st.setDir(location{path: "~"})
			return
		}
		if ops[0].lit && ops[0].val == "-" {
			if st.hasOld {
				st.setDir(st.old)
			} else {
				st.setDir(location{path: st.dir.path, unknown: true})
			}
			return
		}
		st.cd(ops[0])
	case "pushd":
		if hasOpt(opts, "-n") {
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
		if len(st.stack) >= maxStack {
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
			st.setDir(location{path: st.dir.path, unknown: true})
		}
	}
}
