package testrun

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// outsideProject says where the line's runner runs outside root, "" when
// every directory it changes to and every path it names lies inside it
// (links resolved). The line runs its runner alone: calls are its simple
// commands as alone gives them, the prefix commands, then the runner.
//
// Every word given to the runner is checked as a path, and so is an
// option's value: after "=", attached to a short option of the entry's
// path_options (mvn -f/x/pom.xml), or the next word. Only the value of an
// option of the entry's value_options is not (go test -o /tmp/x.test),
// for after any other option the word may be what the runner tests (go
// test -v /tmp/x/...). A word is read as a list (mocha --spec a,b) and as
// settings (pytest -o testpaths=/x): each part, and what follows an "=",
// is checked too; a word des cannot place (a JSON document, a brace
// pattern) is no pass.
func outsideProject(command string, calls [][]string, cwd, root string, r Runner) string {
	if strings.Contains(command, "CDPATH") {
		return "the line sets CDPATH, which moves cd where des cannot place"
	}
	realRoot := resolved(root)
	inside := func(p string) bool {
		rel, err := filepath.Rel(realRoot, resolved(p))
		return err == nil && filepath.IsLocal(rel) || rel == "."
	}
	dir := cwd
	if dir == "" {
		dir = root
	}
	for i, argv := range calls {
		if len(argv) == 0 {
			continue // NAME=VALUE alone
		}
		if i < len(calls)-1 {
			switch argv[0] {
			case "cd", "pushd":
				to, ok := cdTarget(argv[1:])
				if !ok || strings.ContainsAny(to, "*?[{") {
					return fmt.Sprintf("%s leaves the directory for one des cannot place", argv[0])
				}
				if dir = join(dir, to); !inside(dir) {
					return fmt.Sprintf("the tests run in %s, outside the project", dir)
				}
			case "source", ".":
				// A script sourced before the runner (a virtualenv's
				// activate) can redefine it: the project's own, or the
				// system's.
				if len(argv) > 1 && !inside(join(dir, argv[1])) && !systemPath(join(dir, argv[1])) {
					return fmt.Sprintf("the line sources %s, outside the project", argv[1])
				}
			}
			continue
		}
		u := unwrapAll(argv, dir)
		if u.moved && (strings.ContainsAny(u.dir, "*?[{") || !inside(u.dir)) {
			return fmt.Sprintf("the tests run in %s, outside the project", u.dir)
		}
		dir = u.dir
		rest := u.argv
		for _, v := range u.values {
			if why := checkWord(v, dir, inside); why != "" {
				return why
			}
		}
		if len(rest) == 0 {
			return ""
		}
		// The runner named by a path: the project's own, or the system's
		// (a path the agent cannot write); not one elsewhere.
		if strings.Contains(rest[0], "/") {
			if p := join(dir, rest[0]); !inside(p) && !systemPath(p) {
				return fmt.Sprintf("the runner %s is outside the project", rest[0])
			}
		}
		if why := r.outsideArgs(rest[1:], dir, inside); why != "" {
			return why
		}
	}
	if !inside(dir) {
		return fmt.Sprintf("the tests run in %s, outside the project", dir)
	}
	return ""
}

// cdTarget is the directory cd or pushd is given (its options passed
// over), false when des cannot place it: none (home), "-" (the last one),
// or one under "~".
func cdTarget(args []string) (string, bool) {
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
		if a == "-" || !strings.HasPrefix(a, "-") {
			args = args[i:]
			break
		}
		if i == len(args)-1 {
			args = nil
		}
	}
	if len(args) == 0 || args[0] == "-" || strings.HasPrefix(args[0], "~") {
		return "", false
	}
	return args[0], true
}

// outsideArgs checks the runner's words (after its name) run in dir.
func (r Runner) outsideArgs(args []string, dir string, inside func(string) bool) string {
	check := func(w string) string { return checkWord(w, dir, inside) }
	goTest := len(r.Command) > 0 && r.Command[0] == "go"
	words, _ := r.commandWords(args)
	for j := 0; j < len(args); j++ {
		a := args[j]
		if slices.Contains(words, j) {
			continue // the runner's own words: go test's "test", npm run's "run test:unit"
		}
		if r.endsArgs(a) {
			return "" // what follows is the test program's (go test -args, cargo test --)
		}
		if r.valueOption(a) && !strings.HasPrefix(a, "-") {
			continue // an attached form that is no option (dotnet test /p:X=Y)
		}
		if !strings.HasPrefix(a, "-") {
			if goTest && !goPathArg(a) {
				if why := goPackageOutside(a, dir); why != "" {
					return why
				}
				continue
			}
			if why := check(a); why != "" {
				return why
			}
			continue
		}
		name, v, eq := strings.Cut(a, "=")
		if goTest && strings.HasPrefix(name, "--") {
			name = name[1:] // go's flags take one dash or two
		}
		switch {
		case r.valueOption(name):
			// Its value, the next word, when the option is written alone
			// and not as an attached form (-Dx, which a glob lists); go's
			// flags take the next word whatever it is (go test -skip -args).
			if !eq && slices.Contains(r.ValueOptions, name) && j+1 < len(args) && (goTest || !strings.HasPrefix(args[j+1], "-")) {
				j++
			}
			continue
		case !eq && slices.Contains(r.PathOptions, name) && j+1 < len(args):
			j++
			a = args[j]
			if goTest && name == "-C" {
				if why := check(a); why != "" {
					return why
				}
				if strings.ContainsAny(a, "*?[{") {
					return fmt.Sprintf("go -C is given %s, which des cannot place", a)
				}
				dir = join(dir, a) // where go looks for the module
				continue
			}
		case eq:
			a = v
		case !goTest && len(name) > 2 && name[1] != '-':
			// A cluster of short options (pytest -qc FILE, -qcFILE): a path
			// option in it takes the rest of the word, or the next word.
			a = ""
			for k := 1; k < len(name); k++ {
				opt := "-" + name[k:k+1]
				if r.pathOption(opt) {
					if a = name[k+1:]; a == "" && j+1 < len(args) {
						j++
						a = args[j]
					}
					break
				}
				if r.valueOption(opt) {
					if k == len(name)-1 && j+1 < len(args) {
						j++ // its value, the next word
					}
					break
				}
			}
			if a == "" {
				continue
			}
		default:
			continue // a flag, or an option whose value, the next word, is checked as any word
		}
		if why := check(a); why != "" {
			return why
		}
	}
	return ""
}

// checkWord says why word w, given to the runner in dir, is outside the
// project, "" when every path it may name lies inside. It is read as a list
// (mocha --spec a,b) and as settings (pytest -o testpaths=/x, html:/x):
// each part, and what follows an "=", or a ":" before a path (not a URL's
// "://"), is checked. A brace pattern is checked alternative by
// alternative, a glob by what it matches there; a JSON document is no path
// des can place.
func checkWord(w, dir string, inside func(string) bool) string {
	if strings.HasPrefix(strings.TrimSpace(w), "{") && strings.Contains(w, ":") {
		return fmt.Sprintf("the runner is given %s, which des cannot place", w)
	}
	if alts := braces(w); len(alts) > 1 {
		for _, a := range alts {
			if why := checkWord(a, dir, inside); why != "" {
				return why
			}
		}
		return ""
	}
	if strings.ContainsAny(w, "{}") {
		return fmt.Sprintf("the runner is given %s, which des cannot place", w)
	}
	for _, part := range strings.Split(w, ",") {
		candidates := []string{part}
		for i := range len(part) {
			// After "=", and after ":" before a path (html:/tmp/cov), not
			// a URL's "://".
			if part[i] == '=' || part[i] == ':' && strings.HasPrefix(part[i+1:], "/") && !strings.HasPrefix(part[i+1:], "//") {
				candidates = append(candidates, part[i+1:])
			}
		}
		for _, c := range candidates {
			if c == "" {
				continue
			}
			p := join(dir, strings.TrimSuffix(c, "/..."))
			paths := []string{p}
			if strings.ContainsAny(c, "*?[") {
				if ms, err := filepath.Glob(p); err == nil && len(ms) > 0 {
					paths = ms // what the shell, or the runner, expands it to
				}
			}
			for _, q := range paths {
				if !inside(q) {
					return fmt.Sprintf("the runner is given %s, outside the project", w)
				}
			}
		}
	}
	return ""
}

// braces is w with its first brace group expanded ({a,b}c: ac, bc), each
// alternative expanded in turn; w alone when it has no group with a comma.
func braces(w string) []string {
	open := strings.IndexByte(w, '{')
	if open < 0 {
		return []string{w}
	}
	depth, comma := 0, false
	var parts []string
	start := open + 1
	for i := open; i < len(w); i++ {
		switch w[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				if !comma {
					return []string{w}
				}
				parts = append(parts, w[start:i])
				var out []string
				for _, p := range parts {
					out = append(out, braces(w[:open]+p+w[i+1:])...)
				}
				return out
			}
		case ',':
			if depth == 1 {
				comma = true
				parts = append(parts, w[start:i])
				start = i + 1
			}
		}
	}
	return []string{w}
}

// systemPath reports a path in the system's directories, which an agent's
// command cannot write (/usr/bin/python3, /usr/local/go/bin/go).
func systemPath(p string) bool {
	for _, d := range []string{"/usr/", "/bin/", "/sbin/", "/lib/", "/opt/", "/nix/store/", "/snap/"} {
		if strings.HasPrefix(p, d) {
			return true
		}
	}
	return false
}

// endsArgs reports a word after which the runner passes the rest to the
// test program: go test -args, cargo test --.
func (r Runner) endsArgs(a string) bool {
	if len(r.Command) == 0 {
		return false
	}
	switch r.Command[0] {
	case "go":
		return a == "-args" || a == "--args"
	case "cargo":
		return a == "--"
	}
	return false
}

// goPathArg reports a go test argument that names a directory (./x,
// ../x, /x, . or a pattern of one) rather than an import path.
func goPathArg(a string) bool {
	return a == "." || a == ".." || strings.HasPrefix(a, "./") || strings.HasPrefix(a, "../") || filepath.IsAbs(a) || strings.HasSuffix(a, ".go")
}

// goPackageOutside says why import path a (go test strings, go test
// example.com/shop/...) is not a package of the main module the go.mod
// above dir declares, "" when it is.
func goPackageOutside(a, dir string) string {
	mods := goModules(dir)
	if len(mods) == 0 {
		return fmt.Sprintf("go test is given the package %s, and des finds no go.mod or go.work above %s to tell whether it is the project's", a, dir)
	}
	p := strings.TrimSuffix(a, "/...")
	for _, mod := range mods {
		if p == mod || strings.HasPrefix(p, mod+"/") {
			return ""
		}
	}
	return fmt.Sprintf("go test is given the package %s, which is not in the project's modules %s", a, strings.Join(mods, ", "))
}

// goModules are the main modules go test works with in dir: those of the
// go.work above it (its use directives), else that of the nearest go.mod.
func goModules(dir string) []string {
	if work := above(dir, "go.work"); work != "" {
		var mods []string
		for _, d := range goWorkUses(work) {
			if m := goModuleOf(filepath.Join(filepath.Dir(work), d, "go.mod")); m != "" {
				mods = append(mods, m)
			}
		}
		return mods
	}
	if mod := above(dir, "go.mod"); mod != "" {
		if m := goModuleOf(mod); m != "" {
			return []string{m}
		}
	}
	return nil
}

// above is the path of the file name in dir or the nearest directory above
// it, "" when none has one.
func above(dir, name string) string {
	for d := dir; ; {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

// goWorkUses are the directories a go.work's use directives name.
func goWorkUses(path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []string
	block := false
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(strings.SplitN(line, "//", 2)[0])
		switch {
		case block && line == ")":
			block = false
		case block && line != "":
			out = append(out, strings.Trim(line, `"`))
		case line == "use (":
			block = true
		case strings.HasPrefix(line, "use "):
			out = append(out, strings.Trim(strings.TrimSpace(line[4:]), `"`))
		}
	}
	return out
}

// goModuleOf is the module path a go.mod declares, "" when it cannot be
// read or declares none.
func goModuleOf(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if rest, ok := strings.CutPrefix(line, "module"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// join is p taken from dir, as the system resolves it: each ".." after a
// link goes up from where the link leads (link/.. is the parent of the
// link's target, where cd -P, env -C, go -C and every program that opens
// the path land), not from the link.
func join(dir, p string) string {
	if !filepath.IsAbs(p) {
		p = dir + string(filepath.Separator) + p
	}
	cur := string(filepath.Separator)
	for _, part := range strings.Split(filepath.ToSlash(p), "/") {
		switch part {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		cur = filepath.Join(cur, part)
		if fi, err := os.Lstat(cur); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			if r, err := filepath.EvalSymlinks(cur); err == nil {
				cur = r
			}
		}
	}
	return cur
}

// resolved is p with its links resolved as far as it exists.
func resolved(p string) string {
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	parent, base := filepath.Split(p)
	if parent == "" || parent == p {
		return p
	}
	return filepath.Join(resolved(filepath.Clean(parent)), base)
}
