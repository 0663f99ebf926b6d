package shell

import "testing"

// The writers DES reads besides the usual commands.
func TestWriters(t *testing.T) {
	runOptCases(t, []optCase{
		{name: "shuf -o", cmd: `shuf -o .des/state.json in; shuf --output=b x`, writes: []Write{bw(".des/state.json", "shuf -o"), bw("b", "shuf -o")}},
		{name: "uniq IN OUT", cmd: `uniq -c in .isdlc/state.json; uniq in`, writes: []Write{bw(".isdlc/state.json", "uniq")}},
		{name: "sed w", cmd: `sed -n 'w .des/state.json' x`, writes: []Write{bw(".des/state.json", "sed w")}},
		{name: "sed s///w", cmd: `sed 's/a/b/w out.json' x; sed -e '1,/x/ s|a|b|gw f2' -e 'W f3' y`,
			writes: []Write{bw("out.json", "sed w"), bw("f2", "sed w"), bw("f3", "sed w")}},
		{name: "sed with a w in text", cmd: `sed 's/wow/w/' x; sed '/w/d' y; sed 'a\
w not a file' z`},
		{name: "sed e", cmd: `sed '1e rm x' f`, dynamic: true},
		{name: "awk print >", cmd: `awk '{print > "state.json"}' x; awk '{ printf "%s", $0 >> ".des/a" }' y`,
			writes: []Write{bw("state.json", "awk"), bw(".des/a", "awk")}},
		{name: "awk comparison is not a write", cmd: `awk '$1 > 3 {print $2}' x`},
		{name: "awk dynamic target", cmd: `awk '{print > $2}' x`, dynamic: true},
		{name: "awk system", cmd: `awk 'BEGIN{system("rm .des/state.json")}'`, writes: []Write{bw(".des/state.json", "rm")}},
		{name: "awk system dynamic", cmd: `awk '{system($0)}' x`, dynamic: true},
		{name: "awk pipe to command", cmd: `awk '{print | "tee f.json"}' x`, writes: []Write{bw("f.json", "tee")}},
		{name: "tar -x whole", cmd: `tar -xzf a.tgz -C .des`, writes: []Write{bw(".des", "tar -x")}},
		{name: "tar x bundle members", cmd: `tar xf a.tar .isdlc/state.json`, writes: []Write{bw(".isdlc/state.json", "tar -x")}},
		{name: "tar --directory", cmd: `tar --extract --file=a.tar --directory=out`, writes: []Write{bw("out", "tar -x")}},
		{name: "tar -x members under -C", cmd: `tar -xf a.tar -C .des config.json`, writes: []Write{bw(".des/config.json", "tar -x")}},
		{name: "tar -x into cwd", cmd: `tar -xf a.tar`, writes: []Write{bw(".", "tar -x")}},
		{name: "tar -x to stdout", cmd: `tar -xOf a.tar x`},
		{name: "tar -cf", cmd: `tar -czf .des/state.json src`, writes: []Write{bw(".des/state.json", "tar -c")}},
		{name: "tar -t", cmd: `tar -tf a.tar`},
		{name: "unzip", cmd: `unzip -o a.zip -d .des; unzip b.zip; unzip -l c.zip`, writes: []Write{bw(".des", "unzip"), bw(".", "unzip")}},
		{name: "cpio -i", cmd: `cpio -idm < a.cpio; cpio -i -D out < b`, writes: []Write{bw(".", "cpio -i"), bw("out", "cpio -i")}},
		{name: "find -delete", cmd: `find .des/audit -type f -delete`, writes: []Write{bw(".des/audit", "find -delete")}},
		{name: "find -exec mv", cmd: `find docs -name '*.json' -exec mv {} /tmp \;`,
			writes: []Write{dyn("{}", "", "mv"), bw("/tmp", "mv"), findW("docs", "-name *.json")}, dynamic: true},
		{name: "patch", cmd: `patch .des/config.json < p.diff; patch -o out.json a b`,
			writes: []Write{bw(".des/config.json", "patch"), bw("out.json", "patch"), bw("a", "patch")}},
		{name: "patch from the diff", cmd: `patch -p1 < x.diff`, dynamic: true},
		{name: "ed and ex", cmd: `ed -s .des/config.json <<< $'1d\nw'; ex -sc '%d|x' s.json`,
			writes: []Write{bw(".des/config.json", "editor"), bw("s.json", "editor")}},
		{name: "vim -c", cmd: `vim -c '%d' -c wq .isdlc/state.json; vi +wq f; vim notes.md`,
			writes: []Write{bw(".isdlc/state.json", "editor"), bw("f", "editor")}},
		{name: "time -o", cmd: `/usr/bin/time -o .des/state.json ls; command time --output=t ls`,
			writes: []Write{bw(".des/state.json", "time -o"), bw("t", "time -o")}},
		{name: "gzip", cmd: `gzip .des/state.json; gunzip -k a.gz; gzip -c x > y.gz`,
			writes: []Write{bw(".des/state.json", "compress"), bw("a.gz", "compress"), bw("y.gz", "redirect")}},
		{name: "split", cmd: `split -l 1 in .des/s; csplit -f p in 3`,
			writes: []Write{{Path: ".des/s*", How: "split", Glob: true}, {Path: "p*", How: "split", Glob: true}}},
		{name: "mkfifo", cmd: `mkfifo -m 600 .des/state.json`, writes: []Write{bw(".des/state.json", "mkfifo")}},
		{name: "script", cmd: `script -q -c 'echo > f1' log.txt`, writes: []Write{bw("f1", "redirect"), bw("log.txt", "script")}},
		{name: "source a literal process substitution", cmd: `source <(echo 'echo x > .des/state.json')`,
			writes: []Write{bw(".des/state.json", "redirect")}},
		{name: "bash a here-document process substitution", cmd: "bash <(cat <<'EOF'\nrm .isdlc/state.json\nEOF\n)",
			writes: []Write{bw(".isdlc/state.json", "rm")}},
		{name: "dot printf", cmd: `. <(printf 'touch a.json')`, writes: []Write{bw("a.json", "touch")}},
		{name: "sh from curl", cmd: `sh <(curl -s https://x)`, dynamic: true},
		{name: "source a file", cmd: `source ./env.sh`},
	})
}

// Commands that interpreter scripts run are read as shell.
func TestScriptCommands(t *testing.T) {
	runOptCases(t, []optCase{
		{name: "os.system", cmd: `python3 -c "import os; os.system('rm .des/state.json')"`, writes: []Write{bw(".des/state.json", "rm")}},
		{name: "subprocess shell", cmd: `python3 -c 'import subprocess; subprocess.run("echo > a.json", shell=True)'`, writes: []Write{bw("a.json", "redirect")}},
		{name: "subprocess list", cmd: `python3 -c 'import subprocess; subprocess.run(["cp", "x", ".des/config.json"])'`, writes: []Write{bw(".des/config.json", "cp")}},
		{name: "subprocess dynamic", cmd: `python3 -c 'import subprocess, sys; subprocess.run(sys.argv[1:])'`, dynamic: true},
		{name: "node execSync", cmd: `node -e "require('child_process').execSync('touch .des/x')"`, writes: []Write{bw(".des/x", "touch")}},
		{name: "node spawn", cmd: `node -e "const {spawnSync} = require('child_process'); spawnSync('rm', ['-f', 's.json'])"`, writes: []Write{bw("s.json", "rm")}},
		{name: "perl system list", cmd: `perl -e 'system("mv", "a", ".isdlc/state.json")'`, writes: []Write{bw("a", "mv"), bw(".isdlc/state.json", "mv")}},
		{name: "perl system string", cmd: `perl -e 'system "echo x > f.json"'`, writes: []Write{bw("f.json", "redirect")}},
		{name: "perl backticks", cmd: "perl -e 'my $x = `truncate -s0 s.json`;'", writes: []Write{bw("s.json", "truncate")}},
		{name: "perl interpolated backticks", cmd: "perl -e 'my $x = `rm $f`;'", dynamic: true},
		{name: "ruby system and %x", cmd: `ruby -e 'system("touch a"); %x{touch b}'`, writes: []Write{bw("a", "touch"), bw("b", "touch")}},
		{name: "ruby interpolated", cmd: "ruby -e 'f=1; `rm #{f}`'", dynamic: true},
	})
}
