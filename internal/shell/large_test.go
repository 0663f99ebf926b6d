package shell

import (
	"regexp"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/internal/testenv"
)

// bigShapes are 2 MiB commands of the shapes that made the parser or the
// walk slow (deep chains, deep expressions, a million statements).
func bigShapes() map[string]string {
	const n = 2 << 20
	rep := func(s string) string { return strings.Repeat(s, n/len(s)) }
	return map[string]string{
		"statements":     rep("echo a > out.json; "),
		"lines":          rep("a\n") + "touch out.json",
		"words":          "echo " + rep("aaaa ") + "> out.json",
		"and chain":      rep("true && ") + "touch out.json",
		"pipeline":       rep("a | ") + "tee out.json",
		"test chain":     "[[ " + rep("a && ") + "b ]] > out.json",
		"arithmetic":     "echo $((" + rep("1+") + "1)) > out.json",
		"let":            "let " + rep("1+") + "1; touch out.json",
		"substitutions":  rep("$(a) ") + "> out.json",
		"cds":            rep("cd a; ") + "touch out.json",
		"ifs":            rep("if a; then cd b; fi; ") + "touch out.json",
		"assignments":    rep("x=1; ") + "touch out.json",
		"here-document":  "cat > out.json <<'EOF'\n" + rep("line $x\n") + "EOF\n",
		"unquoted hdoc":  "cat > out.json <<EOF\n" + rep("line $x\n") + "EOF\n",
		"python -c":      "python3 -c '" + rep("x = 1\n") + "'; touch out.json",
		"nested scripts": "bash -c '" + rep("echo a > out.json; ") + "'",
	}
}

// A 2 MiB command is analysed in one linear pass: the parser is given
// only commands whose tokens and nesting are bounded (maxTokens,
// maxNesting); larger ones get the rough scan, which still finds the
// write. (No timing here: BenchmarkAnalyzeLarge measures it; the test
// binary's own timeout catches a regression to the minutes it took.)
func TestAnalyzeLarge(t *testing.T) {
	testenv.Long(t)
	for name, cmd := range bigShapes() {
		r := Analyze(cmd)
		found := false
		for _, w := range r.Writes {
			found = found || w.Path == "out.json"
		}
		if !found {
			t.Errorf("%s: no write of out.json in %.300v (ParseError %q)", name, r.Writes, r.ParseError)
		}
		checkInvariants(t, name, r)
	}
}

// The measure before parsing counts what makes the parser deep or slow.
func TestMeasure(t *testing.T) {
	cases := []struct {
		src              string
		depth, tokensMax int
	}{
		{"echo a", 0, 2},
		{"(a (b (c)))", 3, 10},
		{"[[ a && b && c ]]", 6, 20},
		{"echo $((1+2*3))", 4, 20},
		{"let x=1+2", 3, 10},
		{"let x=1+2; y-z", 3, 10},
		{"cat <<'EOF'\n(((((( a + b\nEOF\n", 0, 5},
		{"if a; then b; fi", 1, 10},
		{"grep '\\[' f\nls -la -h -x -y", 1, 20},
	}
	for _, c := range cases {
		m := measureSrc(c.src)
		if m.depth != c.depth || m.tokens > c.tokensMax {
			t.Errorf("measureSrc(%q) = %+v, want depth %d and at most %d tokens", c.src, m, c.depth, c.tokensMax)
		}
	}
	for name, cmd := range bigShapes() {
		if name == "here-document" || name == "python -c" {
			continue // one token each: parsed
		}
		if msg := tooBig(cmd); msg == "" {
			t.Errorf("%s: parsed, want the rough scan", name)
		}
	}
}

func BenchmarkAnalyzeLarge(b *testing.B) {
	for name, cmd := range bigShapes() {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(cmd)))
			for b.Loop() {
				Analyze(cmd)
			}
		})
	}
}

var safePath = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_./-]{0,64}$`)

// FuzzRedirectFound: a command that parses, followed by a literal
// redirection to a path, reports a write of that path whatever the
// command before it does (exit, cd, functions, here-documents...).
func FuzzRedirectFound(f *testing.F) {
	for _, c := range testCases {
		if len(c.cmd) < 512 {
			f.Add(c.cmd, "out.json")
		}
	}
	f.Add("exit 0", ".des/state.json")
	f.Add("cd /tmp || exit", "x")
	f.Add("echo() { :; }", "y.json")
	f.Fuzz(func(t *testing.T, pre, p string) {
		if !safePath.MatchString(p) || strings.HasPrefix(p, "/dev/") || strings.Contains(p, "..") {
			return
		}
		if _, err := parseBash(pre); err != nil || strings.Contains(pre, "\\") {
			return
		}
		cmd := pre + "\necho x > " + p + "\n"
		if _, err := parseBash(cmd); err != nil {
			return // pre left something open (a here-document)
		}
		r := Analyze(cmd)
		for _, w := range r.Writes {
			if w.Path == p && w.How == HowRedirect {
				return
			}
		}
		t.Fatalf("Analyze(%q): no redirect write of %q in %v", cmd, p, r.Writes)
	})
}
