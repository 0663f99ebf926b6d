package shell

import (
	"path"
	"strings"
)

// Writers added for the forms an agent uses to write a file without the
// usual commands: each reports the files as written in the command.

// outputOpt records the value of an -o FILE style option.
func (a *analyzer) outputOpt(args []word, shortArg string, longArg []string, names []string, st *walkState, how string) {
	opts, _ := parseOptions(args, shortArg, longArg, true)
	for _, o := range opts {
		for _, n := range names {
			if o.name == n {
				a.writeArg(o.val, st, how)
			}
		}
	}
}

// uniq IN OUT writes OUT.
func (a *analyzer) uniq(args []word, st *walkState) {
	_, ops := parseOptions(args, "fsw", []string{"skip-fields", "skip-chars", "check-chars"}, true)
	if len(ops) > 1 {
		a.writeArg(ops[1], st, HowUniq)
	}
}

// sedScripts are the scripts of a sed command: -e and --expression
// values, or its first operand.
func sedScripts(args []word) (scripts []word, files bool) {
	var first *word
	for i := 0; i < len(args); i++ {
		arg := args[i]
		v := arg.val
		if !arg.lit || len(v) < 2 || v[0] != '-' {
			if first == nil {
				f := arg
				first = &f
			}
			continue
		}
		if v == "--" {
			if first == nil && i+1 < len(args) {
				f := args[i+1]
				first = &f
			}
			break
		}
		if strings.HasPrefix(v, "--") {
			name, val, hasVal := strings.Cut(v[2:], "=")
			switch full := longMatch(name, []string{"expression", "file", "line-length", "in-place"}); full {
			case "expression", "file":
				if !hasVal && i+1 < len(args) {
					i++
					val = args[i].val
					if full == "expression" {
						scripts = append(scripts, args[i])
					}
				} else if full == "expression" {
					scripts = append(scripts, litArg(val))
				}
				if full == "file" {
					files = true
				}
			case "line-length":
				if !hasVal {
					i++
				}
			}
			continue
		}
		for j := 1; j < len(v); j++ {
			c := v[j]
			if c == 'e' || c == 'f' || c == 'l' {
				val := litArg(v[j+1:])
				if j+1 == len(v) && i+1 < len(args) {
					i++
					val = args[i]
				}
				switch c {
				case 'e':
					scripts = append(scripts, val)
				case 'f':
					files = true
				}
				break
			}
			if c == 'i' {
				break // -i[SUFFIX]
			}
		}
	}
	if len(scripts) == 0 && !files && first != nil {
		scripts = append(scripts, *first)
	}
	return scripts, files
}

// sedWrites scans a sed script for the commands that write a file (w, W,
// and the w flag of s) or run a shell (e, and the e flag of s).
func sedWrites(script string) (files []string, runs bool) {
	n := len(script)
	toEOL := func(i int) (string, int) {
		j := strings.IndexByte(script[i:], '\n')
		if j < 0 {
			return script[i:], n
		}
		return script[i : i+j], i + j
	}
	skipSpace := func(i int) int {
		for i < n && (script[i] == ' ' || script[i] == '\t') {
			i++
		}
		return i
	}
	// section skips a delimited regular expression or replacement.
	section := func(i int, d byte) int {
		for i < n && script[i] != d {
			if script[i] == '\\' {
				i++
			}
			i++
		}
		return i + 1
	}
	addr := func(i int) int {
		switch {
		case i < n && script[i] >= '0' && script[i] <= '9':
			for i < n && (script[i] >= '0' && script[i] <= '9' || script[i] == '~') {
				i++
			}
		case i < n && script[i] == '$':
			i++
		case i < n && script[i] == '/':
			i = section(i+1, '/')
			for i < n && (script[i] == 'I' || script[i] == 'M') {
				i++
			}
		case i+1 < n && script[i] == '\\':
			i = section(i+2, script[i+1])
		}
		return i
	}
	for i := 0; i < n; {
		for i < n && strings.IndexByte(" \t\n;", script[i]) >= 0 {
			i++
		}
		if i >= n {
			break
		}
		i = addr(i)
		i = skipSpace(i)
		if i < n && script[i] == ',' {
			i = addr(skipSpace(i + 1))
		}
		i = skipSpace(i)
		for i < n && script[i] == '!' {
			i = skipSpace(i + 1)
		}
		if i >= n {
			break
		}
		c := script[i]
		i++
		switch c {
		case '{', '}':
		case 'a', 'i', 'c':
			// Text to the end of the line, continued by a trailing backslash.
			for {
				line, j := toEOL(i)
				i = j
				if !strings.HasSuffix(line, "\\") || i >= n {
					break
				}
				i++
			}
		case '#', 'r', 'R', ':', 'v':
			_, i = toEOL(i)
		case 'b', 't', 'T':
			for i < n && script[i] != ';' && script[i] != '\n' {
				i++
			}
		case 'w', 'W':
			f, j := toEOL(skipSpace(i))
			files = append(files, f)
			i = j
		case 'e':
			runs = true
			_, i = toEOL(i)
		case 's', 'y':
			if i >= n {
				break
			}
			d := script[i]
			i = section(i+1, d)
			i = section(i, d)
			if c == 'y' {
				break
			}
			for i < n && strings.IndexByte(";\n}", script[i]) < 0 {
				switch script[i] {
				case 'w':
					f, j := toEOL(skipSpace(i + 1))
					files = append(files, f)
					i = j
					continue
				case 'e':
					runs = true
				}
				i++
			}
		}
	}
	return files, runs
}

// sedW reports the files sed scripts write with w, and Dynamic for one
// that runs commands or that DES cannot read (-f FILE).
func (a *analyzer) sedW(args []word, st *walkState) bool {
	scripts, fromFile := sedScripts(args)
	found := false
	for _, s := range scripts {
		text := scriptOf(s)
		if !strings.ContainsAny(text, "weW") {
			continue
		}
		files, runs := sedWrites(text)
		if runs {
			a.res.Dynamic = true
			found = true
		}
		for _, f := range files {
			found = true
			if strings.Contains(f, hole) {
				a.res.Dynamic = true
				a.put(strings.ReplaceAll(f, hole, "$(...)"), st, HowSedWrite, false, true)
				continue
			}
			a.addWrite(f, st, HowSedWrite)
		}
	}
	_ = fromFile // a script file is not read (see the package's limits)
	return found
}

// awkProgram is the program text of an awk command and whether DES has it.
func awkProgram(args []word) ([]string, bool) {
	opts, ops := parseOptions(args, "fvFieEl", []string{"file", "assign", "field-separator", "include", "source", "exec", "load"}, true)
	var progs []string
	file := false
	for _, o := range opts {
		switch o.name {
		case "-f", "--file", "-E", "--exec":
			file = true
		case "-e", "--source":
			progs = append(progs, scriptOf(o.val))
		}
	}
	if len(progs) == 0 && !file && len(ops) > 0 {
		progs = append(progs, scriptOf(ops[0]))
	}
	return progs, !file
}

// awkOut scans an awk program for output redirections (print > "f",
// printf ... >> "f", print | "cmd") and system("cmd"): a literal file is
// written, a literal command is read as shell, anything else is Dynamic.
func (a *analyzer) awkOut(args []word, st *walkState) bool {
	progs, _ := awkProgram(args)
	found := false
	for _, p := range progs {
		if a.awkScan(p, st) {
			found = true
		}
	}
	return found
}

func (a *analyzer) awkScan(p string, st *walkState) bool {
	found := false
	n := len(p)
	// str reads an awk string literal at i ("..."), false when there is none.
	str := func(i int) (string, int, bool) {
		for i < n && (p[i] == ' ' || p[i] == '\t') {
			i++
		}
		if i >= n || p[i] != '"' {
			return "", i, false
		}
		var sb strings.Builder
		for i++; i < n && p[i] != '"'; i++ {
			if p[i] == '\\' && i+1 < n {
				i++
				switch p[i] {
				case 'n':
					sb.WriteByte('\n')
				case 't':
					sb.WriteByte('\t')
				default:
					sb.WriteByte(p[i])
				}
				continue
			}
			sb.WriteByte(p[i])
		}
		if i >= n {
			return "", i, false
		}
		return sb.String(), i + 1, true
	}
	inPrint := false
	for i := 0; i < n; i++ {
		c := p[i]
		switch {
		case c == '"':
			_, j, ok := str(i)
			if ok {
				// "cmd" | getline runs cmd.
				k := j
				for k < n && (p[k] == ' ' || p[k] == '\t') {
					k++
				}
				if k < n && p[k] == '|' && strings.HasPrefix(strings.TrimLeft(p[k+1:], " \t"), "getline") {
					s, _, _ := str(i)
					a.awkCommand(s, st)
					found = true
				}
				i = j - 1
			}
		case c == ';' || c == '\n' || c == '{' || c == '}':
			inPrint = false
		case identByte(c) && (i == 0 || !identByte(p[i-1])):
			j := i
			for j < n && identByte(p[j]) {
				j++
			}
			switch p[i:j] {
			case "print", "printf":
				inPrint = true
			case "system":
				k := j
				for k < n && (p[k] == ' ' || p[k] == '\t') {
					k++
				}
				if k < n && p[k] == '(' {
					found = true
					if s, e, ok := str(k + 1); ok && strings.HasPrefix(strings.TrimLeft(p[e:], " \t"), ")") {
						a.awkCommand(s, st)
					} else {
						a.res.Dynamic = true
					}
				}
			}
			i = j - 1
		case inPrint && (c == '>' || c == '|'):
			j := i + 1
			if c == '>' && j < n && p[j] == '>' {
				j++
			}
			found = true
			s, e, ok := str(j)
			switch {
			case !ok || strings.Contains(s, hole):
				a.res.Dynamic = true
			case c == '|':
				a.awkCommand(s, st)
			default:
				a.addWrite(s, st, HowAwk)
			}
			if ok {
				i = e - 1
			}
			inPrint = false
		}
	}
	return found
}

// awkCommand reads a command awk runs with sh -c.
func (a *analyzer) awkCommand(cmd string, st *walkState) {
	a.script(cmd, st, false)
}

// tar reports extraction (-x) and archive creation (-c/-r/-u with -f).
func (a *analyzer) tar(args []word, st *walkState) bool {
	// The first word may be a bundle of letters without a dash (tar xzf a.tar).
	if len(args) > 0 && args[0].lit && args[0].val != "" && !strings.HasPrefix(args[0].val, "-") &&
		strings.Trim(args[0].val, "AcdrtuxfvzjJaZpPkmOSwWhHlLmnC") == "" {
		args = append([]word{litArg("-" + args[0].val)}, args[1:]...)
	}
	opts, ops := parseOptions(args, "fCbgHKLNTVX", []string{"file", "directory", "blocking-factor", "listed-incremental",
		"format", "starting-file", "tape-length", "newer", "newer-mtime", "files-from", "label", "exclude-from",
		"to-command", "transform", "xform", "exclude", "owner", "group", "mode", "mtime", "use-compress-program",
		"suffix", "backup", "rmt-command", "rsh-command", "volno-file", "info-script", "new-volume-script",
		"checkpoint-action", "record-size", "sparse-version", "strip-components", "occurrence", "pax-option",
		"quoting-style", "hole-detection", "index-file", "anchored", "level", "warning", "one-top-level",
		"atime-preserve", "owner-map", "group-map", "clamp-mtime", "sort", "xattrs-include", "xattrs-exclude"}, true)
	extract, create := false, false
	var file *word
	dir := litArg(".")
	for _, o := range opts {
		switch o.name {
		case "-x", "--extract", "--get":
			extract = true
		case "-c", "--create", "-r", "--append", "-u", "--update", "-A", "--catenate", "--concatenate", "--delete":
			create = true
		case "-f", "--file":
			v := o.val
			file = &v
		case "-C", "--directory":
			dir = o.val
		case "--to-command":
			a.res.Dynamic = true
		}
	}
	switch {
	case extract:
		if hasOpt(opts, "-O", "--to-stdout") {
			return false
		}
		if len(ops) == 0 {
			a.writeArg(dir, st, HowTarExtract) // the whole archive: anything beneath
		}
		for _, m := range ops {
			if dir.lit && m.lit && dir.val != "." && !isAbs(m.val) {
				m = litArg(path.Join(dir.val, m.val))
			} else if !dir.lit {
				m = word{src: dir.src + "/" + m.src}
			}
			a.writeArg(m, st, HowTarExtract)
		}
		return true
	case create && file != nil:
		if !(file.lit && file.val == "-") {
			a.writeArg(*file, st, HowTarCreate)
		}
		return true
	}
	return false
}

// extractDir reports an extraction into a directory (unzip -d, cpio -D).
func (a *analyzer) extractDir(name string, args []word, st *walkState) bool {
	switch name {
	case "unzip":
		opts, _ := parseOptions(args, "dxP", []string{}, true)
		if hasOpt(opts, "-l", "-p", "-t", "-v", "-Z", "-z") {
			return false
		}
		dir := litArg(".")
		for _, o := range opts {
			if o.name == "-d" {
				dir = o.val
			}
		}
		a.writeArg(dir, st, HowUnzip)
		return true
	case "cpio":
		opts, _ := parseOptions(args, "DEFHIMORsCe", []string{"directory", "pattern-file", "file", "format", "message",
			"owner", "rename-batch-file", "block-size", "io-size"}, true)
		if !hasOpt(opts, "-i", "--extract") {
			if hasOpt(opts, "-o", "--create", "-p", "--pass-through") {
				for _, o := range opts {
					if o.name == "-O" || o.name == "-F" || o.name == "--file" {
						a.writeArg(o.val, st, HowCpio)
					}
				}
			}
			return false
		}
		dir := litArg(".")
		for _, o := range opts {
			if o.name == "-D" || o.name == "--directory" {
				dir = o.val
			}
		}
		a.writeArg(dir, st, HowCpio)
		return true
	}
	return false
}

// patch writes its file operand or -o FILE; without either the files come
// from the patch text, which DES does not read: Dynamic.
func (a *analyzer) patch(args []word, st *walkState) bool {
	opts, ops := parseOptions(args, "BDFiopruVYzdg", []string{"prefix", "ifdef", "fuzz", "input", "output", "strip",
		"reject-file", "suffix", "version-control", "basename-prefix", "directory", "get", "quoting-style", "read-only"}, true)
	at := st
	out := false
	for _, o := range opts {
		switch o.name {
		case "-d", "--directory":
			at = a.cd(at, o.val)
		case "-o", "--output":
			a.writeArg(o.val, st, HowPatch)
			out = true
		case "--dry-run":
			return false
		}
	}
	if len(ops) > 0 {
		a.writeArg(ops[0], at, HowPatch)
	} else if !out {
		a.res.Dynamic = true
	}
	return true
}

// editor reports the file operands of ed and ex, and of vim/vi/nvim when
// they run commands (-c, +cmd, -s, -e, -E, --cmd): an agent's non-interactive edit.
func (a *analyzer) editor(name string, args []word, st *walkState) bool {
	opts, ops := parseOptions(args, "cSTuiwWoOpr", []string{"cmd"}, true)
	scripted := name == "ed" || name == "ex" || name == "red"
	for _, o := range opts {
		switch o.name {
		case "-c", "-S", "-s", "-e", "-E", "--cmd", "-es", "-Es":
			scripted = true
		}
	}
	var files []word
	for _, op := range ops {
		if op.lit && strings.HasPrefix(op.val, "+") {
			scripted = true
			continue
		}
		files = append(files, op)
	}
	if !scripted {
		return false
	}
	for _, f := range files {
		a.writeArg(f, st, HowEditor)
	}
	return true
}

// compress reports gzip and its kin: FILE is replaced by FILE.gz (or the
// reverse), unless the output goes to stdout or nothing is written.
func (a *analyzer) compress(args []word, st *walkState) bool {
	opts, ops := parseOptions(args, "bSFT", []string{"suffix", "format", "threads"}, true)
	if hasOpt(opts, "-c", "--stdout", "--to-stdout", "-l", "--list", "-t", "--test") {
		return false
	}
	for _, op := range ops {
		a.writeArg(op, st, HowCompress)
	}
	return len(ops) > 0
}

// split reports the pieces of split and csplit as a pattern.
func (a *analyzer) split(name string, args []word, st *walkState) bool {
	prefix := "x"
	var opts []opt
	var ops []word
	if name == "csplit" {
		prefix = "xx"
		opts, ops = parseOptions(args, "bfn", []string{"suffix-format", "prefix", "digits"}, true)
		for _, o := range opts {
			if o.name == "-f" || o.name == "--prefix" {
				if !o.val.lit {
					a.writeArg(o.val, st, HowSplit)
					return true
				}
				prefix = o.val.val
			}
		}
	} else {
		opts, ops = parseOptions(args, "abClnt", []string{"suffix-length", "additional-suffix", "bytes", "line-bytes",
			"lines", "number", "separator", "filter"}, true)
		if hasOpt(opts, "--filter") {
			a.res.Dynamic = true
		}
		if len(ops) > 1 {
			if !ops[1].lit {
				a.writeArg(ops[1], st, HowSplit)
				return true
			}
			prefix = ops[1].val
		}
	}
	a.put(globQuote(prefix)+"*", st, HowSplit, true, false)
	return true
}

// globQuote escapes the metacharacters of a literal for a pattern.
func globQuote(s string) string {
	e := &expansion{}
	e.quoted(s)
	return e.pat.String()
}

// script FILE records a terminal session into FILE; -c runs a command.
func (a *analyzer) scriptCmd(args []word, st *walkState) bool {
	opts, ops := parseOptions(args, "cEIOBTtm", []string{"command", "echo", "log-in", "log-out", "log-io", "log-timing",
		"logging-format", "output-limit"}, true)
	for _, o := range opts {
		switch o.name {
		case "-c", "--command":
			a.script(scriptOf(o.val), st, !o.val.lit)
		case "-I", "-O", "-B", "-T", "--log-in", "--log-out", "--log-io", "--log-timing":
			a.writeArg(o.val, st, HowScript)
		}
	}
	if len(ops) == 0 {
		a.addWrite("typescript", st, HowScript)
	} else {
		a.writeArg(ops[0], st, HowScript)
	}
	return true
}
