package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The README's examples are run as written. A fenced block preceded by a
// marker line takes part:
//
//	<!-- readme-test: NAME run [N] -->   the commands (the first N of them when N is given)
//	<!-- readme-test: NAME stdout N -->  what command N prints
//	<!-- readme-test: NAME reason N -->  the reason in the JSON command N prints (a deny's
//	                                     permissionDecisionReason, a block's reason, else the
//	                                     systemMessage or additionalContext)
//	<!-- readme-test: NAME audit -->     the last line of the audit trail of the project the
//	                                     commands made with mktemp -d
//	<!-- readme-test: NAME session -->   a terminal session: each "$ " line is a command, the
//	                                     lines after it what it prints (exit statuses kept, so
//	                                     "$ echo $?" shows the command's before)
//
// The blocks of one NAME run in one bash, in the README's order (N counts
// the commands of the run block, which comes first), from the repository
// root, one command per line (a line ending in "\" continues), with the
// built hook in place of `go run ./examples/des-engine` and of `des-hook`. A run
// block's failing command stops the example. What the README shows is
// compared with what the commands print, with timestamps, dates in audit
// file names and SHA-256 hashes made neutral (a hash shown twice must be the
// same hash twice), and duration_ms left out of JSON; a shown text that ends
// with a "..." or "…" line shows only its start.

const readmePath = "../../README.md"

var (
	readmeMarker = regexp.MustCompile(`^<!-- readme-test: ([a-z0-9-]+) (run|stdout|reason|audit|session)(?: ([0-9]+))? -->$`)
	rfc3339      = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	auditDay     = regexp.MustCompile(`audit-\d{4}-\d\d-\d\d\.log`)
	sha256Hex    = regexp.MustCompile(`\b[0-9a-f]{64}\b`)
	hookWord     = regexp.MustCompile(`(^|[\s;&|(])des-hook\b`)
)

// readmeBlock is one marked fenced block.
type readmeBlock struct {
	name, kind string
	n          int // command number, or how many to run (0: all)
	lang, text string
	line       int
}

func readmeBlocks(t *testing.T) map[string][]readmeBlock {
	t.Helper()
	raw, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	out := map[string][]readmeBlock{}
	for i := 0; i < len(lines); i++ {
		m := readmeMarker.FindStringSubmatch(lines[i])
		if m == nil {
			if strings.HasPrefix(strings.TrimSpace(lines[i]), "<!-- readme-test:") {
				t.Errorf("README.md:%d: malformed marker %q", i+1, lines[i])
			}
			continue
		}
		b := readmeBlock{name: m[1], kind: m[2], line: i + 1}
		if m[3] != "" {
			b.n, _ = strconv.Atoi(m[3])
		}
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			t.Fatalf("README.md:%d: the marker is not followed by a fenced block", i+1)
		}
		b.lang = strings.TrimPrefix(lines[i+1], "```")
		end := slices.IndexFunc(lines[i+2:], func(l string) bool { return l == "```" })
		if end < 0 {
			t.Fatalf("README.md:%d: unterminated block", i+2)
		}
		b.text = strings.Join(lines[i+2:i+2+end], "\n")
		out[b.name] = append(out[b.name], b)
		i += 2 + end
	}
	return out
}

// readmeCommands splits a run block into commands.
func readmeCommands(text string) []string {
	var cmds []string
	var cur strings.Builder
	for _, l := range strings.Split(text, "\n") {
		if cont, ok := strings.CutSuffix(l, `\`); ok {
			cur.WriteString(cont)
			continue
		}
		cur.WriteString(l)
		c := strings.TrimSpace(cur.String())
		cur.Reset()
		if c != "" && !strings.HasPrefix(c, "#") {
			cmds = append(cmds, c)
		}
	}
	return cmds
}

const readmeSep = "@@readme-test-separator@@"

// readmeCommand is one command of an example; a run block's must succeed.
type readmeCommand struct {
	text        string
	mustSucceed bool
}

// runReadmeCommands runs cmds in one bash, from the repository root, with
// TMPDIR set to tmp, and returns what each printed.
func runReadmeCommands(t *testing.T, cmds []readmeCommand, tmp string) []string {
	t.Helper()
	var script strings.Builder
	for _, c := range cmds {
		text := strings.ReplaceAll(c.text, "go run ./examples/des-engine", `"$DES_HOOK"`)
		text = hookWord.ReplaceAllString(text, `$1"$$DES_HOOK"`)
		// The separator's printf must not lose the command's status: a
		// session's "echo $?" shows it, and a run block stops on it.
		after := "(exit $__rc)"
		if c.mustSucceed {
			after = "[ $__rc -eq 0 ] || exit $__rc"
		}
		fmt.Fprintf(&script, "%s\n__rc=$?; printf '\\n%s\\n'; %s\n", text, readmeSep, after)
	}
	cmd := exec.CommandContext(t.Context(), "bash", "-c", script.String())
	cmd.Dir = "../.."
	cmd.Env = append(cleanEnviron(), "TMPDIR="+tmp, "DES_HOOK="+hookBin)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\nscript:\n%s\nstdout:\n%s\nstderr:\n%s", err, script.String(), stdout.String(), stderr.String())
	}
	parts := strings.Split(stdout.String(), "\n"+readmeSep+"\n")
	if len(parts) != len(cmds)+1 {
		t.Fatalf("got %d outputs for %d commands:\n%s", len(parts)-1, len(cmds), stdout.String())
	}
	for i := range parts {
		parts[i] = strings.TrimRight(parts[i], "\n")
	}
	return parts[:len(cmds)]
}

// sessionCommands splits a session block into its commands and what each
// is shown to print.
func sessionCommands(text string) (cmds []readmeCommand, shown []string) {
	for _, l := range strings.Split(text, "\n") {
		if c, ok := strings.CutPrefix(l, "$ "); ok {
			cmds = append(cmds, readmeCommand{text: c})
			shown = append(shown, "")
			continue
		}
		if len(shown) > 0 {
			if shown[len(shown)-1] != "" {
				shown[len(shown)-1] += "\n"
			}
			shown[len(shown)-1] += l
		}
	}
	return cmds, shown
}

// neutral makes the parts of s that change from run to run neutral:
// timestamps, audit day files, and SHA-256 hashes, numbered in the order
// seen (hashes keeps the numbering across calls).
func neutral(s string, hashes map[string]string) string {
	s = rfc3339.ReplaceAllString(s, "<time>")
	s = auditDay.ReplaceAllString(s, "audit-<date>.log")
	return sha256Hex.ReplaceAllStringFunc(s, func(h string) string {
		if _, ok := hashes[h]; !ok {
			hashes[h] = fmt.Sprintf("<sha256 #%d>", len(hashes)+1)
		}
		return hashes[h]
	})
}

// hookMessage is the text a hook's JSON answer carries for Claude or the user.
func hookMessage(t *testing.T, out string) string {
	t.Helper()
	var o struct {
		Reason        string `json:"reason"`
		SystemMessage string `json:"systemMessage"`
		Specific      struct {
			PermissionDecisionReason string `json:"permissionDecisionReason"`
			AdditionalContext        string `json:"additionalContext"`
		} `json:"hookSpecificOutput"`
	}
	if err := json.Unmarshal([]byte(out), &o); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	for _, s := range []string{o.Specific.PermissionDecisionReason, o.Reason, o.SystemMessage, o.Specific.AdditionalContext} {
		if s != "" {
			return s
		}
	}
	t.Fatalf("no message in %s", out)
	return ""
}

// lastAuditLine is the last line of the trail of the one project under tmp.
func lastAuditLine(t *testing.T, tmp string) string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(tmp, "*", ".des", "audit"))
	if len(dirs) != 1 {
		t.Fatalf("want one project with an audit trail under %s, found %v", tmp, dirs)
	}
	files, _ := filepath.Glob(filepath.Join(dirs[0], "audit-*.log"))
	if len(files) == 0 {
		t.Fatalf("no audit file in %s", dirs[0])
	}
	sort.Strings(files)
	raw, err := os.ReadFile(files[len(files)-1])
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	return lines[len(lines)-1]
}

// sameAsShown compares what the README shows with what ran.
func sameAsShown(t *testing.T, b readmeBlock, got string) {
	t.Helper()
	compareShown(t, b, b.text, got, map[string]string{}, map[string]string{})
}

// compareShown compares a text shown in block b with what ran.
func compareShown(t *testing.T, b readmeBlock, want, got string, wantHashes, gotHashes map[string]string) {
	t.Helper()
	want, got = neutral(want, wantHashes), neutral(got, gotHashes)
	if b.lang == "json" {
		var w, g map[string]any
		if err := json.Unmarshal([]byte(want), &w); err != nil {
			t.Fatalf("README.md:%d: the shown JSON does not parse: %v", b.line, err)
		}
		if err := json.Unmarshal([]byte(got), &g); err != nil {
			t.Fatalf("README.md:%d: the output is not one JSON object: %v\n%s", b.line, err, got)
		}
		delete(w, "duration_ms")
		delete(g, "duration_ms")
		if !reflect.DeepEqual(w, g) {
			t.Errorf("README.md:%d shows\n%s\nbut the command gives\n%s", b.line, want, got)
		}
		return
	}
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	if last := strings.TrimSpace(wl[len(wl)-1]); last == "..." || last == "- ..." || last == "…" || last == "- …" {
		wl = wl[:len(wl)-1]
		if len(gl) > len(wl) {
			gl = gl[:len(wl)]
		}
	}
	if !slices.Equal(wl, gl) {
		t.Errorf("README.md:%d shows\n%s\nbut the command gives\n%s", b.line, strings.Join(wl, "\n"), strings.Join(gl, "\n"))
	}
}

func TestE2EReadmeExamples(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("the README's examples are bash")
	}
	groups := readmeBlocks(t)
	if len(groups) == 0 {
		t.Fatal("no readme-test markers in the README")
	}
	for name, blocks := range groups {
		t.Run(name, func(t *testing.T) {
			if blocks[0].kind != "run" && blocks[0].kind != "session" {
				t.Fatalf("README.md:%d: example %q starts with a %s block, not its commands", blocks[0].line, name, blocks[0].kind)
			}
			var cmds []readmeCommand
			type sessionPart struct {
				block readmeBlock
				first int // index of its first command
				shown []string
			}
			var sessions []sessionPart
			checks := 0
			for _, b := range blocks {
				switch b.kind {
				case "run":
					texts := readmeCommands(b.text)
					if b.n > 0 && b.n < len(texts) {
						texts = texts[:b.n]
					}
					for _, c := range texts {
						cmds = append(cmds, readmeCommand{text: c, mustSucceed: true})
					}
				case "session":
					sc, shown := sessionCommands(b.text)
					sessions = append(sessions, sessionPart{b, len(cmds), shown})
					cmds = append(cmds, sc...)
					checks++
				default:
					checks++
				}
			}
			if checks == 0 {
				t.Fatalf("example %q shows nothing to compare", name)
			}
			tmp := t.TempDir()
			outs := runReadmeCommands(t, cmds, tmp)
			for _, b := range blocks {
				switch {
				case b.kind == "run" || b.kind == "session":
				case b.kind == "audit":
					sameAsShown(t, b, lastAuditLine(t, tmp))
				case b.n < 1 || b.n > len(outs):
					t.Errorf("README.md:%d: command %d of %d", b.line, b.n, len(outs))
				case b.kind == "stdout":
					sameAsShown(t, b, outs[b.n-1])
				case b.kind == "reason":
					sameAsShown(t, b, hookMessage(t, outs[b.n-1]))
				}
			}
			for _, sp := range sessions {
				wantHashes, gotHashes := map[string]string{}, map[string]string{}
				for i, shown := range sp.shown {
					compareShown(t, sp.block, shown, outs[sp.first+i], wantHashes, gotHashes)
				}
			}
		})
	}
}

// Every test the README and docs name as proof exists: a renamed or removed
// test must take its claim with it.
func TestReadmeNamesTestsThatExist(t *testing.T) {
	t.Parallel()
	defined := map[string]bool{}
	err := filepath.WalkDir("../..", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range regexp.MustCompile(`(?m)^func ((?:Test|Benchmark)\w+)\(`).FindAllStringSubmatch(string(data), -1) {
			defined[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{readmePath, "../../docs/reference.md", "../../docs/performance.md"} {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile("`((?:Test|Benchmark)[A-Z]\\w+)`").FindAllStringSubmatch(string(data), -1) {
			if !defined[m[1]] {
				t.Errorf("%s names %s, which no test file defines", doc, m[1])
			}
		}
	}
}

// The README tells a team which opa to install: the version des's go.mod
// pins, so that an OPA upgrade takes the advice with it.
func TestReadmeOPAVersionIsTheOnePinned(t *testing.T) {
	t.Parallel()
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*github\.com/open-policy-agent/opa (v\S+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod requires no github.com/open-policy-agent/opa")
	}
	v := string(m[1])
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	// Every opa version the README names is the pinned one.
	for _, got := range regexp.MustCompile(`open-policy-agent/opa(?:@|/releases/tag/)(v[0-9][^\s`+"`"+`,)]*)`).FindAllSubmatch(readme, -1) {
		if string(got[1]) != v {
			t.Errorf("README names opa %s, go.mod pins %s", got[1], v)
		}
	}
	for _, want := range []string{"go get -tool github.com/open-policy-agent/opa@" + v, "releases/tag/" + v} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("README does not say %q", want)
		}
	}
}
