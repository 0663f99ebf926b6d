package shell

import (
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// FindTest is one of find's name tests that an entry must pass for a find
// -delete (or a writing -exec) to reach it. Analyze reports them in the
// Detail of the HowFindDelete write (see FindTests) when the expression is
// a plain conjunction: the action then runs only on entries that pass
// every test written before it.
type FindTest struct {
	Primary string // -name, -iname, -path, -ipath, -wholename or -iwholename
	Pattern string // the pattern as find reads it (fnmatch)
}

// findNameTests are the tests find matches against an entry's name or
// path, which DES can match without reading the entry.
var findNameTests = map[string]bool{"-name": true, "-iname": true, "-path": true, "-ipath": true, "-wholename": true, "-iwholename": true}

// FindTests reads the tests of a HowFindDelete write's Detail: none when
// the Detail is "" (the action may reach every entry under the start).
func FindTests(detail string) []FindTest {
	if detail == "" {
		return nil
	}
	var out []FindTest
	for _, line := range strings.Split(detail, "\n") {
		primary, pattern, ok := strings.Cut(line, " ")
		if ok && findNameTests[primary] {
			out = append(out, FindTest{Primary: primary, Pattern: pattern})
		}
	}
	return out
}

// Match reports whether an entry find names p (the start point as given
// joined with the path below it, as find prints it) may pass the test.
// -name and -iname match p's last element, the others the whole of p, as
// fnmatch without FNM_PATHNAME or FNM_PERIOD (`*` matches a `/` and a
// leading dot). A pattern DES cannot read (a character class such as
// [:alpha:]) matches everything.
func (t FindTest) Match(p string) bool {
	subject := p
	if t.Primary == "-name" || t.Primary == "-iname" {
		if trimmed := strings.TrimRight(p, "/"); trimmed != "" {
			subject = path.Base(trimmed)
		} else if p != "" {
			subject = "/"
		}
	}
	fold := strings.HasPrefix(t.Primary, "-i")
	return fnmatch(t.Pattern, subject, fold)
}

// findArity is how many arguments a find primary takes (GNU and BSD find).
// A primary missing here makes the expression one DES does not read.
var findArity = map[string]int{
	"-depth": 0, "-d": 0, "-xdev": 0, "-mount": 0, "-noleaf": 0, "-ignore_readdir_race": 0, "-noignore_readdir_race": 0,
	"-daystart": 0, "-empty": 0, "-executable": 0, "-readable": 0, "-writable": 0, "-nogroup": 0, "-nouser": 0,
	"-true": 0, "-false": 0, "-print": 0, "-print0": 0, "-ls": 0, "-prune": 0, "-quit": 0, "-a": 0, "-and": 0, "-x": 0,
	"-name": 1, "-iname": 1, "-path": 1, "-ipath": 1, "-wholename": 1, "-iwholename": 1, "-regex": 1, "-iregex": 1,
	"-lname": 1, "-ilname": 1, "-newer": 1, "-anewer": 1, "-cnewer": 1, "-perm": 1, "-type": 1, "-xtype": 1,
	"-user": 1, "-group": 1, "-uid": 1, "-gid": 1, "-size": 1, "-mtime": 1, "-atime": 1, "-ctime": 1, "-mmin": 1,
	"-amin": 1, "-cmin": 1, "-Bmin": 1, "-Btime": 1, "-links": 1, "-inum": 1, "-samefile": 1, "-used": 1, "-fstype": 1,
	"-context": 1, "-maxdepth": 1, "-mindepth": 1, "-regextype": 1, "-printf": 1, "-files0-from": 1,
}

// findPrimaryArity is findArity with -newerXY (GNU's -newermt and the like).
func findPrimaryArity(v string) (int, bool) {
	if n, ok := findArity[v]; ok {
		return n, true
	}
	if len(v) == len("-newerXY") && strings.HasPrefix(v, "-newer") {
		return 1, true
	}
	return 0, false
}

// find reads find's start points and expression: -fprint and the like
// write their file; -delete, and an -exec that writes its {}, write the
// entries the expression reaches under each start point. When the
// expression is one DES reads whole (no parentheses, no unknown or
// computed primary, no link following), the
// name tests before such an action in its branch (a top-level -o, -or or
// "," starts a new one) are reported in the write's Detail (FindTests):
// only entries passing them are written. A negated test (!
// -path x) restricts nothing and is left out; -regex and other tests are
// further restrictions DES does not use, which keeps the answer a superset.
func (a *analyzer) find(args []word, st *walkState) bool {
	var starts []word
	plain := true
	k := 0
	for ; k < len(args); k++ {
		arg := args[k]
		if arg.lit && (arg.val == "-H" || arg.val == "-L" || arg.val == "-P" || strings.HasPrefix(arg.val, "-O") || arg.val == "-D") {
			if arg.val == "-D" {
				k++
			}
			if arg.val == "-L" || arg.val == "-H" {
				plain = false // links are followed where DES's look at the disk does not
			}
			continue
		}
		break
	}
	for ; k < len(args); k++ {
		arg := args[k]
		if arg.lit && (strings.HasPrefix(arg.val, "-") || arg.val == "(" || arg.val == "!" || arg.val == ",") {
			break
		}
		starts = append(starts, arg)
	}
	if len(starts) == 0 {
		starts = []word{litArg(".")}
	}
	writer := false
	var tests []string   // the usable name tests met so far, as Detail lines
	var actions []string // the Detail of each writing action: the tests before it
	negate := false
	for i := k; i < len(args); i++ {
		arg := args[i]
		if !arg.lit {
			plain = false // a computed primary: DES cannot tell what it is
			continue
		}
		neg := negate
		negate = false
		switch v := arg.val; {
		case v == "!" || v == "-not":
			negate = true
		case v == "-o" || v == "-or" || v == ",":
			// Top-level alternatives (no parentheses): an action runs on
			// the entries that pass the tests before it in its own
			// branch; `-a` binds tighter than `-o`, and `,` evaluates
			// both sides. So `find . -path ./vendor -prune -o -name
			// '*.pyc' -delete` deletes only what -name '*.pyc' matches.
			tests = nil
		case v == "(" || v == ")" || v == "-follow":
			plain = false
		case v == "-delete":
			actions = append(actions, strings.Join(tests, "\n"))
		case v == "-fprint" || v == "-fprint0" || v == "-fls" || v == "-fprintf":
			if i+1 < len(args) {
				a.writeArg(args[i+1], st, HowFind)
				writer = true
				i++
			}
			if v == "-fprintf" {
				i++
			}
		case v == "-exec" || v == "-execdir" || v == "-ok" || v == "-okdir":
			j := i + 1
			for j < len(args) && !(args[j].lit && (args[j].val == ";" || args[j].val == "+")) {
				j++
			}
			m := a.mark()
			dynamic := a.res.Dynamic
			a.res.Dynamic = false // to tell whether this command alone makes the answer Dynamic
			a.run(placeholders(args[i+1:j], "{}"), st, callInfo{xargs: true})
			if a.changed(m) || a.res.Dynamic {
				detail := strings.Join(tests, "\n")
				if !a.writesOnlyFound(m) {
					detail = "" // it writes something else than the entry found: every entry below
				}
				actions = append(actions, detail)
			}
			a.res.Dynamic = a.res.Dynamic || dynamic
			i = j
		case findNameTests[v]:
			if i+1 < len(args) {
				if p := args[i+1]; !neg && findPattern(p) && !(len(st.links) > 0 && v != "-name" && v != "-iname") {
					// A -path test names the path as find prints it, which a
					// link made earlier in the command would change.
					tests = append(tests, v+" "+p.val)
				}
			}
			i++
		default:
			n, ok := findPrimaryArity(v)
			if !ok {
				plain = false
			}
			i += n
		}
	}
	if len(actions) == 0 {
		return writer
	}
	if !plain || containsString(actions, "") {
		actions = []string{""}
	}
	for _, d := range actions {
		a.detail = d
		for _, s := range starts {
			a.writeArg(s, st, HowFindDelete)
		}
	}
	a.detail = ""
	return true
}

// findPattern reports whether the word is a pattern find will read as DES
// reads it: literal, without a line break (the Detail's separator); an
// unquoted glob the shell may expand only to names it matches, unless a
// quoted part was escaped in it.
func findPattern(w word) bool {
	if strings.Contains(w.val, "\n") {
		return false
	}
	return w.lit || w.glob && !strings.Contains(w.val, `\`)
}

// writesOnlyFound reports whether what the command run by -exec added since
// m is only writes of the entry found ({} as a whole word) or of literal
// paths (reported as themselves), and nothing Dynamic otherwise.
func (a *analyzer) writesOnlyFound(m marker) bool {
	found := false
	for _, w := range a.res.Writes[m.writes:] {
		if w.Dynamic {
			if w.Path != "{}" || w.Glob {
				return false
			}
			found = true
		}
	}
	return found || !a.res.Dynamic
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// fnmatch matches s against a shell pattern as fnmatch(3) without flags:
// `*` matches any run of characters, `/` and a leading dot included; `?`
// one character; `[...]` a class (`!` or `^` negates, ranges); `\` quotes
// the next character. fold compares case-insensitively. A pattern with a
// named class ([:alpha:]) matches everything: DES reads it as wider than
// it is, never narrower.
func fnmatch(pattern, s string, fold bool) bool {
	if strings.Contains(pattern, "[:") || strings.Contains(pattern, "[=") || strings.Contains(pattern, "[.") {
		return true
	}
	if fold {
		pattern, s = strings.ToLower(pattern), strings.ToLower(s)
	}
	// The classic single-backtrack algorithm: a later * supersedes an
	// earlier one, since * matches across every character here.
	pi, si := 0, 0
	starP, starS := -1, 0
	for si < len(s) {
		if pi < len(pattern) {
			switch pattern[pi] {
			case '*':
				starP, starS = pi, si
				pi++
				continue
			case '?':
				_, n := utf8.DecodeRuneInString(s[si:])
				pi, si = pi+1, si+n
				continue
			case '[':
				r, n := utf8.DecodeRuneInString(s[si:])
				if ok, next, valid := matchClass(pattern, pi, r, fold); valid {
					if ok {
						pi, si = next, si+n
						continue
					}
				} else if s[si] == '[' { // an unclosed [ is itself
					pi, si = pi+1, si+1
					continue
				}
			default:
				pc, pn := utf8.DecodeRuneInString(pattern[pi:])
				if pc == '\\' && pi+1 < len(pattern) {
					pc, pn = utf8.DecodeRuneInString(pattern[pi+1:])
					pn++
				}
				if r, n := utf8.DecodeRuneInString(s[si:]); r == pc {
					pi, si = pi+pn, si+n
					continue
				}
			}
		}
		if starP < 0 {
			return false
		}
		_, n := utf8.DecodeRuneInString(s[starS:])
		starS += n
		pi, si = starP+1, starS
	}
	for pi < len(pattern) && pattern[pi] == '*' {
		pi++
	}
	return pi == len(pattern)
}

// matchClass matches r against the class starting at pattern[i] ('['). It
// returns whether r is in it, the index after it, and whether the class is
// closed (an unclosed [ is an ordinary character).
func matchClass(pattern string, i int, r rune, fold bool) (ok bool, next int, valid bool) {
	j := i + 1
	negated := false
	if j < len(pattern) && (pattern[j] == '!' || pattern[j] == '^') {
		negated = true
		j++
	}
	in := false
	first := true
	for j < len(pattern) {
		if pattern[j] == ']' && !first {
			return in != negated, j + 1, true
		}
		first = false
		lo, n := utf8.DecodeRuneInString(pattern[j:])
		if lo == '\\' && j+1 < len(pattern) {
			lo, n = utf8.DecodeRuneInString(pattern[j+1:])
			n++
		}
		j += n
		hi := lo
		if j+1 < len(pattern) && pattern[j] == '-' && pattern[j+1] != ']' {
			h, m := utf8.DecodeRuneInString(pattern[j+1:])
			if h == '\\' && j+2 < len(pattern) {
				h, m = utf8.DecodeRuneInString(pattern[j+2:])
				m++
			}
			hi = h
			j += 1 + m
		}
		if lo <= r && r <= hi || fold && (unicode.ToUpper(lo) <= unicode.ToUpper(r) && unicode.ToUpper(r) <= unicode.ToUpper(hi)) {
			in = true
		}
	}
	return false, 0, false
}
