package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// unknownVar stands for text DES cannot know in a script it parses.
const unknownVar = "${__DES_UNKNOWN__}"

// eval runs its words joined by spaces in the current shell.
func (a *analyzer) eval(args []word, st *walkState) flow {
	parts := make([]string, 0, len(args))
	holes := false
	for _, arg := range args {
		if !arg.lit {
			holes = true
		}
		parts = append(parts, scriptOf(arg))
	}
	return a.script(strings.Join(parts, " "), st, holes)
}

// script walks a shell script given as text (bash -c, eval, stdin); holes
// marks text with parts substituted at run time, which DES reads as
// unknown expansions.
func (a *analyzer) script(src string, st *walkState, holes bool) flow {
	if holes || strings.Contains(src, hole) {
		a.res.Dynamic = true
		src = strings.ReplaceAll(src, hole, unknownVar)
	}
	if strings.TrimSpace(src) == "" || strings.TrimSpace(strings.ReplaceAll(src, unknownVar, "")) == "" {
		return plain(st)
	}
	if a.depth >= maxScripts {
		a.res.Dynamic = true
		return plain(st)
	}
	a.depth++
	saved := a.src
	a.src = src
	defer func() { a.depth--; a.src = saved }()
	if tooBig(src) != "" {
		a.fallback(src, st)
		return plain(st)
	}
	f, err := parseBash(src)
	if err != nil {
		a.fallback(src, st)
		return plain(st)
	}
	return a.stmts(f.Stmts, st)
}

// stdinKind says what an interpreter reads as its script when it gets none
// in its arguments.
type stdinKind int

const (
	stdinUnknown stdinKind = iota // a pipe or the terminal
	stdinText                     // a here-document or here-string
	stdinFile                     // < file: a script DES does not read
)

func (a *analyzer) stdinScript(call callInfo) (string, stdinKind) {
	if call.stmt == nil {
		return "", stdinUnknown
	}
	text, kind := "", stdinUnknown
	for _, r := range call.stmt.Redirs {
		if r.N != nil && r.N.Value != "0" {
			continue
		}
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			if r.Hdoc == nil {
				text, kind = "", stdinText
				continue
			}
			if quotedDelim(r.Word) {
				text = scriptText(r.Hdoc.Parts, false)
				if len(r.Hdoc.Parts) == 1 {
					if l, ok := r.Hdoc.Parts[0].(*syntax.Lit); ok {
						text = l.Value // quoted delimiter: the body is taken as is
					}
				}
			} else {
				text = scriptText(r.Hdoc.Parts, true)
			}
			kind = stdinText
		case syntax.WordHdoc:
			text, kind = scriptText(r.Word.Parts, false)+"\n", stdinText
		case syntax.RdrIn:
			text, kind = "", stdinFile
		}
	}
	return text, kind
}

func quotedDelim(w *syntax.Word) bool {
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

func (a *analyzer) shell(args []word, st *walkState, call callInfo) bool {
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
		a.script(scriptOf(scr), st, !scr.lit)
	case i < len(args) && !sflag && args[i].proc:
		a.sourced(args[i:], st) // bash <(...)
	case i < len(args) && !sflag:
		return false // a script file
	default:
		text, kind := a.stdinScript(call)
		switch kind {
		case stdinUnknown:
			a.res.Dynamic = true
		case stdinText:
			a.script(text, st, false)
		}
	}
	return a.changed(m)
}

func (a *analyzer) python(args []word, st *walkState, call callInfo) bool {
	m := a.mark()
	code, found := "", false
	i := 0
options:
	for ; i < len(args); i++ {
		arg := args[i]
		v := arg.val
		if !arg.lit {
			if strings.HasPrefix(arg.src, "-c") {
				code, found = attachedValue(arg, "-c"), true
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
					code = scriptOf(args[i+1])
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
		a.scan(langPython, code, st)
	case i < len(args) && !(args[i].lit && args[i].val == "-"):
		return false // a script file
	default:
		a.stdinScan(langPython, call, st)
	}
	return a.changed(m)
}

// stdinScan scans a script an interpreter reads from stdin.
func (a *analyzer) stdinScan(lang language, call callInfo, st *walkState) {
	text, kind := a.stdinScript(call)
	switch kind {
	case stdinUnknown:
		a.res.Dynamic = true
	case stdinText:
		a.scan(lang, text, st)
	}
}

func (a *analyzer) node(args []word, st *walkState, call callInfo) bool {
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
				a.scan(langJS, scriptOf(args[i+1]), st)
			}
			return a.changed(m)
		case strings.HasPrefix(v, "--eval=") || strings.HasPrefix(v, "--print="):
			_, code, _ := strings.Cut(v, "=")
			a.scan(langJS, code, st)
			return a.changed(m)
		case v == "-v" || v == "--version" || v == "-h" || v == "--help" || v == "-c" || v == "--check":
			return false
		case v == "-r" || v == "--require" || v == "--import" || v == "--loader" || v == "--experimental-loader" ||
			v == "-C" || v == "--conditions" || v == "--input-type" || v == "--env-file":
			i++
		case v == "-":
			a.stdinScan(langJS, call, st)
			return a.changed(m)
		case v == "--":
			return false
		case strings.HasPrefix(v, "-"):
		default:
			return false // a script file
		}
	}
	a.stdinScan(langJS, call, st)
	return a.changed(m)
}

// bun runs files and package scripts; only -e/-p give it literal code.
func (a *analyzer) bun(args []word, st *walkState) bool {
	m := a.mark()
	for i, arg := range args {
		if arg.lit && (arg.val == "-e" || arg.val == "--eval" || arg.val == "-p" || arg.val == "--print") && i+1 < len(args) {
			a.scan(langJS, scriptOf(args[i+1]), st)
			break
		}
		if arg.lit && !strings.HasPrefix(arg.val, "-") {
			break
		}
	}
	return a.changed(m)
}

// deno eval CODE.
func (a *analyzer) deno(args []word, st *walkState) bool {
	m := a.mark()
	if len(args) > 1 && args[0].lit && args[0].val == "eval" {
		_, ops := parseOptions(args[1:], "", []string{"ext", "config", "import-map", "location", "cert", "v8-flags"}, true)
		if len(ops) > 0 {
			a.scan(langJS, scriptOf(ops[0]), st)
		}
	}
	return a.changed(m)
}

// perl: -e/-E scripts are scanned; -i edits the file operands in place.
func (a *analyzer) perl(args []word, st *walkState, call callInfo) bool {
	m := a.mark()
	var scripts []string
	inPlace, info := false, false
	var ops []word
	for i := 0; i < len(args); i++ {
		arg := args[i]
		v := arg.val
		if !arg.lit {
			if strings.HasPrefix(arg.src, "-e") || strings.HasPrefix(arg.src, "-E") {
				scripts = append(scripts, attachedValue(arg, "-e"))
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
					scripts = append(scripts, scriptOf(args[i]))
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
			a.stdinScan(langPerl, call, st)
		}
	}
	for _, s := range scripts {
		a.scan(langPerl, s, st)
	}
	if inPlace {
		for _, op := range ops {
			a.writeArg(op, st, HowPerlInPlace)
		}
	}
	return a.changed(m) || inPlace
}

// ruby: like perl, with -C DIR moving first.
func (a *analyzer) ruby(args []word, st *walkState, call callInfo) bool {
	m := a.mark()
	at := st
	var scripts []string
	inPlace, info := false, false
	var ops []word
	for i := 0; i < len(args); i++ {
		arg := args[i]
		v := arg.val
		if !arg.lit {
			if strings.HasPrefix(arg.src, "-e") {
				scripts = append(scripts, attachedValue(arg, "-e"))
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
					scripts = append(scripts, scriptOf(args[i]))
				}
				break cluster
			case 'i':
				inPlace = true
				break cluster
			case 'I', 'r', 'C', 'E', 'F':
				val := litArg(v[j+1:])
				if j+1 == len(v) && i+1 < len(args) {
					i++
					val = args[i]
				}
				if c == 'C' {
					at = a.cd(at, val)
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
			a.stdinScan(langRuby, call, at)
		}
	}
	for _, s := range scripts {
		a.scan(langRuby, s, at)
	}
	if inPlace {
		for _, op := range ops {
			a.writeArg(op, at, HowRubyInPlace)
		}
	}
	return a.changed(m) || inPlace
}

type language int

const (
	langPython language = iota
	langJS
	langRuby
	langPerl
)

var langHow = [...]string{HowPython, HowNode, HowRuby, HowPerl}

// modeKind says how a call decides whether it writes.
type modeKind int

const (
	modeNone     modeKind = iota // the call always writes
	modeChars                    // an open mode string ('w', 'a', 'r+'...); absent means read
	modeFlags                    // O_WRONLY/O_CREAT... flags
	modePerlOpen                 // perl open, 2- and 3-argument forms
	modeReceiver                 // a Python pathlib method: the receiver Path('...') is the file
	modeShell                    // the call runs a command: a string (sh -c) or an argument list
)

// pattern is a call in a script that writes files.
type pattern struct {
	name   string // as written; a leading '.' means a method on any receiver
	paths  []int  // written path arguments; nil means every positional argument
	mode   int    // the argument holding the mode, -1 when none
	modeKw string // keyword spelling of the mode argument
	pathKw string // keyword spelling of the first path argument
	kind   modeKind
}

func patterns(mode int, kind modeKind, paths []int, names ...string) []pattern {
	out := make([]pattern, 0, len(names))
	for _, n := range names {
		out = append(out, pattern{name: n, paths: paths, mode: mode, kind: kind})
	}
	return out
}

func joinPats(groups ...[]pattern) []pattern {
	var out []pattern
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

var (
	arg0  = []int{0}
	arg1  = []int{1}
	arg01 = []int{0, 1}
)

var scriptPats = [...][]pattern{
	langPython: joinPats(
		[]pattern{{name: "open", paths: arg0, pathKw: "file", mode: 1, modeKw: "mode", kind: modeChars}},
		[]pattern{{name: "os.open", paths: arg0, mode: 1, modeKw: "flags", kind: modeFlags}},
		patterns(1, modeChars, arg0, "io.open", "codecs.open", "gzip.open", "bz2.open", "lzma.open", "builtins.open", "tarfile.open"),
		patterns(-1, modeNone, arg0, "os.remove", "os.unlink", "os.truncate", "shutil.rmtree"),
		patterns(-1, modeNone, arg01, "os.rename", "os.replace", "shutil.move"),
		patterns(-1, modeNone, arg1, "shutil.copy", "shutil.copy2", "shutil.copyfile", "shutil.copytree", "os.symlink", "os.link"),
		patterns(-1, modeReceiver, nil, ".write_text", ".write_bytes", ".touch", ".unlink", ".rename", ".replace", ".symlink_to", ".hardlink_to"),
		[]pattern{{name: ".open", mode: 0, modeKw: "mode", kind: modeReceiver}},
		patterns(-1, modeShell, nil, "os.system", "os.popen", "subprocess.run", "subprocess.call", "subprocess.check_call",
			"subprocess.check_output", "subprocess.Popen", "subprocess.getoutput", "subprocess.getstatusoutput"),
	),
	langJS: joinPats(
		patterns(-1, modeNone, arg0, "writeFileSync", "writeFile", "appendFileSync", "appendFile", "createWriteStream",
			"truncateSync", "unlinkSync", "rmSync", "rmdirSync", "outputFileSync", "outputFile", "writeJsonSync", "writeJSONSync",
			"writeJson", "writeJSON", "removeSync", "emptyDirSync", "Bun.write", "Deno.writeTextFile", "Deno.writeTextFileSync",
			"Deno.writeFile", "Deno.writeFileSync", "Deno.remove", "Deno.removeSync", "Deno.create", "Deno.createSync",
			"Deno.truncate", "Deno.truncateSync", ".rm", ".unlink", ".truncate", ".remove", ".rmdir"),
		patterns(-1, modeNone, arg01, "renameSync", "moveSync", "Deno.rename", "Deno.renameSync", ".rename", ".move"),
		patterns(-1, modeNone, arg1, "copyFileSync", "cpSync", "copySync", "symlinkSync", "linkSync",
			"Deno.copyFile", "Deno.copyFileSync", ".copyFile", ".cp", ".copy", ".symlink", ".link"),
		patterns(1, modeChars, arg0, "openSync", ".open"),
		patterns(-1, modeShell, nil, "execSync", "exec", "execFileSync", "execFile", "spawnSync", "spawn"),
	),
	langRuby: joinPats(
		patterns(-1, modeNone, arg0, "File.write", "IO.write", "File.binwrite", "IO.binwrite", "File.truncate"),
		[]pattern{
			{name: "File.open", paths: arg0, mode: 1, modeKw: "mode", kind: modeChars},
			{name: "File.new", paths: arg0, mode: 1, modeKw: "mode", kind: modeChars},
			{name: "open", paths: arg0, mode: 1, modeKw: "mode", kind: modeChars},
		},
		patterns(-1, modeNone, nil, "File.delete", "File.unlink", "FileUtils.rm", "FileUtils.rm_f", "FileUtils.rm_r",
			"FileUtils.rm_rf", "FileUtils.remove", "FileUtils.remove_file", "FileUtils.touch", "FileUtils.remove_dir",
			"FileUtils.remove_entry", "FileUtils.rmtree"),
		patterns(-1, modeNone, arg01, "File.rename", "FileUtils.mv", "FileUtils.move"),
		patterns(-1, modeNone, arg1, "FileUtils.cp", "FileUtils.copy", "FileUtils.cp_r", "FileUtils.install",
			"FileUtils.copy_file", "FileUtils.ln", "FileUtils.ln_s", "FileUtils.ln_sf", "File.symlink", "File.link"),
		patterns(-1, modeShell, nil, "system", "exec", "spawn", "IO.popen", "Open3.capture2", "Open3.capture2e",
			"Open3.capture3", "Open3.popen3", "Open3.popen2"),
	),
	langPerl: joinPats(
		[]pattern{{name: "open", mode: 1, kind: modePerlOpen}},
		[]pattern{{name: "sysopen", paths: arg1, mode: 2, kind: modeFlags}},
		patterns(-1, modeNone, nil, "unlink", "rmtree", "remove_tree"),
		patterns(-1, modeNone, arg01, "rename", "move"),
		patterns(-1, modeNone, arg0, "truncate"),
		patterns(-1, modeNone, arg1, "copy", "symlink", "link"),
		patterns(-1, modeShell, nil, "system", "exec"),
	),
}

// scriptMatch is one write call found in a script.
type scriptMatch struct {
	at   int
	pat  *pattern
	args []string
}

// scan records the files a script writes with literal paths, and Dynamic
// for write calls whose path or mode DES cannot read.
func (a *analyzer) scan(lang language, script string, st *walkState) {
	if strings.Trim(script, hole+" \t\r\n") == "" {
		if strings.Contains(script, hole) {
			a.res.Dynamic = true // the whole script is computed
		}
		return
	}
	var found []scriptMatch
	pats := scriptPats[lang]
	for i := range pats {
		p := &pats[i]
		for off := 0; off < len(script); {
			k := strings.Index(script[off:], p.name)
			if k < 0 {
				break
			}
			k += off
			off = k + len(p.name)
			if !callBoundary(lang, script, k, p.name) {
				continue
			}
			if len(found) >= maxScriptCalls {
				a.res.Dynamic = true
				break
			}
			if args, ok := callArgs(lang, script, off); ok {
				found = append(found, scriptMatch{at: k, pat: p, args: args})
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
		a.scriptCall(lang, m, script, st)
	}
	if lang == langPerl || lang == langRuby {
		a.backticks(lang, script, st)
	}
}

// callBoundary tells a call of name at k from a longer identifier.
func callBoundary(lang language, s string, k int, name string) bool {
	if name[0] == '.' {
		if k == 0 {
			return false
		}
		c := s[k-1]
		return identByte(c) || c == ')' || c == ']'
	}
	if k == 0 {
		return true
	}
	switch c := s[k-1]; {
	case identByte(c) || c == '$' || c == '@' || c == '%':
		return false
	case c == '.':
		return lang == langJS // fs.writeFileSync, require('fs').rmSync
	case c == '>' && k >= 2 && s[k-2] == '-':
		return false // a Perl method ->open on some object
	}
	return true
}

// callArgs returns the raw argument texts of the call whose name ends at off.
func callArgs(lang language, s string, off int) ([]string, bool) {
	j := off
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	if j >= len(s) {
		return nil, false
	}
	if s[j] == '(' {
		return splitArgs(s[j+1:], true), true
	}
	if (lang == langPerl || lang == langRuby) && j > off {
		c := s[j]
		if c == '"' || c == '\'' || c == '$' || c == ':' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			return splitArgs(s[j:], false), true
		}
	}
	return nil, false
}

// maxCallText bounds how far DES reads the arguments of one call, and
// back to its receiver, so that a huge unbalanced script stays linear.
const maxCallText = 4 << 10

// maxScriptCalls bounds the write calls DES examines in one script;
// beyond it the script is Dynamic.
const maxScriptCalls = 4096

// splitArgs splits call arguments at top-level commas, up to the closing
// parenthesis (paren) or the end of the statement (Perl/Ruby without one).
func splitArgs(s string, paren bool) []string {
	if len(s) > maxCallText {
		s = s[:maxCallText]
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

// splitKw separates keyword arguments (Python name=, Ruby name:) from
// positional ones.
func splitKw(lang language, args []string) ([]string, map[string]string) {
	var pos []string
	var kw map[string]string
	for _, a := range args {
		t := strings.TrimSpace(a)
		n := 0
		for n < len(t) && identByte(t[n]) {
			n++
		}
		isKw := false
		if n > 0 && n < len(t) {
			rest := strings.TrimLeft(t[n:], " ")
			switch lang {
			case langPython:
				isKw = strings.HasPrefix(rest, "=") && !strings.HasPrefix(rest, "==")
			case langRuby:
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

func argAt(pos []string, kw map[string]string, i int, name string) (string, bool) {
	if i >= 0 && i < len(pos) {
		return pos[i], true
	}
	if name != "" {
		v, ok := kw[name]
		return v, ok
	}
	return "", false
}

// scriptString is the value of a string literal argument; false when
// the argument is anything else (a variable, a concatenation, an
// interpolating string, text the shell substitutes).
func scriptString(lang language, arg string) (string, bool) {
	s := strings.TrimSpace(arg)
	raw, fstr := false, false
	if lang == langPython {
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
	case q == '`' && lang == langJS:
	default:
		return "", false
	}
	var body, rest string
	if triple := strings.Repeat(string(q), 3); lang == langPython && strings.HasPrefix(s, triple) {
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
	if strings.TrimSpace(rest) != "" || strings.Contains(body, hole) {
		return "", false
	}
	switch {
	case fstr && strings.Contains(body, "{"),
		lang == langJS && q == '`' && strings.Contains(body, "${"),
		lang == langRuby && q == '"' && strings.Contains(body, "#{"),
		lang == langPerl && q == '"' && perlInterpolates(body):
		return "", false
	}
	if raw || (q == '\'' && (lang == langRuby || lang == langPerl)) {
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

func perlInterpolates(body string) bool {
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

// modeWrites tells whether an open mode argument writes; known is
// false when DES cannot read it.
func modeWrites(lang language, kind modeKind, arg string) (writes, known bool) {
	flags := func(s string) bool {
		for _, f := range []string{"WRONLY", "RDWR", "CREAT", "TRUNC", "APPEND"} {
			if strings.Contains(s, f) {
				return true
			}
		}
		return false
	}
	s, ok := scriptString(lang, arg)
	switch {
	case !ok && flags(arg):
		return true, true
	case !ok && strings.Contains(arg, "RDONLY"):
		return false, true
	case !ok:
		return false, false
	case lang == langPython && kind == modeChars:
		return strings.ContainsAny(s, "wax+"), true
	}
	return strings.ContainsAny(s, "wa+"), true
}

// writeScriptArg records a path argument of a script call.
func (a *analyzer) writeScriptArg(lang language, arg string, st *walkState) {
	if p, ok := scriptString(lang, arg); ok {
		a.addWrite(p, st, langHow[lang])
		return
	}
	a.res.Dynamic = true
}

func (a *analyzer) scriptCall(lang language, m scriptMatch, script string, st *walkState) {
	p := m.pat
	pos, kw := splitKw(lang, m.args)
	switch p.kind {
	case modeReceiver:
		a.pathMethod(p, script, m.at, pos, kw, st)
		return
	case modePerlOpen:
		a.perlOpen(pos, st)
		return
	case modeShell:
		a.scriptRuns(lang, pos, st)
		return
	}
	if p.mode >= 0 {
		mode, has := argAt(pos, kw, p.mode, p.modeKw)
		if !has {
			if p.kind == modeChars {
				return // the default mode reads
			}
			a.res.Dynamic = true
			return
		}
		w, known := modeWrites(lang, p.kind, mode)
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
			a.writeScriptArg(lang, arg, st)
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
		if arg, ok := argAt(pos, kw, i, name); ok {
			a.writeScriptArg(lang, arg, st)
		}
	}
}

// pathMethod handles pathlib methods: Path('x').write_text(...) writes x;
// the same method on a variable receiver is Dynamic.
func (a *analyzer) pathMethod(p *pattern, script string, k int, pos []string, kw map[string]string, st *walkState) {
	file, recv := pyReceiver(script, k)
	switch p.name {
	case ".open":
		mode, has := argAt(pos, kw, 0, "mode")
		if !has || recv == recvModule {
			return
		}
		w, known := modeWrites(langPython, modeChars, mode)
		if known && !w {
			return
		}
		if !known || recv != recvPath {
			a.res.Dynamic = true
			return
		}
		a.addWrite(file, st, HowPython)
	case ".rename", ".replace", ".symlink_to", ".hardlink_to":
		// Common names on other objects (str.replace): only a literal
		// Path receiver counts.
		if recv != recvPath {
			return
		}
		if p.name == ".rename" || p.name == ".replace" {
			a.addWrite(file, st, HowPython)
			if arg, ok := argAt(pos, kw, 0, "target"); ok {
				a.writeScriptArg(langPython, arg, st)
			}
			return
		}
		a.addWrite(file, st, HowPython)
	default:
		switch recv {
		case recvPath:
			a.addWrite(file, st, HowPython)
		case recvModule:
		default:
			a.res.Dynamic = true
		}
	}
}

type receiver int

const (
	recvUnknown receiver = iota // a variable or an expression
	recvPath                    // Path('literal', ...)
	recvModule                  // a module such as io or os
)

// pyReceiver reads the receiver of the method whose '.' is at dot.
func pyReceiver(s string, dot int) (string, receiver) {
	r := strings.TrimRight(s[max(0, dot-maxCallText):dot], " \t")
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
			return "", recvUnknown
		}
		n := open
		for n > 0 && (identByte(r[n-1]) || r[n-1] == '.') {
			n--
		}
		switch r[n:open] {
		case "Path", "pathlib.Path", "PurePath", "PosixPath", "WindowsPath", "pathlib.PurePath", "pathlib.PosixPath":
		default:
			return "", recvUnknown
		}
		var parts []string
		for _, arg := range splitArgs(r[open+1:], true) {
			v, ok := scriptString(langPython, arg)
			if !ok {
				return "", recvUnknown
			}
			parts = append(parts, v)
		}
		if len(parts) == 0 {
			return "", recvUnknown
		}
		return strings.Join(parts, "/"), recvPath
	}
	n := len(r)
	for n > 0 && identByte(r[n-1]) {
		n--
	}
	switch r[n:] {
	case "io", "codecs", "gzip", "bz2", "lzma", "builtins", "tarfile", "os", "zipfile", "shutil", "webbrowser", "subprocess", "urllib", "request":
		return "", recvModule
	}
	return "", recvUnknown
}

// perlOpen handles open(FH, '>file') and open(FH, '>', 'file').
func (a *analyzer) perlOpen(pos []string, st *walkState) {
	if len(pos) < 2 {
		return
	}
	if len(pos) == 2 {
		m := pos[1]
		if s, ok := scriptString(langPerl, m); ok {
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
			a.addWrite(rest, st, HowPerl)
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
	s, ok := scriptString(langPerl, pos[1])
	if !ok {
		a.res.Dynamic = true
		return
	}
	if t := strings.TrimSpace(s); strings.HasPrefix(t, ">") || strings.HasPrefix(t, "+") {
		a.writeScriptArg(langPerl, pos[2], st)
	}
}

// procScript is the text a process substitution <(...) gives a shell that
// runs it as a script, when it is a literal echo, printf or cat of a
// here-document; false when DES cannot know it.
func (a *analyzer) procScript(w *syntax.Word) (string, bool) {
	if w == nil || len(w.Parts) != 1 {
		return "", false
	}
	ps, ok := w.Parts[0].(*syntax.ProcSubst)
	if !ok || ps.Op != syntax.CmdIn || len(ps.Stmts) != 1 {
		return "", false
	}
	s := ps.Stmts[0]
	call, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) == 0 || len(call.Assigns) > 0 {
		return "", false
	}
	var vals []string
	for _, arg := range call.Args {
		v, ok := plainValue(arg.Parts)
		if !ok {
			return "", false
		}
		vals = append(vals, v)
	}
	switch vals[0] {
	case "echo":
		if len(s.Redirs) > 0 || len(vals) > 1 && strings.HasPrefix(vals[1], "-") {
			return "", false
		}
		return strings.Join(vals[1:], " ") + "\n", true
	case "printf":
		if len(s.Redirs) > 0 || len(vals) != 2 || strings.ContainsAny(vals[1], `%\`) {
			return "", false
		}
		return vals[1], true
	case "cat":
		if len(vals) != 1 {
			return "", false
		}
		text, kind := a.stdinScript(callInfo{stmt: s})
		return text, kind == stdinText && !strings.Contains(text, hole)
	}
	return "", false
}

// sourced reads `source FILE` and `. FILE`: a process substitution DES can
// read is walked as a script; any other is Dynamic (`source <(curl ...)`).
func (a *analyzer) sourced(args []word, st *walkState) {
	if len(args) == 0 || !args[0].proc {
		return // a script file: not read (see the package's limits)
	}
	if text, ok := a.procScript(args[0].word); ok {
		a.script(text, st, false)
		return
	}
	a.res.Dynamic = true
}

// maxArgv bounds the words of an argument list DES reads from a script.
const maxArgv = 256

// scriptRuns reads a command a script runs: a literal string is a shell
// command (os.system, subprocess with shell=True, execSync, Perl and Ruby
// system with one string), a literal list an argument vector
// (subprocess.run(["cp", ...]), spawn("cp", [...]), system("cp", ...));
// anything else is Dynamic.
func (a *analyzer) scriptRuns(lang language, pos []string, st *walkState) {
	if len(pos) == 0 {
		a.res.Dynamic = true
		return
	}
	var argv []string
	if s, ok := scriptString(lang, pos[0]); ok {
		if len(pos) == 1 || lang == langPython {
			a.script(s, st, false)
			return
		}
		argv = append(argv, s)
		rest := pos[1:]
		if lang == langJS {
			rest = pos[1:2] // spawn(cmd, [args], options)
		}
		for _, p := range rest {
			more, ok := scriptList(lang, p)
			if !ok {
				a.res.Dynamic = true
				return
			}
			argv = append(argv, more...)
		}
	} else {
		var ok bool
		if argv, ok = scriptList(lang, pos[0]); !ok {
			a.res.Dynamic = true
			return
		}
	}
	if len(argv) == 0 || len(argv) > maxArgv {
		a.res.Dynamic = true
		return
	}
	words := make([]word, len(argv))
	for i, v := range argv {
		words[i] = litArg(v)
	}
	a.run(words, st, callInfo{})
}

// scriptList reads a literal list of strings ([...] or (...)), or one
// string, from a script argument.
func scriptList(lang language, arg string) ([]string, bool) {
	t := strings.TrimSpace(arg)
	if s, ok := scriptString(lang, t); ok {
		return []string{s}, true
	}
	if len(t) < 2 || !(t[0] == '[' && t[len(t)-1] == ']' || t[0] == '(' && t[len(t)-1] == ')') {
		return nil, false
	}
	var out []string
	for _, el := range splitArgs(t[1:len(t)-1], true) {
		if strings.TrimSpace(el) == "" {
			continue
		}
		s, ok := scriptString(lang, el)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// backticks reads the `command` strings of a Perl or Ruby script (and
// Ruby's %x{...}): a literal one is a shell command, one that
// interpolates is Dynamic.
func (a *analyzer) backticks(lang language, script string, st *walkState) {
	for i := 0; i < len(script); i++ {
		var body string
		switch {
		case script[i] == '`':
			end := strings.IndexByte(script[i+1:], '`')
			if end < 0 {
				return
			}
			body = script[i+1 : i+1+end]
			i += end + 1
		case lang == langRuby && strings.HasPrefix(script[i:], "%x{"):
			end := strings.IndexByte(script[i+3:], '}')
			if end < 0 {
				return
			}
			body = script[i+3 : i+3+end]
			i += end + 3
		case lang == langPerl && strings.HasPrefix(script[i:], "qx") && (i == 0 || !identByte(script[i-1])) && i+2 < len(script):
			open := script[i+2]
			closer := map[byte]byte{'{': '}', '(': ')', '[': ']', '<': '>'}[open]
			if closer == 0 {
				if identByte(open) || open == ' ' {
					continue
				}
				closer = open
			}
			end := strings.IndexByte(script[i+3:], closer)
			if end < 0 {
				return
			}
			body = script[i+3 : i+3+end]
			i += end + 3
		default:
			continue
		}
		if strings.Contains(body, hole) || lang == langPerl && perlInterpolates(body) || lang == langRuby && strings.Contains(body, "#{") {
			a.res.Dynamic = true
			continue
		}
		a.script(body, st, false)
	}
}
