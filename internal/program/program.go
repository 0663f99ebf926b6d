// Package program knows des's own programs: the command the user ran
// (the thin client des-hook, or the program embedding des), the des-engine
// companion beside it, and whether a command line runs one of them. The
// hook adapter protects them and recognises its own hook entries with it;
// the command line writes them into settings and git hooks.
package program

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/deterministic-exec/des/internal/integrity"
)

// ClientPathEnv names the thin hook client that ran this companion: the
// client sets it when it execs des-engine or sends a request to the warm
// server, so that what des writes into settings and git hooks, and what it
// recognises there as its own entries, is the command the user installed
// (des-hook), not the companion beside it.
const ClientPathEnv = "DES_CLIENT_PATH"

// CommandPath is the path of the command the user ran: the client's when it
// handed over (DES_CLIENT_PATH, absolute), else this executable.
func CommandPath(lookupEnv func(string) (string, bool)) (string, error) {
	if p, ok := lookupEnv(ClientPathEnv); ok && filepath.IsAbs(p) {
		return p, nil
	}
	return os.Executable()
}

// CompanionName is des-engine's file name (plus the client's extension,
// ".exe" on Windows), as the client looks for it beside itself.
const CompanionName = "des-engine"

// WithCompanions is the absolute binaries with, for each, the des-engine
// its client runs: the file beside it, links resolved, as the client finds
// it. Replacing des-engine switches des off as surely as replacing
// des-hook. Each path once, in order.
func WithCompanions(binaries []string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if filepath.IsAbs(p) && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, b := range binaries {
		if !filepath.IsAbs(b) {
			continue
		}
		add(b)
		real := b
		if r, err := filepath.EvalSymlinks(b); err == nil {
			real = r
			add(r)
		}
		add(filepath.Join(filepath.Dir(real), CompanionName+filepath.Ext(real)))
	}
	return out
}

// ShellWords splits a simple POSIX shell command into its words, quotes
// removed; ok is false for anything but words (operators, substitutions,
// unbalanced quotes), which is never one of des's commands.
func ShellWords(s string) (words []string, ok bool) {
	var b strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; ch {
		case ' ', '\t', '\n':
			if inWord {
				words = append(words, b.String())
				b.Reset()
				inWord = false
			}
		case '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, false
			}
			b.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case '"':
			j := strings.IndexByte(s[i+1:], '"')
			if j < 0 {
				return nil, false
			}
			inner := s[i+1 : i+1+j]
			if strings.ContainsAny(inner, "`\\") || strings.Contains(inner, "$(") {
				return nil, false
			}
			b.WriteString(inner)
			i += j + 1
			inWord = true
		case '\\':
			if i+1 >= len(s) {
				return nil, false
			}
			b.WriteByte(s[i+1])
			i++
			inWord = true
		case ';', '&', '|', '<', '>', '`', '(', ')':
			return nil, false
		default:
			if ch == '$' && i+1 < len(s) && s[i+1] == '(' {
				return nil, false
			}
			b.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		words = append(words, b.String())
	}
	return words, true
}

// CommandWordRunsExe reports whether a command's program word runs exe:
// $CLAUDE_PROJECT_DIR and a leading ~/ expanded, a bare name looked up on
// PATH (a hook command "des-hook" runs whatever PATH finds).
func CommandWordRunsExe(word, exe, root string, lookupEnv func(string) (string, bool)) bool {
	if exe == "" || word == "" {
		return false
	}
	if word = ExpandProgramWord(word, root, lookupEnv); word == "" {
		return false
	}
	if !strings.ContainsAny(word, `/\`) {
		if word = LookPath(word, lookupEnv); word == "" {
			return false
		}
	}
	return word == exe || SameFile(word, exe)
}

// ExpandProgramWord is a hook command's program word as the shell Claude
// Code runs it would see it: $CLAUDE_PROJECT_DIR (root) and a leading ~/
// (HOME) expanded; "" when ~/ cannot be (no absolute HOME). A bare name is
// left for PATH.
func ExpandProgramWord(word, root string, lookupEnv func(string) (string, bool)) string {
	for _, v := range []string{"${CLAUDE_PROJECT_DIR}", "$CLAUDE_PROJECT_DIR"} {
		word = strings.ReplaceAll(word, v, root)
	}
	if rest, ok := strings.CutPrefix(word, "~/"); ok {
		home, _ := lookupEnv("HOME")
		if !filepath.IsAbs(home) {
			return ""
		}
		word = filepath.Join(home, rest)
	}
	return word
}

// LookPath finds name on the PATH lookupEnv gives (exec.LookPath reads
// the process's own), "" when it is not there. Relative PATH entries are
// skipped: they name different files from different directories.
func LookPath(name string, lookupEnv func(string) (string, bool)) string {
	if strings.ContainsAny(name, `/\`) {
		return ""
	}
	path, _ := lookupEnv("PATH")
	names := []string{name}
	if runtime.GOOS == "windows" && !strings.HasSuffix(strings.ToLower(name), ".exe") {
		names = []string{name + ".exe", name}
	}
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		for _, n := range names {
			p := filepath.Join(dir, n)
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && (runtime.GOOS == "windows" || fi.Mode()&0o111 != 0) {
				return p
			}
		}
	}
	return ""
}

func SameFile(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// Binaries are the programs that run des for a hook event: the command
// the user ran (CommandPath), this executable, and the des-engine beside
// each. Replacing one switches des off, so the guards protect them all.
func Binaries(lookupEnv func(string) (string, bool)) []string {
	var bins []string
	if p, err := CommandPath(lookupEnv); err == nil {
		bins = append(bins, p)
	}
	if p, err := os.Executable(); err == nil {
		bins = append(bins, p)
	}
	return WithCompanions(bins)
}

// Runs reports whether a command line runs exe: a hook entry or a git hook
// line des wrote, a bare name ("des-hook", as settings --write writes it
// when PATH finds the binary) included.
func Runs(command, exe, root string, lookupEnv func(string) (string, bool)) bool {
	if exe == "" {
		return false
	}
	home, _ := lookupEnv("HOME")
	if integrity.CommandRunsExecutable(command, exe, root, home) {
		return true
	}
	words, ok := ShellWords(command)
	return ok && len(words) > 0 && !strings.ContainsAny(words[0], `/\`) && CommandWordRunsExe(words[0], exe, root, lookupEnv)
}
