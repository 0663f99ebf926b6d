package testrun

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// outsideProject says where the line's runner runs outside root, "" when
// every directory it changes to and every path it names lies inside it
// (links resolved). The line runs its runner alone (alone passed): its
// statements are prefix commands and the runner, joined by && or ;.
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
func outsideProject(command, cwd, root string, r Runner) string {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
	if err != nil {
		return "the command does not parse"
	}
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
	var calls [][]string
	syntax.Walk(f, func(n syntax.Node) bool {
		if s, ok := n.(*syntax.Stmt); ok {
			if _, ok := s.Cmd.(*syntax.BinaryCmd); ok {
				return true
			}
			if argv, why := literalCall(s); why == "" && len(argv) > 0 {
				calls = append(calls, argv)
			}
			return false
		}
		return true
	})
	for i, argv := range calls {
		if i < len(calls)-1 {
			if argv[0] != "cd" && argv[0] != "pushd" {
				continue
			}
			to, ok := cdTarget(argv[1:])
			if !ok {
				return fmt.Sprintf("%s leaves the directory for one des cannot place", argv[0])
			}
			if dir = join(dir, to); !inside(dir) {
				return fmt.Sprintf("the tests run in %s, outside the project", dir)
			}
			continue
		}
		rest, in, moved := unwrapIn(argv, dir)
		if moved && !inside(in) {
			return fmt.Sprintf("the tests run in %s, outside the project", in)
		}
		dir = in
		if len(rest) == 0 {
			return ""
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
	check := func(w string) string {
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
				if p := join(dir, strings.TrimSuffix(c, "/...")); !inside(p) {
					return fmt.Sprintf("the runner is given %s, outside the project", w)
				}
			}
		}
		return ""
	}
	goTest := len(r.Command) > 0 && r.Command[0] == "go"
	words := r.commandWords(args)
	for j := 0; j < len(args); j++ {
		a := args[j]
		if words[j] {
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
		switch {
		case r.valueOption(name):
			// Its value, the next word, when the option is written alone
			// and not as an attached form (-Dx, which a glob lists).
			if !eq && r.takesNext(name, r.ValueOptions) && j+1 < len(args) && !strings.HasPrefix(args[j+1], "-") {
				j++
			}
			continue
		case !eq && r.takesNext(name, r.PathOptions) && j+1 < len(args):
			j++
			a = args[j]
			if goTest && name == "-C" {
				dir = join(dir, a) // where go looks for the module
			}
		case eq:
			a = v
		case len(name) > 2 && name[1] != '-' && r.pathOption(name[:2]):
			a = name[2:] // mvn -f/x/pom.xml
		default:
			continue // a flag, or an option whose value, the next word, is checked as any word
		}
		if why := check(a); why != "" {
			return why
		}
	}
	return ""
}

// commandWords are the indexes in args (the words after the command's
// name) of the entry's later command words, found as matches finds them.
func (r Runner) commandWords(args []string) map[int]bool {
	out := map[int]bool{}
	i := 0
	for _, p := range r.Command[1:] {
		if !strings.HasPrefix(p, "-") {
			for i < len(args) && strings.HasPrefix(args[i], "-") {
				if r.skipsValue(args[i]) {
					i++
				}
				i++
			}
		}
		if i >= len(args) {
			break
		}
		out[i] = true
		i++
	}
	return out
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

// takesNext reports whether option name, as the entry's list (value or
// path options) holds it, takes the next word as its value: an entry
// written out (-o), not a glob, which lists attached forms (-D*).
func (r Runner) takesNext(name string, list []string) bool {
	for _, g := range list {
		if g == name {
			return true
		}
	}
	return false
}

// goPathArg reports a go test argument that names a directory (./x,
// ../x, /x, . or a pattern of one) rather than an import path.
func goPathArg(a string) bool {
	return a == "." || a == ".." || strings.HasPrefix(a, "./") || strings.HasPrefix(a, "../") || filepath.IsAbs(a)
}

// goPackageOutside says why import path a (go test strings, go test
// example.com/shop/...) is not a package of the main module the go.mod
// above dir declares, "" when it is.
func goPackageOutside(a, dir string) string {
	mod := goModule(dir)
	if mod == "" {
		return fmt.Sprintf("go test is given the package %s, and des finds no go.mod above %s to tell whether it is the project's", a, dir)
	}
	p := strings.TrimSuffix(a, "/...")
	if p == mod || strings.HasPrefix(p, mod+"/") {
		return ""
	}
	return fmt.Sprintf("go test is given the package %s, which is not in the project's module %s", a, mod)
}

// goModule is the module path of the go.mod in dir or the nearest
// directory above it, "" when none is found or it declares none.
func goModule(dir string) string {
	for d := dir; ; {
		if f, err := os.Open(filepath.Join(d, "go.mod")); err == nil {
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
		parent := filepath.Dir(d)
		if parent == d {
			return ""
		}
		d = parent
	}
}

// join is p taken from dir, cleaned.
func join(dir, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
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
