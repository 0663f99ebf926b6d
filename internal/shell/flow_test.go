package shell

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// optCase is a command analysed with options; only the fields set are
// compared (writes and commits always).
type optCase struct {
	name    string
	cmd     string
	opts    []Option
	writes  []Write
	commits []GitCommit
	dynamic bool
}

func runOptCases(t *testing.T, cases []optCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Analyze(c.cmd, c.opts...)
			if diff := cmp.Diff(c.writes, got.Writes); diff != "" {
				t.Errorf("Analyze(%q) writes (-want +got):\n%s", c.cmd, diff)
			}
			if diff := cmp.Diff(c.commits, got.GitCommits); diff != "" {
				t.Errorf("Analyze(%q) commits (-want +got):\n%s", c.cmd, diff)
			}
			if got.Dynamic != c.dynamic {
				t.Errorf("Analyze(%q).Dynamic = %v, want %v", c.cmd, got.Dynamic, c.dynamic)
			}
			if got.ParseError != "" {
				t.Errorf("Analyze(%q).ParseError = %q", c.cmd, got.ParseError)
			}
			checkInvariants(t, c.cmd, got)
		})
	}
}

var env = []Option{WithHome("/home/u"), WithCwd("/w/proj"), WithOldPwd("/w/old")}

// A cd that may not run leaves the old directory possible; one that
// succeeds or ends the shell does not.
func TestMaybeCd(t *testing.T) {
	runOptCases(t, []optCase{
		{name: "cd may fail", cmd: `cd /nonexistent; echo X > .isdlc/state.json`,
			writes: []Write{bwd(".isdlc/state.json", "/nonexistent", "redirect"), bw(".isdlc/state.json", "redirect")}},
		{name: "false && cd", cmd: `false && cd /tmp; echo X > s.json`, writes: []Write{bw("s.json", "redirect")}},
		{name: "test && cd", cmd: `test -d /tmp && cd /tmp; echo X > s.json`,
			writes: []Write{bwd("s.json", "/tmp", "redirect"), bw("s.json", "redirect")}},
		{name: "if false cd", cmd: `if false; then cd /tmp; fi; echo X > s.json`, writes: []Write{bw("s.json", "redirect")}},
		{name: "if maybe cd", cmd: `if [ -d x ]; then cd /tmp; fi; echo X > s.json`,
			writes: []Write{bwd("s.json", "/tmp", "redirect"), bw("s.json", "redirect")}},
		{name: "cd || true", cmd: `cd x || true; echo > s.json`, writes: []Write{bwd("s.json", "x", "redirect"), bw("s.json", "redirect")}},
		{name: "cd || exit", cmd: `cd x || exit 1; echo > s.json`, writes: []Write{bwd("s.json", "x", "redirect")}},
		{name: "cd && write", cmd: `cd x && echo > s.json`, writes: []Write{bwd("s.json", "x", "redirect")}},
		{name: "set -e", cmd: `set -euo pipefail; cd x; echo > s.json`, writes: []Write{bwd("s.json", "x", "redirect")}},
		{name: "set -o errexit", cmd: `set -o errexit; cd x; echo > s.json`, writes: []Write{bwd("s.json", "x", "redirect")}},
		{name: "set -e does not cover &&", cmd: `set -e; cd x && true; echo > s.json`,
			writes: []Write{bwd("s.json", "x", "redirect"), bw("s.json", "redirect")}},
		{name: "set +e", cmd: `set -e; set +e; cd x; echo > s.json`, writes: []Write{bwd("s.json", "x", "redirect"), bw("s.json", "redirect")}},
		{name: "case", cmd: `case $1 in a) cd /a;; b) cd /b;; esac; touch f`,
			writes: []Write{bw("f", "touch"), bwd("f", "/a", "touch"), bwd("f", "/b", "touch")}},
		{name: "loop body written from its later directory", cmd: `for i in 1 2; do echo > f; cd sub || exit; done`,
			writes: []Write{bw("f", "redirect"), {Path: "f", Dir: "sub", How: "redirect"}}},
		{name: "loop leaves unknown depth", cmd: `while true; do cd sub || exit; done; touch g`,
			writes: []Write{bw("g", "touch"), dyn("g", "sub", "touch"), dyn("g", "sub/sub", "touch")}, dynamic: true},
		{name: "commit from both", cmd: `cd /r; git commit -m x`,
			commits: []GitCommit{gc("/r", "-m", "x"), gc("", "-m", "x")}},
		{name: "function named cd", cmd: `cd() { builtin cd /p; }; cd /tmp && touch f`,
			writes: []Write{dyn("f", "", "touch")}, dynamic: true},
		{name: "function named true", cmd: `true() { false; }; true || cd /p; touch f`,
			writes: []Write{dyn("f", "", "touch"), bwd("f", "/p", "touch")}, dynamic: true},
		{name: "exit ends", cmd: `cd /a || exit; exit 0; touch f`, writes: []Write{bwd("f", "/a", "touch")}},
		{name: "subshell exit does not end", cmd: `(exit 1); touch f`, writes: []Write{bw("f", "touch")}},
		{name: "pushd popd", cmd: `pushd /a && pushd /b && popd && touch f`, writes: []Write{bwd("f", "/a", "touch")}},
	})
}

// ~, $HOME, $PWD, $OLDPWD and variables assigned in the command.
func TestExpansions(t *testing.T) {
	runOptCases(t, []optCase{
		{name: "tilde", cmd: `echo '{}' > ~/proj/.isdlc/state.json`, opts: env, writes: []Write{bw("/home/u/proj/.isdlc/state.json", "redirect")}},
		{name: "HOME", cmd: `echo > "$HOME/p/s.json"; echo > ${HOME}/q`, opts: env,
			writes: []Write{bw("/home/u/p/s.json", "redirect"), bw("/home/u/q", "redirect")}},
		{name: "tilde plus", cmd: `echo > ~+/s.json`, opts: env, writes: []Write{bw("/w/proj/s.json", "redirect")}},
		{name: "tilde minus", cmd: `echo > ~-/s.json`, opts: env, writes: []Write{bw("/w/old/s.json", "redirect")}},
		{name: "PWD follows cd", cmd: `cd /tmp || exit; echo > $PWD/x; cd sub && echo > "$PWD/y" && echo > $OLDPWD/z`, opts: env,
			writes: []Write{bwd("/tmp/x", "/tmp", "redirect"), bwd("/tmp/sub/y", "/tmp/sub", "redirect"), bwd("/tmp/z", "/tmp/sub", "redirect")}},
		{name: "PWD relative cd", cmd: `cd sub && echo > $PWD/x`, opts: env, writes: []Write{bwd("/w/proj/sub/x", "sub", "redirect")}},
		{name: "PWD unknown without WithCwd", cmd: `echo > $PWD/x`, writes: []Write{dyn("$PWD/x", "", "redirect")}, dynamic: true},
		{name: "quoted tilde is a name", cmd: `echo > "~/x"`, opts: env, writes: []Write{bw("~/x", "redirect")}},
		{name: "tilde user", cmd: `echo > ~root/x`, opts: env, writes: []Write{dyn("~root/x", "", "redirect")}, dynamic: true},
		{name: "literal variable", cmd: `F=.isdlc/state.json; echo > $F`, writes: []Write{bw(".isdlc/state.json", "redirect")}},
		{name: "export and braces", cmd: `export D=.des; echo > "${D}/state.json"`, writes: []Write{bw(".des/state.json", "redirect")}},
		{name: "declare local readonly", cmd: `declare A=a; readonly B=b; local C=c; cp x $A$B$C`, writes: []Write{bw("abc", "cp")}},
		{name: "variable of variables", cmd: `D=.isdlc; F=$D/state.json; rm "$F"`, writes: []Write{bw(".isdlc/state.json", "rm")}},
		{name: "unknown part kept", cmd: `echo > .isdlc/$X`, writes: []Write{dyn(".isdlc/$X", "", "redirect")}, dynamic: true},
		{name: "unknown dir part kept", cmd: `echo > "$D"/state.json`, writes: []Write{dyn("$D/state.json", "", "redirect")}, dynamic: true},
		{name: "assigned from a substitution", cmd: `F=$(mktemp); echo > $F`, writes: []Write{dyn("$F", "", "redirect")}, dynamic: true},
		{name: "read makes unknown", cmd: `F=a; read F; echo > $F`, writes: []Write{dyn("$F", "", "redirect")}, dynamic: true},
		{name: "branches disagree", cmd: `if x; then F=a; else F=b; fi; echo > $F`, writes: []Write{dyn("$F", "", "redirect")}, dynamic: true},
		{name: "prefix assignment is not the shell's", cmd: `F=a true; echo > $F`, writes: []Write{dyn("$F", "", "redirect")}, dynamic: true},
		{name: "unquoted value with a glob", cmd: `F='*.json'; rm $F`, writes: []Write{{Path: "*.json", How: "rm", Glob: true}}},
		{name: "quoted value with a glob", cmd: `F='*.json'; rm "$F"`, writes: []Write{bw("*.json", "rm")}},
		{name: "command name variable", cmd: `g=git; $g commit -m x`, commits: []GitCommit{gc("", "-m", "x")}},
		{name: "ANSI-C quoting", cmd: `echo > $'\x2eisdlc/st\141te.json'`, writes: []Write{bw(".isdlc/state.json", "redirect")}},
		{name: "locale quoting", cmd: `echo > $".isdlc/state.json"`, writes: []Write{bw(".isdlc/state.json", "redirect")}},
		{name: "globs", cmd: `echo > stat?.json; rm .des/*; sed -i x [s]tate.json; rm "a*"b*`,
			writes: []Write{{Path: "stat?.json", How: "redirect", Glob: true}, {Path: ".des/*", How: "rm", Glob: true},
				{Path: "[s]tate.json", How: "sed -i", Glob: true}, {Path: `a\*b*`, How: "rm", Glob: true}}},
		{name: "cd home with WithHome", cmd: `cd && touch f`, opts: env, writes: []Write{bwd("f", "/home/u", "touch")}},
		{name: "cd - with WithOldPwd", cmd: `cd - && touch f`, opts: env, writes: []Write{bwd("f", "/w/old", "touch")}},
	})
}

// Every git invocation that may commit is a GitCommit.
func TestGitCommits(t *testing.T) {
	alias := func(c GitCommit) GitCommit { c.Alias = true; return c }
	runOptCases(t, []optCase{
		{name: "alias in -c", cmd: `git -c core.hooksPath=/dev/null -c alias.c=commit c -m wip`,
			commits: []GitCommit{opts(gc("", "-m", "wip"), "-c", "core.hooksPath=/dev/null", "-c", "alias.c=commit")}},
		{name: "alias with words", cmd: `git -c alias.c='commit -a' c -m wip`, commits: []GitCommit{opts(gc("", "-a", "-m", "wip"), "-c", "alias.c=commit -a")}},
		{name: "alias of alias", cmd: `git -c alias.x=y -c alias.y=commit x`, commits: []GitCommit{opts(gc(""), "-c", "alias.x=y", "-c", "alias.y=commit")}},
		{name: "shell alias", cmd: `git -c 'alias.c=!git commit -m y' c`,
			commits: []GitCommit{gc("", "-m", "y")}},
		{name: "alias from git config earlier", cmd: `git config alias.ci commit && git ci -m x`,
			commits: []GitCommit{{Subcommand: "commit", Args: []string{"-m", "x"}}}},
		{name: "repository alias", cmd: `git ci -m x`, commits: []GitCommit{alias(GitCommit{Subcommand: "ci", Args: []string{"-m", "x"}})}},
		{name: "global options", cmd: `git --no-pager -P --bare --git-dir=.git --work-tree . --exec-path=/x --namespace n --config-env=a.b=C commit`,
			commits: []GitCommit{opts(gc(""), "--no-pager", "-P", "--bare", "--git-dir=.git", "--work-tree", ".", "--exec-path=/x", "--namespace", "n", "--config-env=a.b=C")}},
		{name: "dynamic subcommand", cmd: `git $(echo commit) -m x`, commits: []GitCommit{{Subcommand: "$(echo commit)", Args: []string{"-m", "x"}, Dynamic: true}}, dynamic: true},
		{name: "quoted dynamic subcommand", cmd: `git "$SUB"`, commits: []GitCommit{{Subcommand: "$SUB", Dynamic: true}}, dynamic: true},
		{name: "dynamic command name", cmd: `$G commit -m x`, commits: []GitCommit{{Subcommand: "commit", Args: []string{"-m", "x"}, Dynamic: true}}, dynamic: true},
		{name: "dynamic command name, option", cmd: `$G -c x=y commit`, commits: []GitCommit{{Subcommand: "commit", Options: []string{"-c", "x=y"}, Dynamic: true}}, dynamic: true},
		{name: "dynamic command name, other", cmd: `$EDITOR notes.md`, dynamic: true},
		{name: "command -v git", cmd: `command -v git && git --version`},
		{name: "merge and friends", cmd: `git merge f; git cherry-pick a; git revert b; git rebase main; git am p; git pull`,
			commits: []GitCommit{{Subcommand: "merge", Args: []string{"f"}}, {Subcommand: "cherry-pick", Args: []string{"a"}},
				{Subcommand: "revert", Args: []string{"b"}}, {Subcommand: "rebase", Args: []string{"main"}},
				{Subcommand: "am", Args: []string{"p"}}, {Subcommand: "pull"}}},
		{name: "built-in is not an alias", cmd: `git -c alias.status=commit status; git log`},
		{name: "dynamic alias definition", cmd: `git -c "$X" st`, commits: []GitCommit{{Subcommand: "st", Alias: true, Dynamic: true, Options: []string{"-c", "$X"}}}, dynamic: true},
		// GIT_DIR in git's environment, for that command only.
		{name: "GIT_DIR prefix", cmd: `GIT_DIR=../.git git commit; git commit`,
			commits: []GitCommit{{Subcommand: "commit", GitDir: "../.git"}, {Subcommand: "commit"}}},
		{name: "GIT_DIR through env and sh -c", cmd: `env A=1 GIT_DIR=/r/.git git commit; GIT_DIR="$D" sh -c 'git commit'; git commit`,
			commits: []GitCommit{{Subcommand: "commit", GitDir: "/r/.git"}, {Subcommand: "commit", GitDir: "$D"}, {Subcommand: "commit"}}},
		{name: "GIT_DIR assigned alone is not git's environment", cmd: `GIT_DIR=x; git commit`, commits: []GitCommit{{Subcommand: "commit"}}},
	})
}

// Past maxDirs possible directories every relative write is Dynamic.
func TestDirBound(t *testing.T) {
	got := Analyze(`cd 1; cd 2; cd 3; cd 4; touch f; touch /abs`)
	if len(got.Writes) != maxDirs+1 || !got.Dynamic {
		t.Fatalf("got %d writes (Dynamic %v), want %d: %v", len(got.Writes), got.Dynamic, maxDirs+1, got.Writes)
	}
	for _, w := range got.Writes[:maxDirs] {
		if !w.Dynamic {
			t.Errorf("%+v: want Dynamic past the bound", w)
		}
	}
	if w := got.Writes[maxDirs]; w.Path != "/abs" || w.Dynamic {
		t.Errorf("%+v: an absolute path is known wherever the command is", w)
	}
}

// Links made in the command: the linked file is written through them.
func TestLinks(t *testing.T) {
	runOptCases(t, []optCase{
		{name: "hard link then write", cmd: `ln .des/config.json c.json && echo '{}' > c.json`,
			writes: []Write{bw(".des/config.json", "hard link"), bw("c.json", "ln"), bw("c.json", "redirect"), bw(".des/config.json", "redirect")}},
		{name: "cp -l", cmd: `cp -l .des/config.json c`, writes: []Write{bw(".des/config.json", "hard link"), bw("c", "cp")}},
		{name: "cp --link", cmd: `cp --link a b`, writes: []Write{bw("a", "hard link"), bw("b", "cp")}},
		{name: "link", cmd: `link .des/config.json c; echo x >> c`,
			writes: []Write{bw(".des/config.json", "hard link"), bw("c", "ln"), bw("c", "redirect"), bw(".des/config.json", "redirect")}},
		{name: "symlink then write", cmd: `ln -s .des/config.json c; echo x > c`,
			writes: []Write{bw("c", "ln"), bw("c", "redirect"), bw(".des/config.json", "redirect")}},
		{name: "symlink -sf relative to its directory", cmd: `ln -sf ../.des/config.json sub/c && sed -i s/a/b/ sub/c`,
			writes: []Write{bw("sub/c", "ln"), bw("sub/c", "sed -i"), bw(".des/config.json", "sed -i")}},
		{name: "directory symlink", cmd: `ln -s .des d && cp x d/state.json`,
			writes: []Write{bw("d", "ln"), bw("d/state.json", "cp"), bw(".des/state.json", "cp")}},
		{name: "symlink from another directory", cmd: `cd sub && ln -s /p/.des/config.json c && cd .. && echo > sub/c`,
			writes: []Write{bwd("c", "sub", "ln"), bw("sub/c", "redirect"), bw("/p/.des/config.json", "redirect")}},
		{name: "symlink is not a hard link", cmd: `ln -s .des/config.json c`, writes: []Write{bw("c", "ln")}},
	})
}
