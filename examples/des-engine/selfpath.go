package main

import (
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// installHint is how to get a binary whose path lasts.
const installHint = "go build -o ~/bin/des-hook ./examples/hook && go build -o ~/bin/des-engine ./examples/des-engine"

// cacheEntry matches the directory Go's build cache keeps a `go run`
// executable in: <GOCACHE>/<2 hex>/<64 hex>-d/<name>.
var cacheEntry = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{64}-d$`) })

// goBuildDir matches the go command's directories: go-build (the default
// cache) and go-build<N> (a work directory under the temporary directory).
var goBuildDir = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^go-build[0-9]*$`) })

// transientExe reports whether exe is a binary `go run` built: one under a
// go-build temporary directory (<tmp>/go-build123/b001/exe/hook) or in the
// build cache (<GOCACHE>/ab/<hash>-d/hook, $GOCACHE included when it is
// set). Such a path changes with each build and disappears when the cache
// is trimmed, so settings or a git hook naming it stop working silently.
func transientExe(exe string, lookupEnv func(string) (string, bool)) bool {
	if exe == "" {
		return false
	}
	clean := filepath.Clean(exe)
	if cache, ok := lookupEnv("GOCACHE"); ok && cache != "" && cache != "off" {
		if rel, err := filepath.Rel(filepath.Clean(cache), clean); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			return true
		}
	}
	dirs := strings.Split(filepath.ToSlash(filepath.Dir(clean)), "/")
	for _, d := range dirs {
		if goBuildDir().MatchString(d) {
			return true
		}
	}
	return len(dirs) > 0 && cacheEntry().MatchString(dirs[len(dirs)-1])
}

// warnIfTransient tells the user, on stderr, that sub is about to write
// exe, a path `go run` made, into their settings or git hook, and how to
// write a lasting one instead. stdout is left alone: it may be piped into a
// settings file. It reports whether it warned.
func warnIfTransient(stderr io.Writer, lookupEnv func(string) (string, bool), sub, exe string) bool {
	if !transientExe(exe, lookupEnv) {
		return false
	}
	fmt.Fprintf(stderr, "des-hook %s: warning: this binary runs from Go's build cache (%s), as `go run` leaves it; "+
		"that path changes with every build and vanishes when the cache is cleaned, and then the hook stops running.\n"+
		"Build the hook once at a lasting path and use that instead:\n"+
		"  %s\n"+
		"  ~/bin/des-hook %s    (or pass --command ~/bin/des-hook)\n", sub, exe, installHint, sub)
	return true
}
