package shell

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// callInfo is how a command is started.
type callInfo struct {
	stmt  *syntax.Stmt // its statement, for a here-document on stdin; nil in the fallback scan
	xargs bool         // it gets arguments DES cannot see (xargs, find -exec)
}

// wrapperSpec describes a command that runs another command.
type wrapperSpec struct {
	sub      string   // required subcommand ("run" for uv run)
	shortArg string   // short options taking a value
	longArg  []string // long options taking a value
	chdir    []string // options whose value is the directory the command runs in
	noRun    string   // short options meaning the command is not run (command -v)
	skip     int      // operands before the command (timeout's DURATION)
	assigns  bool     // NAME=VALUE operands before the command (env)
}

var wrapperSpecs = map[string]wrapperSpec{
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

// inShell are the wrappers that run a builtin in the current shell, so
// that cd, set and exit through them still act.
var inShell = map[string]bool{"command": true, "builtin": true, "time": true}

// run analyses one simple command given as words and says where it leaves
// the shell.
func (a *analyzer) run(args []word, st *walkState, call callInfo) flow {
	defer a.setGitDir(a.gitDir) // env GIT_DIR=x sets it for this command only
	out := plain(st)
	same := true // still in the current shell
	for len(args) > 0 {
		first := args[0]
		if first.proc {
			return out
		}
		if !first.lit {
			a.res.Dynamic = true // the command itself is computed: anything may run
			a.dynamicGit(args, st)
			return out
		}
		name := baseName(first.val)
		if detachers[name] && !a.funcs[name] {
			a.res.Detaches = true
		}
		w, ok := wrapperSpecs[name]
		if !ok || a.funcs[name] {
			break
		}
		rest, at, ok := a.unwrap(name, w, args, st)
		if !ok {
			return out
		}
		if name == "xargs" {
			call.xargs = true
		}
		same = same && inShell[name]
		args, st = rest, at
	}
	if len(args) == 0 {
		return out
	}
	a.addRun(args)
	name := baseName(args[0].val)
	if a.funcs[name] {
		// A function the command declared: its body was read where it
		// was declared, but where it leaves the shell is not followed.
		c := st.copy()
		c.dir = markAll(st.dir)
		return plain(c)
	}
	if same && !call.xargs {
		switch name {
		case "cd", "chdir", "pushd", "popd":
			return flow{ok: a.chdir(name, args[1:], st), fail: st}
		case "exit", "return", "logout":
			return flow{}
		case "true", ":":
			return flow{ok: st}
		case "false":
			return flow{fail: st}
		case "set":
			return flow{ok: setOptions(args[1:], st)}
		case "eval":
			return a.eval(args[1:], st)
		case "unset", "read", "mapfile", "readarray", "getopts", "printf":
			return plain(a.unknownVars(name, args[1:], st))
		}
	}
	m := a.mark()
	writer := a.simple(name, args, st, call)
	if call.xargs && (writer || a.changed(m)) {
		a.res.Dynamic = true // it also writes operands xargs/find supply
	}
	if (name == "ln" || name == "link") && !call.xargs {
		if linked := a.linked(name, args[1:], st); linked != st {
			return flow{ok: linked, fail: st}
		}
	}
	return out
}

// detachers are the commands that start something which outlives them
// (Analysis.Detaches).
var detachers = map[string]bool{
	"nohup": true, "setsid": true, "disown": true, "daemonize": true, "start-stop-daemon": true,
	"systemd-run": true, "crontab": true, "screen": true, "tmux": true, "at": true, "batch": true,
}

// MaxRuns bounds Analysis.Runs.
const MaxRuns = 256

// maxRunWords bounds the words kept of one run.
const maxRunWords = 64

// addRun adds one simple command to Runs.
func (a *analyzer) addRun(args []word) {
	if len(a.res.Runs) >= MaxRuns {
		return
	}
	run := make([]string, 0, min(len(args), maxRunWords))
	for _, w := range args[:min(len(args), maxRunWords)] {
		if w.lit {
			run = append(run, w.val)
		} else {
			run = append(run, w.src)
		}
	}
	for _, r := range a.res.Runs {
		if slices.Equal(r, run) {
			return
		}
	}
	a.res.Runs = append(a.res.Runs, run)
}

// linked is the state after ln or link made a link DES can follow (two
// literal operands): later writes to it are writes to its target.
func (a *analyzer) linked(name string, args []word, st *walkState) *walkState {
	c := copiers["ln"]
	opts, ops := parseOptions(args, c.shortArg, c.longArg, true)
	if len(ops) != 2 || !ops[0].lit || !ops[1].lit || hasOpt(opts, "-t", "--target-directory") {
		return st
	}
	symbolic := name == "ln" && hasOpt(opts, "-s", "--symbolic")
	out := st
	for _, l := range st.dir.list() {
		if l.unknown {
			continue
		}
		lp := joinPath(l.path, ops[1].val)
		target := joinPath(l.path, ops[0].val)
		if symbolic && !isAbs(ops[0].val) {
			target = joinPath(path.Dir(lp), ops[0].val)
		}
		out = out.addLink(link{path: lp, target: target, hard: !symbolic})
	}
	return out
}

// setOptions is the state after set: only errexit matters to DES.
func setOptions(args []word, st *walkState) *walkState {
	on := st.errexit
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if !arg.lit || len(arg.val) < 2 || (arg.val[0] != '-' && arg.val[0] != '+') || arg.val == "--" {
			break
		}
		v, val := arg.val, arg.val[0] == '-'
		if v[1:] == "o" && i+1 < len(args) {
			i++
			if args[i].lit && args[i].val == "errexit" {
				on = val
			}
			continue
		}
		if strings.ContainsRune(v[1:], 'e') {
			on = val
		}
	}
	if on == st.errexit {
		return st
	}
	c := st.copy()
	c.errexit = on
	return c
}

// unknownVars is the state after a builtin that assigns variables DES
// does not read (read NAME, unset NAME, printf -v NAME, ...).
func (a *analyzer) unknownVars(name string, args []word, st *walkState) *walkState {
	for i, arg := range args {
		if !arg.lit {
			continue
		}
		v := arg.val
		if name == "printf" {
			if v == "-v" && i+1 < len(args) && args[i+1].lit {
				st = st.assign(args[i+1].val, "", false)
			}
			continue
		}
		if syntax.ValidName(v) {
			st = st.assign(v, "", false)
		}
	}
	return st
}

// unwrap strips a wrapper and its options; false when no command runs.
func (a *analyzer) unwrap(name string, w wrapperSpec, args []word, st *walkState) ([]word, *walkState, bool) {
	args = args[1:]
	if w.sub != "" {
		if len(args) == 0 || !args[0].lit || args[0].val != w.sub {
			return nil, nil, false
		}
		args = args[1:]
	}
	opts, rest := parseOptions(args, w.shortArg, w.longArg, false)
	at := st
	replace := "" // xargs -I: the words holding it name files DES cannot see
	for _, o := range opts {
		if len(o.name) == 2 && strings.IndexByte(w.noRun, o.name[1]) >= 0 {
			return nil, nil, false
		}
		for _, c := range w.chdir {
			if o.name == c {
				at = a.cd(at, o.val)
			}
		}
		if name == "time" && (o.name == "-o" || o.name == "--output") {
			a.writeArg(o.val, st, HowTimeOut)
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
			var split []word
			for _, f := range strings.Fields(o.val.val) {
				split = append(split, litArg(f))
			}
			rest = append(split, rest...)
		}
	}
	if w.assigns {
		for len(rest) > 0 && rest[0].lit && isAssign(rest[0].val) {
			if name, val, _ := strings.Cut(rest[0].val, "="); name == gitDirVar {
				a.gitDir = val // restored with the command (command)
			}
			rest = rest[1:]
		}
	}
	if w.skip > 0 {
		if len(rest) < w.skip {
			return nil, nil, false
		}
		rest = rest[w.skip:]
	}
	return placeholders(rest, replace), at, len(rest) > 0
}

func isAssign(v string) bool {
	i := strings.IndexByte(v, '=')
	return i > 0 && syntax.ValidName(v[:i])
}

// baseName is the command name without its directory (and a Windows .exe).
func baseName(v string) string {
	if i := strings.LastIndexAny(v, `/\`); i >= 0 {
		v = v[i+1:]
	}
	return strings.TrimSuffix(v, ".exe")
}

// opt is one parsed option.
type opt struct {
	name string // "-t" or "--target-directory" (the full spelling when an abbreviation matched)
	val  word   // its value when it takes one
}

// parseOptions parses GNU-style options. shortArg lists short options taking
// a value (attached or next word), longArg long ones (--x=v or --x v, unique
// abbreviations accepted). With permute, options may follow operands (GNU
// tools) and the operands are returned; without, parsing stops at the first
// operand (wrappers) and the rest is returned. "--" ends the options.
func parseOptions(args []word, shortArg string, longArg []string, permute bool) (opts []opt, operands []word) {
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
				opts = append(opts, opt{name: name, val: word{src: arg.src}})
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
			full := longMatch(name, longArg)
			switch {
			case hasVal:
				if full == "" {
					full = name
				}
				opts = append(opts, opt{name: "--" + full, val: litArg(val)})
			case full != "" && i+1 < len(args):
				opts = append(opts, opt{name: "--" + full, val: args[i+1]})
				i++
			default:
				opts = append(opts, opt{name: "--" + name})
			}
		default:
			for j := 1; j < len(v); j++ {
				c := v[j]
				if strings.IndexByte(shortArg, c) < 0 {
					opts = append(opts, opt{name: "-" + string(c)})
					continue
				}
				o := opt{name: "-" + string(c)}
				if j+1 < len(v) {
					o.val = litArg(v[j+1:])
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

// longMatch resolves a long option name or unique-enough abbreviation.
func longMatch(name string, longArg []string) string {
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

func hasOpt(opts []opt, names ...string) bool {
	for _, o := range opts {
		for _, n := range names {
			if o.name == n {
				return true
			}
		}
	}
	return false
}

// simpleWriter is a command whose every operand is written.
type simpleWriter struct {
	how      string
	shortArg string
	longArg  []string
}

var simpleWriters = map[string]simpleWriter{
	"tee":      {how: HowTee},
	"rm":       {how: HowRm},
	"unlink":   {how: HowUnlink},
	"shred":    {how: HowShred, shortArg: "ns", longArg: []string{"iterations", "size", "random-source"}},
	"sponge":   {how: HowSponge},
	"truncate": {how: HowTruncate, shortArg: "sr", longArg: []string{"size", "reference"}},
	"touch":    {how: HowTouch, shortArg: "drt", longArg: []string{"date", "reference", "time"}},
}

// copierSpec is a cp-like command: sources, then a destination.
type copierSpec struct {
	how       string
	shortArg  string
	longArg   []string
	srcWrites bool // the sources go away (mv)
	single    bool // one operand makes ./basename (ln)
}

var copiers = map[string]copierSpec{
	"cp":      {how: HowCp, shortArg: "tS", longArg: []string{"target-directory", "suffix"}},
	"mv":      {how: HowMv, shortArg: "tS", longArg: []string{"target-directory", "suffix"}, srcWrites: true},
	"install": {how: HowInstall, shortArg: "tSmog", longArg: []string{"target-directory", "suffix", "mode", "owner", "group", "strip-program"}},
	"ln":      {how: HowLn, shortArg: "tS", longArg: []string{"target-directory", "suffix"}, single: true},
	"link":    {how: HowLn},
}

// simple analyses a command that is not a wrapper; it reports whether the
// command is one that writes files.
func (a *analyzer) simple(name string, args []word, st *walkState, call callInfo) bool {
	if w, ok := simpleWriters[name]; ok {
		_, ops := parseOptions(args[1:], w.shortArg, w.longArg, true)
		for _, op := range ops {
			a.writeArg(op, st, w.how)
		}
		return true
	}
	if c, ok := copiers[name]; ok {
		a.copier(c, args[1:], st)
		return true
	}
	switch name {
	case "chmod", "chown", "chgrp":
		a.chmod(name, args[1:], st)
		return true
	case "dd":
		for _, arg := range args[1:] {
			if arg.lit && strings.HasPrefix(arg.val, "of=") {
				a.addWrite(arg.val[3:], st, HowDd)
			} else if !arg.lit && strings.HasPrefix(arg.src, "of=") {
				a.res.Dynamic = true
			}
		}
		return true
	case "sed", "gsed":
		w := a.sedW(args[1:], st)
		return a.sed(args[1:], st) || w
	case "awk", "gawk", "mawk", "nawk":
		w := a.awkOut(args[1:], st)
		return a.awk(args[1:], st) || w
	case "shuf":
		a.outputOpt(args[1:], "ino", []string{"input-range", "head-count", "output", "random-source"}, []string{"-o", "--output"}, st, HowShufOut)
		return true
	case "uniq":
		a.uniq(args[1:], st)
		return true
	case "tar", "gtar", "bsdtar":
		return a.tar(args[1:], st)
	case "unzip", "cpio":
		return a.extractDir(name, args[1:], st)
	case "patch":
		return a.patch(args[1:], st)
	case "ed", "red", "ex", "vim", "vi", "nvim", "view":
		return a.editor(name, args[1:], st)
	case "gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "lzma", "unlzma", "zstd", "unzstd", "lz4", "compress", "uncompress":
		return a.compress(args[1:], st)
	case "split", "csplit":
		return a.split(name, args[1:], st)
	case "mkfifo", "mknod":
		_, ops := parseOptions(args[1:], "mZ", []string{"mode", "context"}, true)
		if len(ops) > 0 {
			if name == "mknod" {
				ops = ops[:1]
			}
			for _, op := range ops {
				a.writeArg(op, st, HowMkfifo)
			}
		}
		return true
	case "script":
		return a.scriptCmd(args[1:], st)
	case "rsync":
		a.rsync(args[1:], st)
		return true
	case "sort":
		opts, _ := parseOptions(args[1:], "kotST", []string{"key", "output", "field-separator", "buffer-size", "temporary-directory",
			"files0-from", "batch-size", "compress-program", "parallel", "random-source", "sort"}, true)
		for _, o := range opts {
			if o.name == "-o" || o.name == "--output" {
				a.writeArg(o.val, st, HowSortOut)
			}
		}
		return true
	case "curl":
		a.curl(args[1:], st)
		return true
	case "wget":
		a.wget(args[1:], st)
		return true
	case "find":
		return a.find(args[1:], st)
	case "git":
		return a.git(args[1:], st)
	case "eval":
		m := a.mark()
		a.eval(args[1:], st)
		return a.changed(m)
	case "source", ".":
		m := a.mark()
		a.sourced(args[1:], st)
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
	if isShell(name) {
		return a.shell(args[1:], st, call)
	}
	if isPython(name) {
		return a.python(args[1:], st, call)
	}
	return false
}

func isShell(name string) bool {
	switch name {
	case "bash", "sh", "zsh", "dash", "ksh", "mksh", "ash":
		return true
	}
	return false
}

func isPython(name string) bool {
	rest, ok := strings.CutPrefix(name, "python")
	if !ok {
		rest, ok = strings.CutPrefix(name, "pypy")
	}
	return ok && strings.Trim(rest, "0123456789.") == ""
}

func (a *analyzer) copier(c copierSpec, args []word, st *walkState) {
	opts, ops := parseOptions(args, c.shortArg, c.longArg, true)
	// A hard link makes the existing file writable under another name: it
	// is written as much as the link is.
	hard := c.how == HowLn && !hasOpt(opts, "-s", "--symbolic") ||
		c.how == HowCp && hasOpt(opts, "-l", "--link")
	if hard {
		srcs := ops
		if !hasOpt(opts, "-t", "--target-directory") && len(ops) > 1 {
			srcs = ops[:len(ops)-1]
		}
		for _, s := range srcs {
			a.writeArg(s, st, HowHardLink)
		}
	}
	var target *word
	for _, o := range opts {
		switch o.name {
		case "-t", "--target-directory":
			v := o.val
			target = &v
		case "-d", "--directory":
			if c.how == HowInstall {
				for _, op := range ops {
					a.writeArg(op, st, c.how)
				}
				return
			}
		}
	}
	srcs := ops
	if target == nil && len(ops) == 1 {
		if c.single && ops[0].lit {
			a.addWrite(path.Base(strings.TrimRight(ops[0].val, "/")), st, c.how)
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
			a.writeArg(s, st, c.how)
		}
	}
	switch {
	case target != nil:
		a.into(*target, srcs, st, c.how)
	case len(ops) > 1:
		dest := ops[len(ops)-1]
		if dest.lit && (len(srcs) > 1 || strings.HasSuffix(dest.val, "/")) {
			a.into(dest, srcs, st, c.how) // surely a directory
		} else {
			a.writeArg(dest, st, c.how)
		}
	}
}

// into records the files sources get inside directory dir.
func (a *analyzer) into(dir word, srcs []word, st *walkState, how string) {
	if !dir.lit {
		a.res.Dynamic = true
		return
	}
	for _, s := range srcs {
		if !s.lit {
			a.res.Dynamic = true
			a.addWrite(dir.val, st, how) // somewhere inside it
			continue
		}
		name := path.Base(strings.TrimRight(s.val, "/"))
		if strings.HasSuffix(dir.val, "/") {
			a.addWrite(dir.val+name, st, how)
		} else {
			a.addWrite(dir.val+"/"+name, st, how)
		}
	}
}

func (a *analyzer) chmod(name string, args []word, st *walkState) {
	var ops []word
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
		if name == "chmod" && ops[0].lit {
			a.detail = ops[0].val
			defer func() { a.detail = "" }()
		}
		ops = ops[1:] // the mode or owner
	}
	how := map[string]string{"chmod": HowChmod, "chown": HowChown, "chgrp": HowChgrp}[name]
	for _, op := range ops {
		a.writeArg(op, st, how)
	}
}

// sed reports the files of sed -i (GNU -i[SUF], --in-place[=SUF], BSD -i SUF).
func (a *analyzer) sed(args []word, st *walkState) bool {
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
	var ops []word
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
			full := longMatch(name, []string{"in-place", "expression", "file", "line-length"})
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
		a.writeArg(op, st, HowSedInPlace)
	}
	return true
}

// awk reports the files of gawk -i inplace.
func (a *analyzer) awk(args []word, st *walkState) bool {
	opts, ops := parseOptions(args, "fvFieEl", []string{"file", "assign", "field-separator", "include", "source", "exec", "load"}, true)
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
		if op.lit && isAssign(op.val) {
			continue // var=value operands
		}
		a.writeArg(op, st, HowAwkInPlace)
	}
	return true
}

func (a *analyzer) rsync(args []word, st *walkState) {
	opts, ops := parseOptions(args, "efTBM@", []string{"exclude", "include", "filter", "exclude-from", "include-from", "files-from",
		"rsh", "rsync-path", "temp-dir", "backup-dir", "suffix", "chmod", "chown", "usermap", "groupmap", "block-size",
		"partial-dir", "log-file", "log-file-format", "out-format", "password-file", "port", "timeout", "contimeout",
		"compare-dest", "copy-dest", "link-dest", "max-size", "min-size", "max-delete", "bwlimit", "modify-window",
		"info", "debug", "compress-level", "compress-choice", "checksum-choice", "skip-compress", "iconv", "sockopts",
		"write-batch", "read-batch", "only-write-batch", "remote-option", "address", "protocol", "outbuf",
		"stop-after", "stop-at", "max-alloc"}, true)
	if len(ops) < 2 {
		return
	}
	if hasOpt(opts, "--remove-source-files", "--remove-sent-files") {
		for _, s := range ops[:len(ops)-1] {
			if !isRemote(s) {
				a.writeArg(s, st, HowRsync)
			}
		}
	}
	if dest := ops[len(ops)-1]; !isRemote(dest) {
		a.writeArg(dest, st, HowRsync)
	}
}

// isRemote reports an rsync operand on another host (host:path, rsync://).
func isRemote(arg word) bool {
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

func (a *analyzer) curl(args []word, st *walkState) {
	const withValue = "AbCcDdEeFHKmoPQrTtUuwXxYyz"
	var outs []word
	var dir *word
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
				val := litArg(v[j+1:])
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
		if dir != nil && o.lit && !isAbs(o.val) {
			if !dir.lit {
				a.res.Dynamic = true
				continue
			}
			o = litArg(strings.TrimSuffix(dir.val, "/") + "/" + o.val)
		}
		a.writeArg(o, st, HowCurlOut)
	}
}

func (a *analyzer) wget(args []word, st *walkState) {
	opts, _ := parseOptions(args, "oaOeDPQtTwYUBiIlAXR", []string{"output-document", "output-file", "append-output", "directory-prefix",
		"execute", "tries", "timeout", "wait", "user", "password", "header", "input-file", "level", "accept", "reject"}, true)
	for _, o := range opts {
		if (o.name == "-O" || o.name == "--output-document") && !(o.val.lit && o.val.val == "-") {
			a.writeArg(o.val, st, HowWgetOut)
		}
	}
}

// placeholders makes the words holding find's {} or xargs's -I string
// unknown: each stands for a file DES cannot see.
func placeholders(args []word, mark string) []word {
	out := make([]word, len(args))
	for i, arg := range args {
		out[i] = arg
		if arg.lit && mark != "" && strings.Contains(arg.val, mark) {
			out[i].lit = false
		}
	}
	return out
}
