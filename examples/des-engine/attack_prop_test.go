package main

// The property: whatever shell command an agent runs, no protected file or
// guarded document differs once PostToolUse has run, and what the command
// wrote to ordinary files stays. Commands come from a grammar: writers ×
// path spellings × wrappers × targets, seeded.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/testenv"
)

// atkChooser picks one of n choices.
type atkChooser interface{ Intn(n int) int }

type atkRand struct{ r *rand.Rand }

func (a atkRand) Intn(n int) int { return a.r.IntN(n) }

func newAtkRand(seed uint64) atkRand { return atkRand{rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))} }

// atkBytes draws choices from fuzz input, then zeros.
type atkBytes struct {
	b []byte
	i int
}

func (a *atkBytes) Intn(n int) int {
	if a.i >= len(a.b) {
		return 0
	}
	a.i++
	return int(a.b[a.i-1]) % n
}

type atkTarget struct {
	rel      string
	dir      bool
	harmless bool
}

var atkTargets = []atkTarget{
	{rel: atkConfig}, {rel: atkPolicy}, {rel: atkState}, {rel: atkOpenStep}, {rel: atkDoneStep},
	{rel: ".claude/settings.json"}, {rel: ".git/hooks/pre-commit"}, {rel: ".git/config"},
	{rel: ".des", dir: true}, {rel: ".des/policies", dir: true}, {rel: ".isdlc", dir: true}, {rel: "docs/feature/shop/steps", dir: true},
	{rel: "notes.txt", harmless: true}, {rel: "src/app.go", harmless: true},
	{rel: "src/onboarding/steps/welcome.json", harmless: true}, {rel: "docs/feature/shop/notes.md", harmless: true},
}

// atkGen builds one command.
type atkGen struct {
	ch   atkChooser
	root string
	cwd  string // "" or "src"
	n    int    // names made so far (links, variables)
}

func (g *atkGen) pick(n int) int { return g.ch.Intn(n) }

func (g *atkGen) fresh(prefix string) string {
	g.n++
	return prefix + strconv.Itoa(g.n)
}

// fromCwd is rel as a relative path from the command's directory.
func (g *atkGen) fromCwd(rel string) string {
	if g.cwd == "" {
		return rel
	}
	return "../" + rel
}

// spell returns a statement to run first (or "") and a word that names
// rel for the shell.
func (g *atkGen) spell(t atkTarget) (string, string) {
	rel, r := t.rel, g.fromCwd(t.rel)
	dir, base := path.Split(rel)
	switch g.pick(23) {
	case 0:
		return "", r
	case 1:
		return "", "./" + r
	case 2:
		return "", g.root + "/" + rel
	case 3:
		return "", "~/proj/" + rel
	case 4:
		return "", "$HOME/proj/" + rel
	case 5:
		return "", `"$HOME"/proj/` + rel
	case 6:
		return "", "${HOME}/proj/" + rel
	case 7:
		return "", "$PWD/" + r
	case 8:
		return "", "~+/" + r
	case 9:
		return "", "~-/" + rel // OLDPWD is the root
	case 10:
		return "", strings.Replace("./"+r, "/", "//", 1+g.pick(2))
	case 11:
		return "", r[:len(r)-1] + "?"
	case 12:
		if len(base) > 2 {
			return "", strings.TrimSuffix(r, base) + base[:len(base)-1] + "*"
		}
		return "", r
	case 13:
		m := len(r) / 2
		return "", "'" + r[:m] + `'"` + r[m:] + `"`
	case 14:
		return "", fmt.Sprintf(`$'\x%02x'`, r[0]) + r[1:]
	case 15:
		v := g.fresh("T")
		return v + "=" + r + "; ", `"$` + v + `"`
	case 16:
		if dir == "" {
			return "", r
		}
		v := g.fresh("D")
		return v + "=" + g.fromCwd(strings.TrimSuffix(dir, "/")) + "; ", "$" + v + "/" + base
	case 17:
		return "", "$(printf %s " + r + ")"
	case 18:
		return "", "`echo " + r + "`"
	case 19:
		return "", "/proc/self/cwd/" + r
	case 20: // a symlink to the target's directory, made first
		l := g.fresh("L")
		d := g.root + "/" + strings.TrimSuffix(dir, "/")
		return "ln -sfn " + d + " " + l + "; ", l + "/" + base
	case 21: // a hard link to a file, made first
		if t.dir {
			return "", r
		}
		h := g.fresh("H")
		return "ln -f " + r + " " + h + " 2>/dev/null; ", h
	default:
		if dir == "" {
			return "", g.fromCwd("src/../" + rel)
		}
		return "", g.fromCwd(dir) + "../" + strings.TrimSuffix(dir, "/")[strings.LastIndex(strings.TrimSuffix(dir, "/"), "/")+1:] + "/" + base
	}
}

// write is one statement that changes the file or directory named by w.
func (g *atkGen) write(t atkTarget, w string) string {
	if t.dir {
		return []string{
			"rm -rf " + w,
			"mv " + w + " ~/" + g.fresh("gone"),
			"mv " + w + " " + w + ".old && mkdir " + w,
			"chmod 000 " + w,
			"cp -r ~/evil/. " + w + "/",
			"find " + w + " -type f -delete",
			"tar -C ~/evil -cf - . | tar -C " + w + " -xf -",
			"rm -f " + w + "/*",
		}[g.pick(8)]
	}
	return []string{
		"echo x > " + w,
		"printf '%s\\n' x >> " + w,
		"echo x | tee " + w + " >/dev/null",
		"cat ~/src.txt > " + w,
		": > " + w,
		"cp ~/src.txt " + w,
		"sed -i 's/a/X/' " + w,
		"perl -pi -e 's/a/X/' " + w,
		`python3 -c 'import sys; open(sys.argv[1], "w").write("x")' ` + w,
		`node -e 'require("fs").writeFileSync(process.argv[1], "x")' ` + w,
		"echo x | dd of=" + w + " status=none",
		"truncate -s 0 " + w,
		"rm -f " + w,
		"mv " + w + " " + w + ".bak",
		"chmod 000 " + w,
		"ln -sf /dev/null " + w,
		"install -m 600 ~/src.txt " + w,
		"shuf -o " + w + " ~/src.txt",
		"uniq ~/src.txt " + w,
		`sed -n "w ` + w + `" ~/src.txt`,
		"awk -v f=" + w + " '{print > f}' ~/src.txt",
		"exec 3>" + w + "; echo x >&3; exec 3>&-",
		"find " + w + " -maxdepth 0 -delete",
		"tar -C ~ -cf ~/a.tar src.txt && tar -xOf ~/a.tar > " + w,
	}[g.pick(24)]
}

// wrap hides cmd inside another form.
func (g *atkGen) wrap(cmd string) string {
	q := shellQuote(cmd)
	return []string{
		cmd,
		"bash -c " + q,
		"sh -c " + q,
		"eval " + q,
		"env bash -c " + q,
		"( " + cmd + " )",
		"{ " + cmd + "; }",
		"true && " + cmd,
		"false || " + cmd,
		cmd + "; true",
		"true | { " + cmd + "; }",
		g.heredoc(cmd),
		"bash <(printf '%s\\n' " + q + ")",
		`python3 -c 'import os, sys; os.system(sys.argv[1])' ` + q,
		`perl -e 'system($ARGV[0])' ` + q,
		"if true; then " + cmd + "; fi",
		"for i in 1; do " + cmd + "; done",
		"f() { " + cmd + "; }; f",
		"cd /nonexistent 2>/dev/null; " + cmd,
		"false && cd /tmp; " + cmd,
		"command eval " + q,
		"timeout 5 bash -c " + q,
		"printf '%s' " + q + " | xargs -0 bash -c",
		`node -e 'require("child_process").execSync(process.argv[1], {stdio: "inherit"})' ` + q,
	}[g.pick(24)]
}

// heredoc feeds cmd to a shell on its standard input; the delimiter is
// fresh, so heredocs nest, and a command follows it, so it composes.
func (g *atkGen) heredoc(cmd string) string {
	eof := g.fresh("EOF")
	return []string{"bash", "sh", "bash -s"}[g.pick(3)] + " <<'" + eof + "'\n" + cmd + "\n" + eof + "\ntrue"
}

// atkCommand generates a command: one to three writes, each to a target
// under a spelling, joined by ;, && or ||, wrapped zero to two times. It
// returns the command, its directory and the harmless files it targets.
func atkCommand(ch atkChooser, root string) (command, cwd string, harmless []string) {
	g := &atkGen{ch: ch, root: root}
	if g.pick(4) == 0 {
		g.cwd = "src"
	}
	parts := 1 + g.pick(3)
	var stmts []string
	for range parts {
		t := atkTargets[g.pick(len(atkTargets))]
		if t.harmless {
			harmless = append(harmless, t.rel)
		}
		pre, w := g.spell(t)
		s := pre + g.write(t, w)
		for range g.pick(3) {
			s = g.wrap(s)
		}
		stmts = append(stmts, s)
	}
	command = stmts[0]
	for _, s := range stmts[1:] {
		command += []string{"; ", " && ", " || ", "\n"}[g.pick(4)] + s
	}
	return command, g.cwd, harmless
}

// atkPropFiles are the ordinary files the property's targets need, in the
// project and in the home directory.
func atkPropFiles(t testing.TB, p *atkProject) {
	t.Helper()
	writeFile(t, p.home, "src.txt", "a\nb\nb\n")
	for _, f := range []string{"config.json", "state.json", "team.rego", "01-02.json"} {
		writeFile(t, p.home, "evil/"+f, "{}\n")
	}
}

func atkPropTemplate(t testing.TB) *atkProject {
	t.Helper()
	p := newAtkProject(t, false)
	writeFile(t, p.root, "notes.txt", "a note\n")
	writeFile(t, p.root, "src/onboarding/steps/welcome.json", `{"title": "Welcome"}`+"\n")
	writeFile(t, p.root, "docs/feature/shop/notes.md", "# notes\n")
	return p
}

// atkProperty runs one generated command in a fresh copy of tmpl.
func atkProperty(t *testing.T, tmpl *atkProject, ch atkChooser, replay string) {
	p := copyAtkProject(t, tmpl)
	atkPropFiles(t, p)
	command, cwd, harmless := atkCommand(ch, p.root)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("command (cwd %q):\n%s\nreplay: %s", cwd, command, replay)
		}
	})
	before := p.snapshot(t)
	call := p.bash(t, cwd, command, harmless...)
	call.check(t)
	before.mustEqual(t, p.snapshot(t), "after PostToolUse")
	for _, h := range harmless {
		if got, want := fileState(p.path(h)), call.harmlessMid[h]; call.ran && got != want {
			t.Errorf("%s was written by the command (%s) and changed by DES after it (%s): an allowed write was undone", h, want, got)
		}
	}
}

// TestAttackProperty runs generated commands, each in a fresh copy of the
// project. Fixed seeds: 8 by default, 48 with DES_TEST_LONG=1;
// DES_ATTACK_SOAK=N runs N from a random seed printed at the start instead;
// DES_ATTACK_SEED=N[,M...] replays those.
func TestAttackProperty(t *testing.T) {
	t.Parallel()
	n, base := testenv.Pick(8, 48), uint64(20261123)
	if s := os.Getenv("DES_ATTACK_SOAK"); s != "" {
		soak, err := strconv.Atoi(s)
		if err != nil || soak < 1 {
			t.Fatalf("DES_ATTACK_SOAK=%q: want a number of commands, such as 400", s)
		}
		n, base = soak, uint64(time.Now().UnixNano())
		t.Logf("DES_ATTACK_SOAK=%d: %d commands from seed %d", soak, n, base)
	}
	var seeds []uint64
	for i := range n {
		seeds = append(seeds, base+uint64(i))
	}
	if s := os.Getenv("DES_ATTACK_SEED"); s != "" {
		seeds = nil
		for _, f := range strings.Split(s, ",") {
			seed, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
			if err != nil {
				t.Fatalf("DES_ATTACK_SEED=%q: %v", s, err)
			}
			seeds = append(seeds, seed)
		}
	}
	tmpl := atkPropTemplate(t)
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			atkProperty(t, tmpl, newAtkRand(seed), fmt.Sprintf("DES_ATTACK_SEED=%d go test -run 'TestAttackProperty' ./examples/des-engine", seed))
		})
	}
}

// TestAttackCommandGenerator checks the grammar itself: every command it
// makes is valid shell, so the property tests attacks, not syntax errors.
func TestAttackCommandGenerator(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for seed := range uint64(300) {
		cmd, _, _ := atkCommand(newAtkRand(seed), "/proj")
		seen[cmd] = true
		if out, err := exec.Command("bash", "-n", "-c", cmd).CombinedOutput(); err != nil {
			t.Errorf("seed %d: bash -n rejects the command: %v\n%s\n%s", seed, err, out, cmd)
		}
	}
	if len(seen) < 250 {
		t.Errorf("only %d distinct commands from 300 seeds", len(seen))
	}
}

// FuzzAttackCommand is the property under `go test -fuzz`: the input
// steers the grammar's choices.
func FuzzAttackCommand(f *testing.F) {
	for _, seed := range [][]byte{{0, 3, 0, 0}, {1, 19, 4, 7, 2, 13}, {2, 8, 11, 1, 0, 5, 3, 9, 14}} {
		f.Add(seed)
	}
	tmpl := atkPropTemplate(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		atkProperty(t, tmpl, &atkBytes{b: in}, fmt.Sprintf("input %q", in))
	})
}
