package shell

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

type analyzer struct {
	res        Analysis
	cfg        config
	seen       map[Write]bool
	src        string            // the script being walked, to quote words as written
	depth      int               // nested scripts (bash -c, eval) being walked
	loops      int               // loop bodies being walked twice
	dirWork    int               // directory text built (maxDirWork)
	funcs      map[string]bool   // functions the command declares
	gitAliases map[string]string // git config alias.NAME VALUE run earlier in the command
	// gitDir is GIT_DIR as the command being run sets it in its
	// environment (a prefix assignment, env NAME=VALUE), as written; ""
	// when it does not. Its git commits carry it (GitCommit.GitDir).
	gitDir string
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

// stmts walks a list; its flow is that of its last statement. A statement
// the list cannot reach (after exit) is still read, where the list stood
// before: DES reports what it may write rather than trust that it is dead.
func (a *analyzer) stmts(list []*syntax.Stmt, st *walkState) flow {
	f := flow{ok: st}
	cur, last := st, st
	for _, s := range list {
		if cur == nil {
			a.stmt(s, last)
			continue
		}
		f = a.stmt(s, cur)
		last, cur = cur, f.after()
	}
	if cur == nil {
		return flow{}
	}
	return f
}

// plainStmt reports a statement that is only its command.
func plainStmt(s *syntax.Stmt) bool {
	return s != nil && !s.Negated && !s.Background && !s.Coprocess && len(s.Redirs) == 0
}

func (a *analyzer) stmt(s *syntax.Stmt, st *walkState) flow {
	if s == nil {
		return flow{ok: st}
	}
	// Redirections are opened before the command runs, so before its cd.
	for _, r := range s.Redirs {
		a.redirect(r, st)
	}
	if _, ok := s.Cmd.(*syntax.CoprocClause); ok || s.Background || s.Coprocess {
		a.res.Detaches = true
	}
	f := a.command(s.Cmd, s, st)
	if s.Background || s.Coprocess {
		return flow{ok: st} // a subshell: its cd does not stay; status 0
	}
	if s.Negated {
		f = flow{ok: merge(f.fail, f.soft), soft: f.ok} // ! never ends the shell
	}
	return f
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
		if v, ok := plainValue(r.Word.Parts); ok && (v == "-" || strings.Trim(strings.TrimSuffix(v, "-"), "0123456789") == "") {
			return
		}
		a.redirTarget(r.Word, st)
	}
}

func (a *analyzer) redirTarget(w *syntax.Word, st *walkState) {
	if w == nil {
		return
	}
	for _, arg := range a.words([]*syntax.Word{w}, st) {
		a.writeArg(arg, st, HowRedirect)
	}
}

// maxWalkDepth bounds how deep DES looks into one word, test or
// arithmetic expression for substitutions; past it the command is Dynamic.
const maxWalkDepth = 1000

// nested walks the command and process substitutions inside a node that
// holds no statements of its own (words, assignments, tests, arithmetic).
func (a *analyzer) nested(n syntax.Node, st *walkState) {
	a.nestedDepth(n, st, 0)
}

func (a *analyzer) nestedDepth(n syntax.Node, st *walkState, depth int) {
	syntax.Walk(n, func(c syntax.Node) bool {
		if c == n {
			return true
		}
		if c == nil {
			return false // Walk's call after a node's children
		}
		switch c := c.(type) {
		case *syntax.CmdSubst:
			a.stmts(c.Stmts, st)
			return false
		case *syntax.ProcSubst:
			a.stmts(c.Stmts, st)
			return false
		case *syntax.Lit, *syntax.SglQuoted:
			return false
		}
		if depth >= maxWalkDepth {
			a.res.Dynamic = true
			return false
		}
		a.nestedDepth(c, st, depth+1)
		return false
	})
}

func (a *analyzer) command(cmd syntax.Command, s *syntax.Stmt, st *walkState) flow {
	switch c := cmd.(type) {
	case nil:
		return flow{ok: st}
	case *syntax.CallExpr:
		a.nested(c, st)
		if len(c.Args) == 0 {
			return flow{ok: a.assigns(c.Assigns, st)}
		}
		defer a.setGitDir(a.gitDir)
		for _, as := range c.Assigns {
			if as.Name != nil && as.Name.Value == gitDirVar && as.Value != nil {
				a.gitDir = texts(a.words([]*syntax.Word{as.Value}, st))[0]
			}
		}
		return a.run(a.words(c.Args, st), st, callInfo{stmt: s})
	case *syntax.BinaryCmd:
		if c.Op == syntax.Pipe || c.Op == syntax.PipeAll {
			a.pipeline(c, st)
			return plain(st)
		}
		return a.andOr(c, st)
	case *syntax.Subshell:
		f := a.stmts(c.Stmts, st)
		if f.ok == nil && f.fail == nil && f.soft == nil {
			return plain(st) // exit N: its status is not followed
		}
		return flow{ok: keep(f.ok, st), fail: keep(merge(f.fail, f.soft), st)}
	case *syntax.Block:
		return a.stmts(c.Stmts, st)
	case *syntax.IfClause:
		return a.ifClause(c, st)
	case *syntax.WhileClause:
		return a.loop(st, func(in *walkState) flow {
			fc := a.stmts(c.Cond, in)
			cont, exit := fc.ok, merge(fc.fail, fc.soft)
			if c.Until {
				cont, exit = exit, cont
			}
			body := a.branch(c.Do, cont, in)
			return flow{ok: merge(exit, body.after())}
		})
	case *syntax.ForClause:
		a.nested(c.Loop, st)
		in := st
		if wi, ok := c.Loop.(*syntax.WordIter); ok && wi.Name != nil {
			in = st.assign(wi.Name.Value, "", false)
		}
		return a.loop(in, func(in *walkState) flow {
			return flow{ok: merge(in, a.stmts(c.Do, in).after())}
		})
	case *syntax.CaseClause:
		a.nested(c.Word, st)
		out := flow{ok: st} // no pattern may match
		for _, it := range c.Items {
			for _, p := range it.Patterns {
				a.nested(p, st)
			}
			f := a.stmts(it.Stmts, st)
			out = flow{ok: merge(out.ok, f.ok), fail: merge(out.fail, f.fail), soft: merge(out.soft, f.soft)}
		}
		return out
	case *syntax.FuncDecl:
		// The body may run wherever the function is called; DES reads it
		// once, where it is declared.
		if a.funcs == nil {
			a.funcs = map[string]bool{}
		}
		if c.Name != nil {
			a.funcs[c.Name.Value] = true
		}
		a.stmt(c.Body, st)
		return flow{ok: st}
	case *syntax.TimeClause:
		return a.stmt(c.Stmt, st)
	case *syntax.CoprocClause:
		a.stmt(c.Stmt, st)
		return flow{ok: st}
	case *syntax.TestDecl:
		a.stmt(c.Body, st)
		return flow{ok: st}
	case *syntax.DeclClause:
		a.nested(c, st)
		if c.Variant != nil && c.Variant.Value == "nameref" {
			return plain(st)
		}
		return flow{ok: a.assigns(c.Args, st)}
	default:
		// ArithmCmd, TestClause, LetClause: only substitutions inside them
		// can write.
		a.nested(c, st)
		return plain(st)
	}
}

// keep is st where f may be reached, else nil.
func keep(f, st *walkState) *walkState {
	if f == nil {
		return nil
	}
	return st
}

// branch walks a list that runs in st; when st is nil (it cannot run) it
// is still read, in fallback, and its flow is empty.
func (a *analyzer) branch(list []*syntax.Stmt, st, fallback *walkState) flow {
	if st == nil {
		a.stmts(list, fallback)
		return flow{}
	}
	return a.stmts(list, st)
}

// maxLoopRewalk bounds the loops nested inside each other whose body DES
// reads a second time.
const maxLoopRewalk = 3

// loop walks a loop once; when its body changes the directory it walks it
// again from every directory the first pass may end in (a write before the
// cd runs there on the next turn), and marks the directories a further turn
// could change as unknown.
func (a *analyzer) loop(st *walkState, once func(*walkState) flow) flow {
	f := once(st)
	out := merge(st, f.ok)
	if out.dir.equal(st.dir) {
		return flow{ok: out}
	}
	if a.loops >= maxLoopRewalk {
		a.res.Dynamic = true
	} else {
		a.loops++
		f2 := once(out)
		a.loops--
		out = merge(out, f2.ok)
	}
	c := out.copy()
	c.dir = out.dir.markUnknown(st.dir)
	return flow{ok: c}
}

// andOr walks a && and || list without recursion: the parser nests them
// to the left, one level per operator.
func (a *analyzer) andOr(c *syntax.BinaryCmd, st *walkState) flow {
	chain := []*syntax.BinaryCmd{c}
	for {
		x := chain[len(chain)-1].X
		inner, ok := x.Cmd.(*syntax.BinaryCmd)
		if !ok || !plainStmt(x) || (inner.Op != syntax.AndStmt && inner.Op != syntax.OrStmt) {
			break
		}
		chain = append(chain, inner)
	}
	f := a.stmt(chain[len(chain)-1].X, st)
	for i := len(chain) - 1; i >= 0; i-- {
		b := chain[i]
		if b.Op == syntax.AndStmt {
			var fy flow
			if f.ok == nil {
				a.stmt(b.Y, st) // cannot run; still read
			} else {
				fy = a.stmt(b.Y, f.ok)
			}
			f = flow{ok: fy.ok, fail: fy.fail, soft: merge(merge(f.fail, f.soft), fy.soft)}
		} else {
			var fy flow
			if in := merge(f.fail, f.soft); in == nil {
				a.stmt(b.Y, st)
			} else {
				fy = a.stmt(b.Y, in)
			}
			f = flow{ok: merge(f.ok, fy.ok), fail: fy.fail, soft: fy.soft}
		}
	}
	return f
}

// pipeline walks every member of a pipeline, each in a subshell, without
// recursion.
func (a *analyzer) pipeline(c *syntax.BinaryCmd, st *walkState) {
	todo := []*syntax.Stmt{c.Y, c.X}
	for len(todo) > 0 {
		s := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if b, ok := s.Cmd.(*syntax.BinaryCmd); ok && plainStmt(s) && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) {
			todo = append(todo, b.Y, b.X)
			continue
		}
		a.stmt(s, st)
	}
}

func (a *analyzer) ifClause(c *syntax.IfClause, st *walkState) flow {
	if len(c.Cond) == 0 && !c.ThenPos.IsValid() {
		return a.stmts(c.Then, st) // a plain else
	}
	fc := a.stmts(c.Cond, st)
	ft := a.branch(c.Then, fc.ok, st)
	other := merge(fc.fail, fc.soft)
	var fe flow
	switch {
	case c.Else == nil:
		fe = flow{ok: other}
	case other == nil:
		a.ifClause(c.Else, st)
	default:
		fe = a.ifClause(c.Else, other)
	}
	return flow{ok: merge(ft.ok, fe.ok), fail: merge(ft.fail, fe.fail), soft: merge(ft.soft, fe.soft)}
}

// assigns is the state after NAME=VALUE assignments (alone on a line, or
// with export, declare, local, readonly, typeset).
func (a *analyzer) assigns(as []*syntax.Assign, st *walkState) *walkState {
	for _, as := range as {
		if as.Name == nil || as.Naked || as.Index != nil {
			continue
		}
		if as.Array != nil {
			st = st.assign(as.Name.Value, "", false)
			continue
		}
		if as.Value == nil {
			st = st.assign(as.Name.Value, "", !as.Append)
			continue
		}
		ws := a.words([]*syntax.Word{as.Value}, st)
		if as.Append || len(ws) != 1 || !ws[0].lit {
			st = st.assign(as.Name.Value, "", false)
			continue
		}
		st = st.assign(as.Name.Value, ws[0].val, true)
	}
	return st
}

// chdir is the state after a successful cd, pushd or popd.
func (a *analyzer) chdir(name string, args []word, st *walkState) *walkState {
	opts, ops := parseOptions(args, "", nil, false)
	switch name {
	case "cd", "chdir":
		if len(ops) == 0 {
			return st.withDir(single(a.home()))
		}
		if ops[0].lit && ops[0].val == "-" {
			return st.withDir(st.old)
		}
		return a.cd(st, ops[0])
	case "pushd":
		if hasOpt(opts, "-n") {
			return st // only the stack changes
		}
		if len(opts) > 0 && len(ops) == 0 {
			return st.withDir(markAll(st.dir)) // pushd -N / +N rotates the stack
		}
		if len(ops) == 0 {
			n := len(st.stack)
			if n == 0 {
				return st
			}
			c := st.withDir(st.stack[n-1])
			c.stack = append(append([]dirSet(nil), st.stack[:n-1]...), st.dir)
			return c
		}
		if ops[0].lit && strings.HasPrefix(ops[0].val, "+") {
			return st.withDir(markAll(st.dir))
		}
		c := a.cd(st, ops[0])
		c.stack = append(append([]dirSet(nil), st.stack...), st.dir)
		if len(c.stack) > maxStack {
			c.stack = c.stack[1:] // forget the oldest: popd that far is unknown
			c.lost = true
		}
		return c
	case "popd":
		if len(opts) > 0 || len(ops) > 0 {
			return st // popd -n / +N drop entries without moving
		}
		if n := len(st.stack); n > 0 {
			c := st.withDir(st.stack[n-1])
			c.stack = st.stack[: n-1 : n-1]
			return c
		}
		if st.lost {
			return st.withDir(markAll(st.dir))
		}
	}
	return st
}

// markAll is d with every directory unknown.
func markAll(d dirSet) dirSet {
	b := dirBuilder{d: dirSet{over: d.over}}
	for _, l := range d.list() {
		l.unknown = true
		b.add(l)
	}
	return b.set()
}

// record adds a write once.
func (a *analyzer) record(w Write) {
	if w.Dynamic {
		a.res.Dynamic = true
	}
	if a.seen[w] {
		return
	}
	if a.seen == nil {
		a.seen = map[Write]bool{}
	}
	a.seen[w] = true
	a.res.Writes = append(a.res.Writes, w)
}

// addWrite records a write of the literal path p from every directory st
// may be in, and through every link the command made before.
func (a *analyzer) addWrite(p string, st *walkState, how string) {
	a.put(p, st, how, false, false)
}

func (a *analyzer) put(p string, st *walkState, how string, glob, dyn bool) {
	if p == "" || isDevice(p) {
		return
	}
	if dyn {
		a.res.Dynamic = true
	}
	for _, l := range st.dir.list() {
		abs := isAbs(p)
		a.record(Write{Path: p, Dir: l.path, How: how, Glob: glob, Dynamic: dyn || !abs && (l.unknown || st.dir.over), Detail: a.detail})
		if !glob && !dyn && (abs || !l.unknown) {
			full := joinPath(l.path, p)
			for _, lk := range st.links {
				if full == lk.path || strings.HasPrefix(full, lk.path+"/") {
					a.record(Write{Path: lk.target + full[len(lk.path):], How: how, Detail: a.detail})
				}
			}
		}
		if abs {
			break // the same file from every directory
		}
	}
}

// joinPath is p as seen from the hook's cwd when written in dir.
func joinPath(dir, p string) string {
	if isAbs(p) || dir == "" {
		return path.Clean(p)
	}
	return path.Clean(dir + "/" + p)
}

// writeArg records a write of an operand: a literal path, a pattern, or
// one DES cannot resolve (Dynamic, its literal parts kept).
func (a *analyzer) writeArg(arg word, st *walkState, how string) {
	switch {
	case arg.proc:
	case arg.glob:
		a.put(arg.val, st, how, true, false)
	case !arg.lit:
		a.res.Dynamic = true
		a.put(strings.ReplaceAll(arg.src, unknownVar, "$(...)"), st, how, false, true)
	default:
		a.addWrite(arg.val, st, how)
	}
}

// start is the state a command starts in.
func (a *analyzer) start() *walkState {
	old := location{path: a.cfg.oldpwd}
	if old.path == "" {
		old = location{path: "$OLDPWD", unknown: true}
	}
	return &walkState{old: single(old)}
}

// gitDirVar is the environment variable that names git's repository.
const gitDirVar = "GIT_DIR"

func (a *analyzer) setGitDir(v string) { a.gitDir = v }
