package shell

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

type testCase struct {
	name     string
	cmd      string
	writes   []Write
	dynamic  bool
	commits  []GitCommit
	adds     []GitAdd
	parseErr bool
}

// bw is a write in the hook's cwd; bwd one in dir.
func bw(path, how string) Write       { return Write{Path: path, How: how} }
func findW(path, detail string) Write { return Write{Path: path, How: "find -delete", Detail: detail} }
func bwd(path, dir, how string) Write { return Write{Path: path, Dir: dir, How: how} }

// dyn is a write DES cannot resolve, as written.
func dyn(path, dir, how string) Write { return Write{Path: path, Dir: dir, How: how, Dynamic: true} }

// opts sets a commit's global options.
func opts(c GitCommit, o ...string) GitCommit { c.Options = o; return c }

func gc(dir string, args ...string) GitCommit {
	return GitCommit{Dir: dir, Args: args, Subcommand: "commit"}
}

var testCases = []testCase{
	// The examples (issue 4, item 4).
	{name: "redirect", cmd: `echo '{}' > .isdlc/state.json`, writes: []Write{bw(".isdlc/state.json", "redirect")}},
	{name: "pipe into tee", cmd: `cat x | tee .des/state.json`, writes: []Write{bw(".des/state.json", "tee")}},
	{name: "sed -i", cmd: `sed -i 's/a/b/' docs/feature/x/steps/01-01.json`, writes: []Write{bw("docs/feature/x/steps/01-01.json", "sed -i")}},
	{name: "cp onto", cmd: `cp /tmp/s.json .isdlc/state.json`, writes: []Write{bw(".isdlc/state.json", "cp")}},
	{name: "mv onto (source goes away too)", cmd: `mv a.json .des/state.json`, writes: []Write{bw("a.json", "mv"), bw(".des/state.json", "mv")}},
	{name: "install", cmd: `install -m 644 a .isdlc/state.json`, writes: []Write{bw(".isdlc/state.json", "install")}},
	{name: "python -c open w", cmd: `python3 -c "open('.isdlc/state.json','w').write('{}')"`, writes: []Write{bw(".isdlc/state.json", "python")}},
	{name: "node -e writeFileSync", cmd: `node -e "require('fs').writeFileSync('.des/state.json','{}')"`, writes: []Write{bw(".des/state.json", "node")}},
	{name: "truncate", cmd: `truncate -s 0 .des/state.json`, writes: []Write{bw(".des/state.json", "truncate")}},
	{name: "rm", cmd: `rm .isdlc/state.json`, writes: []Write{bw(".isdlc/state.json", "rm")}},

	// Chains, lines, subshells, nested scripts.
	{name: "cd then write", cmd: `cd proj && echo x > .isdlc/state.json`, writes: []Write{bwd(".isdlc/state.json", "proj", "redirect")}},
	{name: "after ;", cmd: `true; echo x >> s.json`, writes: []Write{bw("s.json", "redirect")}},
	{name: "backslash-newline", cmd: "echo a \\\n  > b.json \\\n  && tee \\\n  c.json", writes: []Write{bw("b.json", "redirect"), bw("c.json", "tee")}},
	{name: "several lines", cmd: "ls\necho c >> d.json\n\nrm e.json\n", writes: []Write{bw("d.json", "redirect"), bw("e.json", "rm")}},
	{name: "subshell keeps its cd", cmd: `(cd a && echo > b.json); echo > c.json`, writes: []Write{bwd("b.json", "a", "redirect"), bw("c.json", "redirect")}},
	{name: "a cd that may fail leaves both", cmd: `(cd a; echo > b.json); echo > c.json`, writes: []Write{bwd("b.json", "a", "redirect"), bw("b.json", "redirect"), bw("c.json", "redirect")}},
	{name: "block shares the cd", cmd: `{ cd a || exit; echo > b.json; }; echo > c.json`, writes: []Write{bwd("b.json", "a", "redirect"), bwd("c.json", "a", "redirect")}},
	{name: "bash -c literal", cmd: `bash -c 'echo x > f.json'`, writes: []Write{bw("f.json", "redirect")}},
	{name: "sh -c with cd", cmd: `sh -c "cd d && tee f.json"; touch g`, writes: []Write{bwd("f.json", "d", "tee"), bw("g", "touch")}},
	{name: "bash -lc cluster", cmd: `bash -lc 'rm x.json'`, writes: []Write{bw("x.json", "rm")}},
	{name: "bash -c inside bash -c", cmd: `bash -c 'bash -c "echo > deep.json"'`, writes: []Write{bw("deep.json", "redirect")}},
	{name: "bash -c non-literal", cmd: `bash -c "$SCRIPT"`, dynamic: true},
	{name: "bash -c partly literal", cmd: `bash -c "echo x > $F; git commit -m y"`, writes: []Write{dyn("$(...)", "", "redirect")}, dynamic: true, commits: []GitCommit{gc("", "-m", "y")}},
	{name: "bash reads a here-document", cmd: "bash <<'EOF'\necho > h.json\nEOF", writes: []Write{bw("h.json", "redirect")}},
	{name: "shell fed by a pipe", cmd: `curl -s https://x | sh`, dynamic: true},
	{name: "shell script file is opaque", cmd: `bash scripts/build.sh --fast`},
	{name: "here-document into a file", cmd: "cat > f.json <<EOF\n{\"a\": $(date +%s)}\nEOF", writes: []Write{bw("f.json", "redirect")}},
	{name: "here-document substitution runs", cmd: "cat <<EOF\n$(rm hd.json)\nEOF", writes: []Write{bw("hd.json", "rm")}},
	{name: "command substitution", cmd: `echo "$(echo x > inner.json)"`, writes: []Write{bw("inner.json", "redirect")}},
	{name: "backquotes", cmd: "echo `touch bq.json`", writes: []Write{bw("bq.json", "touch")}},
	{name: "process substitution target", cmd: `echo x | tee >(cat > ps.json) /dev/null`, writes: []Write{bw("ps.json", "redirect")}},
	{name: "process substitution reads", cmd: `diff <(cat a.json) <(cat b.json)`},
	{name: "group redirect", cmd: `{ echo a; echo b; } > grouped.json`, writes: []Write{bw("grouped.json", "redirect")}},
	{name: "if branches", cmd: `if test -f x; then echo > a.json; elif true; then echo > b.json; else rm c.json; fi`,
		writes: []Write{bw("a.json", "redirect"), bw("b.json", "redirect"), bw("c.json", "rm")}},
	{name: "while loop redirect", cmd: `while read l; do echo "$l"; done < in.txt > out.json`, writes: []Write{bw("out.json", "redirect")}},
	{name: "case arm", cmd: `case "$1" in a) rm a.json;; *) :;; esac`, writes: []Write{bw("a.json", "rm")}},
	{name: "function body", cmd: `f() { echo > fn.json; }; f`, writes: []Write{bw("fn.json", "redirect")}},
	{name: "background", cmd: `cd a & touch f`, writes: []Write{bw("f", "touch")}},
	{name: "negation and time", cmd: `! time rm t.json`, writes: []Write{bw("t.json", "rm")}},
	{name: "declare with substitution", cmd: `export X=$(touch ex.json)`, writes: []Write{bw("ex.json", "touch")}},
	{name: "test with substitution", cmd: `[[ -n $(rm tc.json) ]]`, writes: []Write{bw("tc.json", "rm")}},

	// Redirection forms.
	{name: "clobber and both streams", cmd: `a >| c1; b &> c2; c &>> c3; d 2> c4; e <> c5; f >& c6`,
		writes: []Write{bw("c1", "redirect"), bw("c2", "redirect"), bw("c3", "redirect"), bw("c4", "redirect"), bw("c5", "redirect"), bw("c6", "redirect")}},
	{name: "descriptor duplication is no write", cmd: `echo x 2>&1 >/dev/null; echo y >&2; exec 3>&-; cat 4<&0`},
	{name: "devices are no write", cmd: `cat f > /dev/stderr; echo >/dev/stdout; echo > /dev/fd/3; echo > /dev/tty`},
	{name: "exec opens a file", cmd: `exec 3> log.txt`, writes: []Write{bw("log.txt", "redirect")}},
	{name: "tee -a several and null", cmd: `echo x | tee -a a.json b.json > /dev/null`, writes: []Write{bw("a.json", "tee"), bw("b.json", "tee")}},
	{name: "sudo tee", cmd: `sudo tee f`, writes: []Write{bw("f", "tee")}},

	// Quoting and expansion.
	{name: "quotes removed", cmd: `echo x > 'a b.json'; echo y > "c d.json"; echo z > e\ f.json`,
		writes: []Write{bw("a b.json", "redirect"), bw("c d.json", "redirect"), bw("e f.json", "redirect")}},
	{name: "tilde and HOME kept without WithHome", cmd: `echo x > ~/n1; echo x > "$HOME/n2"; echo x > ${HOME}/n3`,
		writes: []Write{dyn("~/n1", "", "redirect"), dyn("$HOME/n2", "", "redirect"), dyn("${HOME}/n3", "", "redirect")}, dynamic: true},
	{name: "variable target", cmd: `echo > "$F"`, writes: []Write{dyn("$F", "", "redirect")}, dynamic: true},
	{name: "substitution target", cmd: `echo > $(mktemp)`, writes: []Write{dyn("$(mktemp)", "", "redirect")}, dynamic: true},
	{name: "glob target", cmd: `sed -i s/a/b/ *.json`, writes: []Write{{Path: "*.json", How: "sed -i", Glob: true}}},
	{name: "escaped glob is literal", cmd: `rm a\*.json`, writes: []Write{bw("a*.json", "rm")}},
	{name: "glob loop", cmd: `for f in *.json; do sed -i s/a/b/ "$f"; done`, writes: []Write{dyn("$f", "", "sed -i")}, dynamic: true},
	{name: "brace alternatives", cmd: `cp a.json{,.bak}; touch {x,y}/z`,
		writes: []Write{bw("a.json.bak", "cp"), bw("x/z", "touch"), bw("y/z", "touch")}},
	{name: "brace sequence", cmd: `touch {1..3}.json`, writes: []Write{dyn("{1..3}.json", "", "touch")}, dynamic: true},
	{name: "computed command", cmd: `$EDITOR notes.md`, dynamic: true},

	// Reads are not writes.
	{name: "reads", cmd: `cat .isdlc/state.json; jq . < .des/state.json; grep x .des/state.json; head -5 a | sort | uniq`},
	{name: "sed without -i", cmd: `sed -n 's/a/b/p' .des/state.json`},
	{name: "sort reading", cmd: `sort -k2 -t, data.csv`},
	{name: "python reading", cmd: `python3 -c "import json; print(json.load(open('.des/state.json'))['x'])"`},

	// Copy-like commands.
	{name: "cp -t", cmd: `cp -t dest a b; cp --target-directory=d2 c`, writes: []Write{bw("dest/a", "cp"), bw("dest/b", "cp"), bw("d2/c", "cp")}},
	{name: "cp into dir/", cmd: `cp -r src/ dst/; cp a b c dir`, writes: []Write{bw("dst/src", "cp"), bw("dir/a", "cp"), bw("dir/b", "cp"), bw("dir/c", "cp")}},
	{name: "mv into dir/", cmd: `mv -f a b/`, writes: []Write{bw("a", "mv"), bw("b/a", "mv")}},
	{name: "install -d and -D", cmd: `install -d d1 d2; install -Dm644 a b`, writes: []Write{bw("d1", "install"), bw("d2", "install"), bw("b", "install")}},
	{name: "ln", cmd: `ln -sfn target link; ln -s /x/y`, writes: []Write{bw("link", "ln"), bw("y", "ln")}},
	{name: "rsync local and remote", cmd: `rsync -av --exclude .git src/ dst/; rsync -a src host:dst; rsync --remove-source-files a b`,
		writes: []Write{bw("dst/", "rsync"), bw("a", "rsync"), bw("b", "rsync")}},
	{name: "dd of=", cmd: `dd if=/dev/zero of=x.bin bs=1 count=0; dd if=a of="$O"`, writes: []Write{bw("x.bin", "dd")}, dynamic: true},

	// Other writers.
	{name: "rm variants", cmd: `rm -rf .des; rm -- -weird; unlink u; shred -u -n 3 s`,
		writes: []Write{bw(".des", "rm"), bw("-weird", "rm"), bw("u", "unlink"), bw("s", "shred")}},
	{name: "touch options", cmd: `touch -d '1 day ago' t1; touch -r ref t2`, writes: []Write{bw("t1", "touch"), bw("t2", "touch")}},
	{name: "chmod chown chgrp", cmd: `chmod 644 m1; chmod -R u+w m2; chmod -w m3; chmod --reference=r m4; chown u:g o1; chgrp staff g1`,
		writes: []Write{{Path: "m1", How: "chmod", Detail: "644"}, {Path: "m2", How: "chmod", Detail: "u+w"}, {Path: "m3", How: "chmod", Detail: "-w"}, bw("m4", "chmod"), bw("o1", "chown"), bw("g1", "chgrp")}},
	{name: "sponge and sort -o", cmd: `jq . a | sponge a; sort -o out.txt in.txt; sort --output=o2 in`,
		writes: []Write{bw("a", "sponge"), bw("out.txt", "sort -o"), bw("o2", "sort -o")}},
	{name: "curl and wget", cmd: `curl -sSLo out.bin https://x; curl -o - https://x; curl --output-dir d -o f https://x; curl -H 'a: b' https://x; wget -O f.html https://x; wget -qO- https://x`,
		writes: []Write{bw("out.bin", "curl -o"), bw("d/f", "curl -o"), bw("f.html", "wget -O")}},
	{name: "find -fprint", cmd: `find . -name '*.go' -fprint list.txt`, writes: []Write{bw("list.txt", "find")}},
	{name: "find -delete", cmd: `find . -name '*.json' -delete`, writes: []Write{findW(".", "-name *.json")}},
	{name: "find -delete whole", cmd: `find . -delete; find .des -type f -delete`, writes: []Write{bw(".", "find -delete"), bw(".des", "find -delete")}},
	{name: "find -delete before its test", cmd: `find . -delete -name '*.pyc'`, writes: []Write{bw(".", "find -delete")}},
	{name: "find -o: the action's own branch", cmd: `find . -name x -o -name y -delete`, writes: []Write{findW(".", "-name y")}},
	{name: "find -prune -o", cmd: `find . -path ./node_modules -prune -o -name '*.pyc' -delete`, writes: []Write{findW(".", "-name *.pyc")}},
	{name: "find -o before an untested action", cmd: `find . -name '*.pyc' -o -delete`, writes: []Write{bw(".", "find -delete")}},
	{name: "find comma and parentheses", cmd: `find . -name x , -delete; find . \( -name a \) -delete`, writes: []Write{bw(".", "find -delete")}},
	{name: "find negated test restricts nothing", cmd: `find . ! -name '*.pyc' -delete; find docs -not -name x -delete`,
		writes: []Write{bw(".", "find -delete"), bw("docs", "find -delete")}},
	{name: "find negated other test", cmd: `find . -type f -name '*.pyc' ! -path './.git/*' -mtime +3 -delete`, writes: []Write{findW(".", "-name *.pyc")}},
	{name: "find several tests", cmd: `find src lib -iname '*.LOG' -path '*/build/*' -delete`,
		writes: []Write{findW("src", "-iname *.LOG\n-path */build/*"), findW("lib", "-iname *.LOG\n-path */build/*")}},
	{name: "find computed pattern", cmd: `find . -name "$P" -delete`, writes: []Write{bw(".", "find -delete")}},
	{name: "find unknown primary", cmd: `find . -frobnicate x -name '*.pyc' -delete`, writes: []Write{bw(".", "find -delete")}},
	{name: "find following links", cmd: `find -L . -name '*.pyc' -delete; find . -follow -name '*.pyc' -delete`, writes: []Write{bw(".", "find -delete")}},
	{name: "find -name argument looks like an operator", cmd: `find . -name '-o' -delete`, writes: []Write{findW(".", "-name -o")}},
	{name: "find -newerXY", cmd: `find . -newermt 2024-01-01 -name '*.tmp' -delete`, writes: []Write{findW(".", "-name *.tmp")}},
	{name: "find -delete start points", cmd: `find -L .des docs -type f -delete`, writes: []Write{bw(".des", "find -delete"), bw("docs", "find -delete")}},
	{name: "find -exec writer", cmd: `find . -name x -exec rm {} \;`, writes: []Write{dyn("{}", "", "rm"), findW(".", "-name x")}, dynamic: true},
	{name: "find -exec rm +", cmd: `find . -name '*.log' -exec rm -f {} +`, writes: []Write{dyn("{}", "", "rm"), findW(".", "-name *.log")}, dynamic: true},
	{name: "find -exec writes beside the entry", cmd: `find . -name '*.log' -exec cp x {}.bak \;`, writes: []Write{dyn("{}.bak", "", "cp"), bw(".", "find -delete")}, dynamic: true},
	{name: "find -exec sh -c", cmd: `find . -name '*.log' -exec sh -c 'rm "$1"' _ {} \;`, writes: []Write{dyn("$1", "", "rm"), bw(".", "find -delete")}, dynamic: true},
	{name: "find -exec test then -delete", cmd: `find . -name '*.tmp' -exec test -s {} \; -delete`, writes: []Write{findW(".", "-name *.tmp")}},
	{name: "find -exec reader", cmd: `find . -name '*.json' -exec cat {} + | head`},
	{name: "xargs writer", cmd: `ls | xargs rm`, dynamic: true},
	{name: "xargs reader", cmd: `ls | xargs -0 grep -l x`},
	{name: "xargs -I placeholder", cmd: `ls | xargs -I{} cp {} backup/`, dynamic: true, writes: []Write{bw("backup/", "cp")}},
	{name: "xargs -I literal target", cmd: `echo a | xargs -I % cp % .des/state.json`, dynamic: true, writes: []Write{bw(".des/state.json", "cp")}},
	{name: "awk inplace", cmd: `gawk -i inplace '{print}' a.txt; awk '{print}' b.txt`, writes: []Write{bw("a.txt", "awk -i inplace")}},

	// sed spellings.
	{name: "sed -i.bak", cmd: `sed -i.bak s/a/b/ f`, writes: []Write{bw("f", "sed -i")}},
	{name: "sed -i '' (BSD)", cmd: `sed -i '' 's/a/b/' f`, writes: []Write{bw("f", "sed -i")}},
	{name: "sed -i .bak (BSD)", cmd: `sed -i .bak 's/a/b/' f`, writes: []Write{bw("f", "sed -i")}},
	{name: "sed -e -e", cmd: `sed -i -e s/a/b/ -e s/c/d/ f g`, writes: []Write{bw("f", "sed -i"), bw("g", "sed -i")}},
	{name: "sed --in-place -f", cmd: `sed --in-place=.bak -f script.sed f`, writes: []Write{bw("f", "sed -i")}},
	{name: "sed -ie (suffix e)", cmd: `sed -ie s/a/b/ f`, writes: []Write{bw("f", "sed -i")}},
	{name: "sed -Ei", cmd: `sed -Ei 's/(a)/b/' f`, writes: []Write{bw("f", "sed -i")}},

	// Interpreters.
	{name: "perl -i", cmd: `perl -i.bak -pe 's/a/b/' f; perl -pi -e 's/a/b/' g h`, writes: []Write{bw("f", "perl -i"), bw("g", "perl -i"), bw("h", "perl -i")}},
	{name: "perl -n reads", cmd: `perl -ne 'print if /x/' f`},
	{name: "perl open forms", cmd: `perl -e 'open(my $fh, ">", "o1"); open(F, ">>o2"); open F, "+<o3" or die; open(I, "<in")'`,
		writes: []Write{bw("o1", "perl"), bw("o2", "perl"), bw("o3", "perl")}},
	{name: "perl unlink rename", cmd: `perl -e 'unlink "a.txt", "b.txt"; rename("c", "d")'`,
		writes: []Write{bw("a.txt", "perl"), bw("b.txt", "perl"), bw("c", "perl"), bw("d", "perl")}},
	{name: "perl open variable", cmd: `perl -e 'open(F, ">$x")'`, dynamic: true},
	{name: "ruby -e", cmd: `ruby -e 'File.write("r.json", "{}"); File.open("w.txt", "w") { |f| f << 1 }; File.open("read.txt")'`,
		writes: []Write{bw("r.json", "ruby"), bw("w.txt", "ruby")}},
	{name: "ruby FileUtils", cmd: `ruby -rfileutils -e 'FileUtils.rm_f "x"; FileUtils.mv("a", "b"); FileUtils.rm(["y"], force: true)'`,
		writes: []Write{bw("x", "ruby"), bw("a", "ruby"), bw("b", "ruby")}, dynamic: true},
	{name: "ruby -i", cmd: `ruby -i -pe 'gsub(/a/, "b")' f.rb`, writes: []Write{bw("f.rb", "ruby -i")}},
	{name: "python json.dump", cmd: `python3 -c "import json; json.dump({}, open('.des/state.json', 'w'))"`, writes: []Write{bw(".des/state.json", "python")}},
	{name: "python pathlib", cmd: `python3 -c "from pathlib import Path; Path('.des/state.json').write_text('{}'); Path('a', 'b.json').unlink()"`,
		writes: []Write{bw(".des/state.json", "python"), bw("a/b.json", "python")}},
	{name: "python os and shutil", cmd: `python -c "import os, shutil; os.remove('r1'); shutil.copy('a', 'c1'); os.rename('m1', 'm2')"`,
		writes: []Write{bw("r1", "python"), bw("c1", "python"), bw("m1", "python"), bw("m2", "python")}},
	{name: "python mode keyword", cmd: `python3 -c "with open('k', encoding='utf-8', mode='a') as f: pass"`, writes: []Write{bw("k", "python")}},
	{name: "python binary and raw", cmd: `python3 -c 'open(r"raw.bin", "wb"); open("x+", "r+")'`, writes: []Write{bw("raw.bin", "python"), bw("x+", "python")}},
	{name: "python variable path", cmd: `python3 -c "p='.des/state.json'; open(p, 'w')"`, dynamic: true},
	{name: "python variable mode", cmd: `python3 -c "open('x', mode)"`, dynamic: true},
	{name: "python f-string path", cmd: `python3 -c "open(f'{d}/x.json', 'w')"`, dynamic: true},
	{name: "python shell variable in path", cmd: `python3 -c "open('$F', 'w')"`, dynamic: true},
	{name: "python str.replace is no write", cmd: `python3 -c "print('a'.replace('a', 'b'))"`},
	{name: "python method open on a variable", cmd: `python3 -c "p.open('w')"`, dynamic: true},
	{name: "python script file", cmd: `python3 script.py .des/state.json; python3 -m json.tool a b; python3 --version`},
	{name: "python from a pipe", cmd: `echo 'x' | python3`, dynamic: true},
	{name: "python here-document", cmd: "python3 - <<'EOF'\nimport json\nwith open('.des/state.json', 'w') as f:\n    json.dump({}, f)\nEOF",
		writes: []Write{bw(".des/state.json", "python")}},
	{name: "python unquoted here-document", cmd: "python3 <<EOF\nopen('$X', 'w')\nEOF", dynamic: true},
	{name: "python here-string", cmd: `python3 <<< "open('hs.txt', 'a')"`, writes: []Write{bw("hs.txt", "python")}},
	{name: "node variants", cmd: `node -e "fs.appendFileSync('l1', 'x'); require('fs').promises.writeFile('l2', '{}'); fs.openSync('l3', 'r'); fs.openSync('l4', 'w')"`,
		writes: []Write{bw("l1", "node"), bw("l2", "node"), bw("l4", "node")}},
	{name: "node computed path", cmd: "node -e \"fs.writeFileSync(path.join(d, 'x'), s); fs.writeFileSync(`${d}/y`, s)\"", dynamic: true},
	{name: "node file and version", cmd: `node script.js out.json; node --version`},
	{name: "bun and deno", cmd: `bun -e "Bun.write('b.txt', 'x')"; deno eval "Deno.writeTextFileSync('d.txt', 'x')"; bun install`,
		writes: []Write{bw("b.txt", "node"), bw("d.txt", "node")}},

	// Wrappers.
	{name: "sudo -u", cmd: `sudo -u root tee /etc/x`, writes: []Write{bw("/etc/x", "tee")}},
	{name: "env -C", cmd: `env -C sub touch f; env A=1 B=2 rm g`, writes: []Write{bwd("f", "sub", "touch"), bw("g", "rm")}},
	{name: "sudo -D", cmd: `sudo -D /srv rm f`, writes: []Write{bwd("f", "/srv", "rm")}},
	{name: "nohup timeout nice command exec", cmd: `nohup rm n1 & timeout 5 rm n2; nice -n 10 rm n3; command rm n4; exec rm n5`,
		writes: []Write{bw("n1", "rm"), bw("n2", "rm"), bw("n3", "rm"), bw("n4", "rm"), bw("n5", "rm")}},
	{name: "command -v does not run", cmd: `command -v rm`},
	{name: "external time and stdbuf", cmd: `/usr/bin/time -v rm t1; stdbuf -oL tee t2`, writes: []Write{bw("t1", "rm"), bw("t2", "tee")}},
	{name: "uv run python", cmd: `uv run --with requests python -c "open('u.txt','w')"`, writes: []Write{bw("u.txt", "python")}},
	{name: "eval literal", cmd: `eval 'echo > e.json'`, writes: []Write{bw("e.json", "redirect")}},
	{name: "eval non-literal", cmd: `eval "echo > $X"`, writes: []Write{dyn("$(...)", "", "redirect")}, dynamic: true},
	{name: "eval too deep", cmd: strings.Repeat("eval ", 12) + "touch deep", dynamic: true},

	// Directories.
	{name: "cd joins", cmd: `cd a && cd ../b && touch f`, writes: []Write{bwd("f", "b", "touch")}},
	{name: "cd absolute", cmd: `cd /tmp && touch f`, writes: []Write{bwd("f", "/tmp", "touch")}},
	{name: "cd home", cmd: `cd && touch f`, writes: []Write{dyn("f", "~", "touch")}, dynamic: true},
	{name: "cd windows drive", cmd: `cd "C:/Users/me/proj" && echo >> .gitignore`, writes: []Write{bwd(".gitignore", "C:/Users/me/proj", "redirect")}},
	{name: "pushd popd", cmd: `pushd a && touch f && popd && touch g`, writes: []Write{bwd("f", "a", "touch"), bw("g", "touch")}},
	{name: "cd -", cmd: `cd a && cd - && touch f`, writes: []Write{bw("f", "touch")}},
	{name: "cd - first", cmd: `cd - && touch f`, writes: []Write{dyn("f", "$OLDPWD", "touch")}, dynamic: true},
	{name: "cd - back", cmd: `cd a && cd b && cd - && touch f`, writes: []Write{bwd("f", "a", "touch")}},
	{name: "cd variable", cmd: `cd "$D" && touch f`, writes: []Write{dyn("f", "$D", "touch")}, dynamic: true},
	{name: "cd variable, absolute write", cmd: `cd "$D" && touch /abs/f`, writes: []Write{bwd("/abs/f", "$D", "touch")}},
	{name: "cd in a pipeline stays there", cmd: `echo x | cd a; touch f`, writes: []Write{bw("f", "touch")}},
	{name: "cd in one branch", cmd: `if test -d a; then cd a; fi; touch f`, writes: []Write{bwd("f", "a", "touch"), bw("f", "touch")}},

	// git, files.
	{name: "git checkout branch", cmd: `git checkout main; git checkout -b feat; git switch x`},
	{name: "git checkout paths", cmd: `git checkout -- .des/state.json; git checkout HEAD~1 s.json; git checkout .; git checkout main -- a`,
		writes: []Write{bw(".des/state.json", "git checkout"), {Path: "s.json", How: "git checkout", Detail: "HEAD~1"}, bw(".", "git checkout"), {Path: "a", How: "git checkout", Detail: "main"}}},
	{name: "git restore rm mv", cmd: `git restore --staged f0; git restore f1; git rm --cached f2; git rm f3; git mv f4 f5; git restore -s HEAD~2 f6; git restore -SW f7`,
		writes: []Write{bw("f1", "git restore"), bw("f3", "git rm"), bw("f4", "git mv"), bw("f5", "git mv"), {Path: "f6", How: "git restore", Detail: "HEAD~2"}, {Path: "f7", How: "git restore", Detail: "HEAD"}}},
	{name: "git -C and files", cmd: `git -C sub rm x`, writes: []Write{bwd("x", "sub", "git rm")}},

	// git commit (issue 6, item 4).
	{name: "commit", cmd: `git commit -m x`, commits: []GitCommit{gc("", "-m", "x")}},
	{name: "amend", cmd: `git commit --amend --no-edit`, commits: []GitCommit{gc("", "--amend", "--no-edit")}},
	{name: "commit chained, && in message", cmd: `git add . && git commit -m "a && b"`, commits: []GitCommit{gc("", "-m", "a && b")}, adds: []GitAdd{{Args: []string{"."}}}},
	{name: "commit multi-line", cmd: "git add -A\ngit commit \\\n  -m 'msg'\necho done", commits: []GitCommit{gc("", "-m", "msg")}, adds: []GitAdd{{Args: []string{"-A"}}}},
	// git add before a commit (Gate 3 judges what the command stages).
	{name: "add in a directory", cmd: `cd docs && git add feature/x/steps/01-01.json "$F" && git -C .. stage -u`,
		adds: []GitAdd{{Dir: "docs", Args: []string{"feature/x/steps/01-01.json", "$F"}}, {Args: []string{"-u"}}}},
	{name: "add through bash -c", cmd: `bash -c 'git add -A && git commit -qm x'`, commits: []GitCommit{gc("", "-qm", "x")}, adds: []GitAdd{{Args: []string{"-A"}}}},
	{name: "not add-on words", cmd: `echo git add x; git config alias.add x`},
	{name: "unknown subcommand is an alias", cmd: `git add-on; git ci -m x`, commits: []GitCommit{{Subcommand: "add-on", Alias: true}, {Subcommand: "ci", Alias: true, Args: []string{"-m", "x"}}}},
	{name: "commit after cd", cmd: `cd repo && git commit`, commits: []GitCommit{gc("repo")}},
	{name: "commit -C", cmd: `git -C sub commit -m x`, commits: []GitCommit{opts(gc("sub", "-m", "x"), "-C", "sub")}},
	{name: "commit cd and -C", cmd: `cd a && cd b && git -C ../c commit -q`, commits: []GitCommit{opts(gc("a/c", "-q"), "-C", "../c")}},
	{name: "commit with assignment", cmd: `GIT_AUTHOR_NAME=x git commit`, commits: []GitCommit{gc("")}},
	{name: "commit global options", cmd: `git -c user.name=x --no-pager commit -a; git --git-dir .git commit`, commits: []GitCommit{opts(gc("", "-a"), "-c", "user.name=x", "--no-pager"), opts(gc(""), "--git-dir", ".git")}},
	{name: "commit through wrappers", cmd: `sudo git commit; env -C w git commit; command git commit; bash -c 'git commit -m y'`,
		commits: []GitCommit{gc(""), gc("w"), gc(""), gc("", "-m", "y")}},
	{name: "commit message from here-document", cmd: "git commit -m \"$(cat <<'EOF'\nfeat: x\n\nbody\nEOF\n)\"",
		commits: []GitCommit{gc("", "-m", "$(cat <<'EOF'\nfeat: x\n\nbody\nEOF\n)")}},
	{name: "commit in a loop", cmd: `for b in a b; do git checkout "$b" && git commit --allow-empty -m x; done`,
		commits: []GitCommit{gc("", "--allow-empty", "-m", "x")}},
	{name: "commit after unknown cd", cmd: `cd "$R" && git commit`, commits: []GitCommit{{Dir: "$R", Subcommand: "commit", Dynamic: true}}, dynamic: true},
	{name: "commit-tree", cmd: `git commit-tree HEAD^{tree} -m x`, commits: []GitCommit{{Subcommand: "commit-tree", Args: []string{"HEAD^{tree}", "-m", "x"}}}},
	{name: "not echo git commit", cmd: `echo git commit; printf 'git commit\n'`},
	{name: "not log --grep commit", cmd: `git log --grep commit`},
	{name: "not config commit.gpgsign", cmd: `git config commit.gpgsign true`},
	{name: "a computed subcommand", cmd: `git $SUB -m x`, commits: []GitCommit{{Subcommand: "$SUB", Args: []string{"-m", "x"}, Dynamic: true}}, dynamic: true},

	// Unparsable: conservative scan.
	{name: "unterminated quote", cmd: `echo 'unterminated`, parseErr: true, dynamic: true},
	{name: "unterminated with a redirect", cmd: `echo 'unterminated > x.json`, parseErr: true, dynamic: true, writes: []Write{bw("x.json", "redirect")}},
	{name: "unparsable, later lines", cmd: "echo 'oops\nrm -rf .des && git commit -m x", parseErr: true, dynamic: true,
		writes: []Write{bw(".des", "rm")}, commits: []GitCommit{gc("", "-m", "x")}},
	{name: "unparsable, here-document body skipped", cmd: "cat <<EOF )\nrm nothing\nEOF\ntee y.json", parseErr: true, dynamic: true,
		writes: []Write{bw("y.json", "tee")}},
	{name: "unparsable, compound keywords", cmd: "if true; then rm k.json; fi; echo 'x", parseErr: true, dynamic: true,
		writes: []Write{bw("k.json", "rm")}},
	{name: "unparsable, attached perl script", cmd: "perl -e$X 'x", parseErr: true, dynamic: true},
	{name: "fuzz: attached perl script in the scan", cmd: "perl -e$00000000\"", parseErr: true, dynamic: true},
	{name: "too deeply nested", cmd: strings.Repeat("(", maxNesting+10) + "echo > n.json", parseErr: true, dynamic: true,
		writes: []Write{bw("n.json", "redirect")}},
}

func TestAnalyze(t *testing.T) {
	names := map[string]bool{}
	for _, c := range testCases {
		if names[c.name] {
			t.Fatalf("duplicate case name %q", c.name)
		}
		names[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			got := Analyze(c.cmd)
			want := Analysis{Writes: c.writes, Dynamic: c.dynamic, GitCommits: c.commits, GitAdds: c.adds}
			gotCmp := got
			gotCmp.ParseError = ""
			gotCmp.GitRuns = nil    // TestGitRuns
			gotCmp.Detaches = false // TestAnalyzeDetaches
			gotCmp.Runs = nil       // TestRuns
			if diff := cmp.Diff(want, gotCmp, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Analyze(%q) mismatch (-want +got):\n%s", c.cmd, diff)
			}
			if (got.ParseError != "") != c.parseErr {
				t.Errorf("Analyze(%q).ParseError = %q, want set: %v", c.cmd, got.ParseError, c.parseErr)
			}
			checkInvariants(t, c.cmd, got)
		})
	}
}

// checkInvariants holds for every answer, whatever the input.
func checkInvariants(t *testing.T, cmd string, r Analysis) {
	t.Helper()
	for _, w := range r.Writes {
		if w.Path == "" || !slices.Contains(Hows, w.How) {
			t.Errorf("Analyze(%q): bad write %+v", cmd, w)
		}
		if isDevice(w.Path) {
			t.Errorf("Analyze(%q): device reported as a write: %+v", cmd, w)
		}
		if w.Dynamic && !r.Dynamic {
			t.Errorf("Analyze(%q): Dynamic write %+v without Analysis.Dynamic", cmd, w)
		}
	}
	for _, c := range r.GitCommits {
		if c.Subcommand == "" || c.Dynamic && !r.Dynamic {
			t.Errorf("Analyze(%q): bad commit %+v (Analysis.Dynamic %v)", cmd, c, r.Dynamic)
		}
	}
	if r.ParseError != "" && !r.Dynamic {
		t.Errorf("Analyze(%q): ParseError without Dynamic", cmd)
	}
}

func TestBashWriteHowsUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, h := range Hows {
		if h == "" || seen[h] {
			t.Errorf("How %q empty or listed twice", h)
		}
		seen[h] = true
	}
}

// The result does not depend on earlier calls (the walker mutates the AST it
// parsed, never shared state).
func TestAnalyzeDeterministic(t *testing.T) {
	for _, c := range testCases {
		a, b := Analyze(c.cmd), Analyze(c.cmd)
		if diff := cmp.Diff(a, b); diff != "" {
			t.Errorf("Analyze(%q) differs between calls:\n%s", c.cmd, diff)
		}
	}
}

// A bug in the walker must answer "DES cannot see", never crash the hook.
func TestBashPanicResult(t *testing.T) {
	r := panicResult("echo x > p.json", "boom")
	if !r.Dynamic || !strings.Contains(r.ParseError, "boom") {
		t.Errorf("panicResult = %+v", r)
	}
	if diff := cmp.Diff([]Write{bw("p.json", "redirect")}, r.Writes); diff != "" {
		t.Errorf("panicResult writes (-want +got):\n%s", diff)
	}
}

// Big or adversarial commands (the hook accepts 8 MiB events) stay roughly
// linear: each once took seconds to minutes before DES bounded it.
func TestAnalyzeLargeInputs(t *testing.T) {
	if testing.Short() {
		t.Skip("large inputs")
	}
	cases := []struct {
		name    string
		cmd     string
		dynamic bool
		writes  int
	}{
		{"perl paren-less calls", "perl -e '" + strings.Repeat("unlink ", 200000) + "'", true, 0},
		{"node method calls", "node -e '" + strings.Repeat("x.rm(a) ", 100000) + "'", true, 0},
		{"many statements", strings.Repeat("echo > a$RANDOM; touch b; ", 20000), true, 2},
		{"pushd and pipelines", strings.Repeat("pushd a; ", 20000) + strings.Repeat("a | b; ", 20000), true, 0},
		{"endless cd", strings.Repeat("cd a; ", 100000) + "touch f", true, 1},
		{"endless cd, parsed", strings.Repeat("cd a; ", maxTokens/4) + "touch f", true, maxDirs},
		{"brace soup", "touch " + strings.Repeat("{a,b}", 200) + " " + strings.Repeat("{x,", 5000), true, 2},
		{"nested just under the limit", strings.Repeat("$(", maxNesting-10) + strings.Repeat(")", maxNesting-10), true, 0}, // $(...) as a command name
		{"nested in an unquoted here-document", "cat <<EOF\n" + strings.Repeat("(", maxNesting+1) + "\nEOF", true, 0},
		{"huge here-document", "cat > big.py <<'EOF'\n" + strings.Repeat("if x: open('y', 'w')\n", 50000) + "EOF", false, 1},
	}
	for _, c := range cases {
		start := time.Now()
		r := analyze(c.cmd)
		elapsed := time.Since(start)
		t.Logf("%-28s %8d bytes in %v", c.name, len(c.cmd), elapsed)
		if elapsed > 20*time.Second {
			t.Errorf("%s: %v, want well under 20s", c.name, elapsed)
		}
		if r.Dynamic != c.dynamic || len(r.Writes) != c.writes {
			t.Errorf("%s: Dynamic=%v writes=%d (%.200v), want %v and %d", c.name, r.Dynamic, len(r.Writes), r.Writes, c.dynamic, c.writes)
		}
		checkInvariants(t, c.name, r)
	}
}

const corpusGlob = "../../../shared/corpus/claude-code-hooks/real_logs_clean/*/PreToolUse__Bash.jsonl"

// Every real Bash command of the shared corpus is analysed without a panic;
// the log says what DES saw in them.
func TestAnalyzeCorpus(t *testing.T) {
	files, err := filepath.Glob(corpusGlob)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Skipf("no Bash hook logs at %s (the shared corpus is not checked out next to the repository)", corpusGlob)
	}
	var total, withWrites, withCommits, dynamic, parseErrors, writes int
	for _, f := range files {
		fh, err := os.Open(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 16<<20)
		line := 0
		for sc.Scan() {
			line++
			var rec struct {
				Payload struct {
					ToolInput struct {
						Command string `json:"command"`
					} `json:"tool_input"`
				} `json:"payload"`
			}
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				t.Errorf("%s:%d: %v", f, line, err)
				continue
			}
			cmd := rec.Payload.ToolInput.Command
			if cmd == "" {
				continue
			}
			total++
			r := analyze(cmd) // without the recover of Analyze: a panic fails the test
			checkInvariants(t, cmd, r)
			if len(r.Writes) > 0 {
				withWrites++
				writes += len(r.Writes)
			}
			if len(r.GitCommits) > 0 {
				withCommits++
			}
			if r.Dynamic {
				dynamic++
			}
			if r.ParseError != "" {
				parseErrors++
				t.Logf("%s:%d: parse error %s", filepath.Base(filepath.Dir(f)), line, r.ParseError)
			}
		}
		if err := sc.Err(); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		fh.Close()
	}
	if total == 0 {
		t.Fatalf("no commands read from %d files", len(files))
	}
	t.Logf("corpus: %d Bash commands in %d files: %d with writes (%d writes), %d with git commits, %d dynamic, %d parse errors",
		total, len(files), withWrites, writes, withCommits, dynamic, parseErrors)
}

// FuzzAnalyze checks that any input gives an answer, the same one twice,
// within the invariants. Only its seeds run under plain `go test`.
func FuzzAnalyze(f *testing.F) {
	for _, c := range testCases {
		if len(c.cmd) < 4096 {
			f.Add(c.cmd)
		}
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		a := analyze(cmd) // a panic is a finding
		b := analyze(cmd)
		if diff := cmp.Diff(a, b); diff != "" {
			t.Fatalf("not deterministic for %q:\n%s", cmd, diff)
		}
		checkInvariants(t, cmd, a)
	})
}

// benchCommand is a realistic chained command of about 300 bytes.
const benchCommand = `cd /Users/dev/projects/app && git add src/main.go docs/feature/auth/steps/01-02.json && ` +
	`python3 -m pytest tests/ -q 2>&1 | tail -5 && echo '{"ok":true}' > .des/tmp/result.json && ` +
	`sed -i 's/TODO/DONE/' notes.md && jq .current_phase .des/state.json && ` +
	`git commit -m "feat(auth): add the login flow and its tests"`

func BenchmarkAnalyze(b *testing.B) {
	b.SetBytes(int64(len(benchCommand)))
	b.ReportAllocs()
	for b.Loop() {
		r := Analyze(benchCommand)
		if len(r.Writes) != 2 || len(r.GitCommits) != 1 {
			b.Fatalf("unexpected analysis %+v", r)
		}
	}
}

// Variables the command does not assign expand from the environment it
// starts with; assigned, unset or read ones do not.
func TestAnalyzeEnvironment(t *testing.T) {
	env := func(k string) (string, bool) {
		v, ok := map[string]string{"CLAUDE_PROJECT_DIR": "/p", "DES_STATE_DIR": "/s"}[k]
		return v, ok
	}
	cases := []struct {
		cmd, want string
		dynamic   bool
	}{
		{`echo x > "$CLAUDE_PROJECT_DIR/.des/config.json"`, "/p/.des/config.json", false},
		{`rm -rf "$DES_STATE_DIR"`, "/s", false},
		{`DES_STATE_DIR=/t; rm -rf "$DES_STATE_DIR"`, "/t", false},
		{`unset DES_STATE_DIR; rm -rf "$DES_STATE_DIR"/x`, "$DES_STATE_DIR/x", true},
		{`echo x > "$UNSET_ELSEWHERE/f"`, "$UNSET_ELSEWHERE/f", true},
	}
	for _, c := range cases {
		a := Analyze(c.cmd, WithCwd("/p"), WithEnv(env))
		if len(a.Writes) == 0 {
			t.Errorf("%s: no write", c.cmd)
			continue
		}
		if w := a.Writes[0]; w.Path != c.want || w.Dynamic != c.dynamic {
			t.Errorf("%s: write %q dynamic %v, want %q dynamic %v", c.cmd, w.Path, w.Dynamic, c.want, c.dynamic)
		}
	}
}

// Detaches is what the command runs, not its text: an "&" or a detaching
// word inside a quoted argument is not, one in a literal nested script is.
func TestAnalyzeDetaches(t *testing.T) {
	for cmd, want := range map[string]bool{
		`echo "Tom & Jerry"`:                   false,
		`git commit -qm 'a & b' && echo nohup`: false,
		"a && b || c | d":                      false,
		"sleep 5 &":                            true,
		"coproc cat":                           true,
		"sudo nohup make":                      true,
		"env setsid x":                         true,
		`bash -c 'sleep 9 &'`:                  true,
		`x=$(sleep 9 &)`:                       true,
		`python3 -c 'import os; os.system("tmux new -d")'`: true,
	} {
		if got := Analyze(cmd).Detaches; got != want {
			t.Errorf("Analyze(%q).Detaches = %v, want %v", cmd, got, want)
		}
	}
}
