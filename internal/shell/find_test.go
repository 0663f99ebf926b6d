package shell

import "testing"

// fnmatch is find's matcher: * spans / and leading dots, classes negate
// with ! or ^, \ quotes, and what DES cannot read matches everything.
func TestFnmatch(t *testing.T) {
	cases := []struct {
		pattern, s string
		fold, want bool
	}{
		{"*.pyc", "a.pyc", false, true},
		{"*.pyc", ".hidden.pyc", false, true},
		{"*.pyc", "a.py", false, false},
		{"*.json", "config.json", false, true},
		{"./build/*", "./build/x/y.o", false, true},
		{"*/steps/*", "./docs/steps/01-01.json", false, true},
		{"a?c", "abc", false, true},
		{"a?c", "ac", false, false},
		{"[!a]*", "b.json", false, true},
		{"[!a]*", "a.json", false, false},
		{"[^a]*", "a.json", false, false},
		{"[a-c]x", "bx", false, true},
		{"[]a]x", "]x", false, true},
		{`\*.txt`, "*.txt", false, true},
		{`\*.txt`, "a.txt", false, false},
		{"[abc", "[abc", false, true},
		{"*.LOG", "x.log", true, true},
		{"*.LOG", "x.log", false, false},
		{"[[:digit:]]*", "anything", false, true},
		{"*a*b*c", "xxaxxbxxc", false, true},
		{"*a*b*c", "xxaxxcxxb", false, false},
		{"", "", false, true},
		{"é*", "été", false, true},
	}
	for _, c := range cases {
		if got := fnmatch(c.pattern, c.s, c.fold); got != c.want {
			t.Errorf("fnmatch(%q, %q, %v) = %v, want %v", c.pattern, c.s, c.fold, got, c.want)
		}
	}
}

// -name matches the last element (a start's trailing slashes dropped),
// -path the whole path as find prints it.
func TestFindTestMatch(t *testing.T) {
	cases := []struct {
		test FindTest
		p    string
		want bool
	}{
		{FindTest{"-name", "*.json"}, "./.des/config.json", true},
		{FindTest{"-name", "*.json"}, "./.des", false},
		{FindTest{"-name", "src"}, "src/", true},
		{FindTest{"-name", "."}, ".", true},
		{FindTest{"-iname", "*.JSON"}, "./a/b.json", true},
		{FindTest{"-path", "./build/*"}, "./build/steps/01-01.json", true},
		{FindTest{"-path", "./build/*"}, "./docs/steps/01-01.json", false},
		{FindTest{"-ipath", "*/BUILD/*"}, "./build/x", true},
		{FindTest{"-wholename", "*/x"}, "a/x", true},
	}
	for _, c := range cases {
		if got := c.test.Match(c.p); got != c.want {
			t.Errorf("%v.Match(%q) = %v, want %v", c.test, c.p, got, c.want)
		}
	}
	if got := FindTests("-name *.pyc\n-path ./a b/*\n-regex x"); len(got) != 2 || got[1] != (FindTest{"-path", "./a b/*"}) {
		t.Errorf("FindTests = %v", got)
	}
}
