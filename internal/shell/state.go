package shell

import (
	"path"
	"strings"
)

// location is one directory as written in the command ("" = the hook's cwd).
type location struct {
	path    string
	unknown bool // a cd DES could not resolve statically: path is a best guess
}

// maxDirs bounds how many directories DES follows at once; past it the
// set is marked over and every relative write there is Dynamic.
const maxDirs = 8

// dirSet is the directories a command may run in at one point: a cd that may
// fail leaves the old directory possible beside the new one. The zero value
// is the hook's cwd. A dirSet is never modified once built.
type dirSet struct {
	locs []location
	over bool // more directories were possible than DES keeps
}

func (d dirSet) list() []location {
	if len(d.locs) == 0 {
		return []location{{}}
	}
	return d.locs
}

// single is the set of one directory.
func single(l location) dirSet {
	if l == (location{}) {
		return dirSet{}
	}
	return dirSet{locs: []location{l}}
}

// build collects distinct directories into a new set, boundedly.
type dirBuilder struct{ d dirSet }

func (b *dirBuilder) add(l location) {
	for _, x := range b.d.locs {
		if x == l {
			return
		}
	}
	if len(b.d.locs) >= maxDirs {
		b.d.over = true
		return
	}
	b.d.locs = append(b.d.locs, l)
}

func (b *dirBuilder) set() dirSet {
	if len(b.d.locs) == 1 && b.d.locs[0] == (location{}) && !b.d.over {
		return dirSet{}
	}
	return b.d
}

func union(x, y dirSet) dirSet {
	b := dirBuilder{d: dirSet{over: x.over || y.over}}
	for _, l := range x.list() {
		b.add(l)
	}
	for _, l := range y.list() {
		b.add(l)
	}
	return b.set()
}

func (d dirSet) equal(o dirSet) bool {
	if d.over != o.over || len(d.list()) != len(o.list()) {
		return false
	}
	for _, l := range d.list() {
		if !o.has(l) {
			return false
		}
	}
	return true
}

func (d dirSet) has(l location) bool {
	for _, x := range d.list() {
		if x == l {
			return true
		}
	}
	return false
}

// join is every directory of d joined with p (cd p from each).
func (d dirSet) join(p string, unknown bool) dirSet {
	b := dirBuilder{d: dirSet{over: d.over}}
	for _, l := range d.list() {
		b.add(joinDir(l, p, unknown))
	}
	return b.set()
}

// unknown reports whether a relative path written in d is not known.
func (d dirSet) unknown() bool {
	if d.over {
		return true
	}
	for _, l := range d.locs {
		if l.unknown {
			return true
		}
	}
	return false
}

// markUnknown marks the directories of d that are not in before, and are
// relative (a loop may apply their cd again), as unknown.
func (d dirSet) markUnknown(before dirSet) dirSet {
	b := dirBuilder{d: dirSet{over: d.over}}
	for _, l := range d.list() {
		if !before.has(l) && !isAbs(l.path) {
			l.unknown = true
		}
		b.add(l)
	}
	return b.set()
}

// maxDir bounds the directory text DES follows.
const maxDir = 4096

// maxStack bounds the pushd stack DES follows.
const maxStack = 32

// maxVars bounds the variables DES follows.
const maxVars = 64

// maxLinks bounds the links made in the command that DES follows.
const maxLinks = 32

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

// binding is a shell variable assigned in the command.
type binding struct {
	name  string
	val   string
	known bool // assigned a literal value; else its value is unknown
}

// link is a link the command made: writing path (or beneath it, for a
// directory symlink) writes target. Both are cleaned paths joined with the
// directory they were written in ("" = the hook's cwd).
type link struct {
	path, target string
	hard         bool
}

// walkState is the shell state DES follows: the directories, OLDPWD, the
// pushd stack, set -e, variables and links. A walkState is never modified
// once made: every change makes a new one, so subshells, pipeline members
// and alternative branches share it freely. nil stands for a point the
// command cannot reach on that path (after exit, or a branch that cannot
// run).
type walkState struct {
	dir     dirSet
	old     dirSet // OLDPWD
	stack   []dirSet
	lost    bool // the oldest pushd entries were forgotten (maxStack)
	errexit bool // set -e: a failing command ends the shell
	vars    []binding
	forgot  bool // assignments were forgotten (maxVars): the environment no longer tells
	links   []link
}

func (s *walkState) copy() *walkState {
	c := *s
	return &c
}

func (s *walkState) withDir(d dirSet) *walkState {
	c := s.copy()
	c.old = s.dir
	c.dir = d
	return c
}

// maxDirWork bounds the directory text DES builds for one command (each
// cd joins every possible directory): past it every directory is unknown,
// so that a long run of cds stays linear.
const maxDirWork = 1 << 20

// cd is the state after a successful cd to the operand t.
func (a *analyzer) cd(s *walkState, t word) *walkState {
	p, unknown := t.val, !t.lit
	if unknown {
		p = t.src
	}
	for _, l := range s.dir.list() {
		a.dirWork += len(l.path) + len(p)
	}
	if a.dirWork > maxDirWork {
		d := markAll(s.dir)
		d.over = true
		return s.withDir(d)
	}
	return s.withDir(s.dir.join(p, unknown))
}

// lookup is the variable name as assigned in the command.
func (s *walkState) lookup(name string) (binding, bool) {
	for i := len(s.vars) - 1; i >= 0; i-- {
		if s.vars[i].name == name {
			return s.vars[i], true
		}
	}
	return binding{}, false
}

// assign is the state after name=val (known) or an assignment DES cannot read.
func (s *walkState) assign(name, val string, known bool) *walkState {
	c := s.copy()
	c.vars = make([]binding, 0, len(s.vars)+1)
	for _, b := range s.vars {
		if b.name != name {
			c.vars = append(c.vars, b)
		}
	}
	if len(c.vars) >= maxVars {
		c.vars = c.vars[1:] // forgotten: read as the environment's, unknown
		c.forgot = true
	}
	c.vars = append(c.vars, binding{name: name, val: val, known: known})
	return c
}

// addLink is the state after the command made a link.
func (s *walkState) addLink(l link) *walkState {
	c := s.copy()
	c.links = append(append(make([]link, 0, len(s.links)+1), s.links...), l)
	if len(c.links) > maxLinks {
		c.links = c.links[1:]
	}
	return c
}

// merge is the state where two paths of the command meet: every directory
// of either is possible.
func merge(a, b *walkState) *walkState {
	switch {
	case a == nil:
		return b
	case b == nil || a == b:
		return a
	}
	c := a.copy()
	c.dir = union(a.dir, b.dir)
	c.old = union(a.old, b.old)
	switch {
	case sameStack(a.stack, b.stack):
	case len(a.stack) == len(b.stack):
		c.stack = make([]dirSet, len(a.stack))
		for i := range a.stack {
			c.stack[i] = union(a.stack[i], b.stack[i])
		}
	default:
		c.lost = true
		if len(b.stack) < len(c.stack) {
			c.stack = b.stack
		}
	}
	c.lost = c.lost || b.lost
	c.errexit = a.errexit && b.errexit
	if !sameVars(a.vars, b.vars) {
		c.vars = mergeVars(a.vars, b.vars)
	}
	if !sameLinks(a.links, b.links) {
		c.links = mergeLinks(a.links, b.links)
	}
	return c
}

// The same* functions tell slices that are one (the usual case: both
// paths come from one state), so that merging them costs nothing.
func sameStack(a, b []dirSet) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func sameVars(a, b []binding) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func sameLinks(a, b []link) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// mergeVars keeps a variable known where both paths agree on it.
func mergeVars(av, bv []binding) []binding {
	a, b := &walkState{vars: av}, &walkState{vars: bv}
	var out []binding
	for _, v := range a.vars {
		if w, ok := b.lookup(v.name); ok && w == v {
			out = append(out, v)
		} else {
			out = append(out, binding{name: v.name}) // differs: unknown
		}
	}
	for _, w := range b.vars {
		if _, ok := a.lookup(w.name); !ok {
			out = append(out, binding{name: w.name})
		}
	}
	if len(out) > maxVars {
		out = out[len(out)-maxVars:]
	}
	return out
}

// mergeLinks keeps the links made on either path.
func mergeLinks(a, b []link) []link {
	out := append([]link(nil), a...)
	for _, l := range b {
		if !hasLink(out, l) {
			out = append(out, l)
		}
	}
	if len(out) > maxLinks {
		out = out[len(out)-maxLinks:]
	}
	return out
}

func hasLink(ls []link, l link) bool {
	for _, x := range ls {
		if x == l {
			return true
		}
	}
	return false
}

// flow is where a statement leaves the shell: ok after it succeeds, fail
// after a failure that ends the shell under set -e, soft after a failure
// that does not (a condition, a command before && or ||). nil: that
// outcome cannot happen.
type flow struct {
	ok, fail, soft *walkState
}

// plain is the flow of a command that may succeed or fail and changes no state.
func plain(st *walkState) flow { return flow{ok: st, fail: st} }

// after is the state the next statement of a list starts in.
func (f flow) after() *walkState {
	s := merge(f.ok, f.soft)
	if f.fail != nil && !f.fail.errexit {
		s = merge(s, f.fail)
	}
	return s
}

// any is every state the statement may end in.
func (f flow) any() *walkState {
	return merge(merge(f.ok, f.soft), f.fail)
}
