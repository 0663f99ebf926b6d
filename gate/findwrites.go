package gate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/deterministic-exec/des/internal/shell"
)

// errFindBound stops a find's listing past maxDirScan entries.
var errFindBound = errors.New("find: too many entries to list")

// findWrites are the input writes of a find -delete (or an -exec writing
// the entry found) whose action only reaches entries passing name tests
// (shell.FindTests): DES lists the start p (absolute) as find would, and
// each entry passing every test is a write of that entry, judged by
// literalWrite (a directory as a whole: -exec rm -rf removes what it holds).
// So `find . -name '*.pyc' -delete` writes no step file and none of DES's
// files, while `find . -name '*.json' -delete` writes each one below.
// written is the start as find was given it ("" when DES cannot tell:
// -path tests then match every entry).
//
// ok is false when DES leaves the judgement to the start as a whole: the
// start is outside the project or inside a protected root, is not a
// directory DES can list, or holds more than maxDirScan entries. Like
// documentAt, DES does not look for guarded documents in .git,
// node_modules and vendor; it enters them only on the way to a protected
// root (.git/hooks), whose entries are matched too. Links are not followed
// below the start, as find does by default (-L and -H come as a whole
// write).
func (t ToolUse) findWrites(ctx context.Context, docs DocumentWrite, w shell.Write, base, p, written string, tests []shell.FindTest, facts bool) (out []any, ok bool, err error) {
	rel, err := t.target(p)
	if err != nil {
		return nil, false, err
	}
	if filepath.IsAbs(filepath.FromSlash(rel)) || t.protectedRoot(rel) {
		return nil, false, nil
	}
	start := t.abs(rel)
	if fi, err := os.Stat(start); err != nil || !fi.IsDir() {
		return nil, false, nil
	}
	matches := func(gnu, bsd string) bool {
		for _, test := range tests {
			if written == "" && test.Primary != "-name" && test.Primary != "-iname" {
				continue
			}
			if !test.Match(gnu) && !test.Match(bsd) {
				return false
			}
		}
		return true
	}
	seen := 0
	// gnu and bsd are the entry as find prints it: GNU find drops a
	// start's trailing slashes before adding a name, BSD find does not.
	var visit func(abs, rel, gnu, bsd string, dir, narrow bool) error
	visit = func(abs, rel, gnu, bsd string, dir, narrow bool) error {
		if seen++; seen > maxDirScan {
			return errFindBound
		}
		if seen%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if matches(gnu, bsd) {
			in, err := t.literalWrite(ctx, docs, w, base, abs, facts, false)
			if in != nil {
				out = append(out, in)
			}
			return err // an entry reached is judged whole, with all it holds
		}
		if !dir {
			return nil
		}
		name := filepath.Base(abs)
		narrow = narrow || abs != start && (name == ".git" || name == "node_modules" || name == "vendor")
		if narrow && !t.coversProtected(rel) {
			return nil
		}
		entries, err := os.ReadDir(abs)
		if err != nil {
			return nil // find cannot list it either
		}
		for _, e := range entries {
			n := e.Name()
			childRel := rel + "/" + n
			if rel == "." {
				childRel = n
			}
			if err := visit(filepath.Join(abs, n), childRel, strings.TrimRight(gnu, "/")+"/"+n, bsd+"/"+n, e.IsDir(), narrow); err != nil {
				return err
			}
		}
		return nil
	}
	switch err = visit(start, rel, written, written, true, false); {
	case err == nil:
		return out, true, nil
	case errors.Is(err, errFindBound):
		return nil, false, nil
	}
	return nil, false, err
}
