package gate

import (
	"bytes"
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/internal/gitexec"
	"github.com/deterministic-exec/des/internal/shell"
)

// Broad commands (`git checkout .`, `git restore .`, `chmod -R u+w .`)
// name a directory that holds guarded documents or DES's files, but change
// them only sometimes. For those, DES computes whether the command would
// change one of them (the "changes" fact) and the policy denies only then.
// Whatever DES cannot tell counts as a change.

// changeFacts are the writes whose effect DES compares with the disk.
var changeFacts = map[string]bool{shell.HowChmod: true, shell.HowGitCheckout: true, shell.HowGitRestore: true}

// wouldChange reports whether the write w, made in dir (absolute) on the
// file or directory abs, would change a guarded document or a protected
// file at or under abs.
func (t ToolUse) wouldChange(ctx context.Context, docs DocumentWrite, w shell.Write, dir, abs string) bool {
	if w.How == shell.HowChmod {
		return t.chmodChanges(docs, w.Detail, abs)
	}
	changed, err := t.gitChanges(ctx, docs, w, dir)
	return err != nil || changed
}

// ours reports whether the root-relative (or absolute) path rel is a
// guarded document, a protected file or on the way to one.
func (t ToolUse) ours(docs DocumentWrite, rel string) bool {
	if t.coversProtected(rel) {
		return true
	}
	kind, _ := docs.kindOf(rel, nil)
	return kind != ""
}

// chmodChanges reports whether chmod with mode spec on abs (as if with -R,
// which DES does not track) would change the mode of a guarded document, a
// protected file, or a directory on the way to one.
func (t ToolUse) chmodChanges(docs DocumentWrite, spec, abs string) bool {
	if _, err := os.Stat(abs); err != nil {
		return false // chmod fails on a missing file: nothing changes
	}
	root, err := resolvePath(t.Root)
	if err != nil {
		return true
	}
	var targets []string
	seen := 0
	err = filepath.WalkDir(abs, func(p string, e fs.DirEntry, err error) error {
		if seen++; err != nil || seen > maxDirScan {
			return fmt.Errorf("cannot look through %s", abs) // counted as a change
		}
		if p != abs && (e.Type()&fs.ModeSymlink != 0 || e.IsDir() && (e.Name() == ".git" || e.Name() == "node_modules")) {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil // chmod -R does not follow the links it meets
		}
		rel, ok := within(root, p)
		if !ok {
			rel = filepath.ToSlash(p)
		}
		if e.IsDir() && t.coversProtected(rel) || !e.IsDir() && t.ours(docs, rel) {
			targets = append(targets, p)
		}
		return nil
	})
	if err != nil {
		return true
	}
	// The directories on the way to each target can lock DES out as well.
	set := map[string]bool{}
	for _, p := range targets {
		for d := p; !set[d]; d = filepath.Dir(d) {
			set[d] = true
			if d == abs || len(d) <= len(abs) {
				break
			}
		}
	}
	for p := range set {
		fi, err := os.Stat(p)
		if err != nil {
			return true
		}
		old := unixMode(fi.Mode())
		if next, ok := chmodApply(spec, old, fi.IsDir()); !ok || next != old {
			return true
		}
	}
	return false
}

// unixMode is a FileMode's permission and special bits as chmod numbers them.
func unixMode(m fs.FileMode) uint32 {
	u := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		u |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		u |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		u |= 0o1000
	}
	return u
}

// chmodApply is the mode chmod's spec gives a file of mode old; ok is false
// when DES cannot tell: a spec it does not read, or one whose result
// depends on the umask of the shell that runs it (`=` with no who, X with
// no who). With no who, + and - are taken for every class: a superset of
// the bits the umask lets through, so "no change" is never wrong.
func chmodApply(spec string, old uint32, isDir bool) (uint32, bool) {
	if spec == "" {
		return 0, false
	}
	if n, err := strconv.ParseUint(spec, 8, 32); err == nil && len(spec) <= 4 {
		next := uint32(n)
		if isDir && len(spec) <= 3 {
			next |= old & 0o6000 // GNU keeps a directory's set-id bits unless told
		}
		return next, true
	}
	mode := old
	for _, clause := range strings.Split(spec, ",") {
		i := 0
		var who uint32 // of 0o700, 0o070, 0o007 (u, g, o)
		for ; i < len(clause) && strings.IndexByte("ugoa", clause[i]) >= 0; i++ {
			who |= map[byte]uint32{'u': 0o700, 'g': 0o070, 'o': 0o007, 'a': 0o777}[clause[i]]
		}
		implicit := who == 0
		if implicit {
			who = 0o777
		}
		if i == len(clause) {
			return 0, false
		}
		for i < len(clause) {
			op := clause[i]
			if strings.IndexByte("+-=", op) < 0 {
				return 0, false
			}
			i++
			var bits uint32
			j := i
			for ; j < len(clause) && strings.IndexByte("+-=", clause[j]) < 0; j++ {
			}
			perms := clause[i:j]
			i = j
			switch {
			case perms == "u" || perms == "g" || perms == "o":
				shift := map[string]uint{"u": 6, "g": 3, "o": 0}[perms]
				rwx := (mode >> shift) & 7
				bits = (rwx<<6 | rwx<<3 | rwx) & who
			default:
				for _, c := range perms {
					switch c {
					case 'r':
						bits |= 0o444 & who
					case 'w':
						bits |= 0o222 & who
					case 'x':
						bits |= 0o111 & who
					case 'X':
						if implicit {
							return 0, false
						}
						if isDir || mode&0o111 != 0 {
							bits |= 0o111 & who
						}
					case 's':
						bits |= setIDBits(who)
					case 't':
						if who&0o007 != 0 {
							bits |= 0o1000
						}
					default:
						return 0, false
					}
				}
			}
			switch op {
			case '+':
				mode |= bits
			case '-':
				mode &^= bits
			case '=':
				if implicit {
					return 0, false
				}
				clear := who
				if !isDir {
					clear |= setIDBits(who)
				}
				mode = mode&^clear | bits
			}
		}
	}
	return mode, true
}

// gitChanges reports whether `git checkout`/`git restore` of w in dir
// would change a guarded document or protected file: one whose content,
// executable bit or existence differs from what the source (w.Detail,
// the index when empty) holds. The work-tree side is hashed by DES, not
// by git, so no filter or textconv configured in the repository runs.
func (t ToolUse) gitChanges(ctx context.Context, docs DocumentWrite, w shell.Write, dir string) (bool, error) {
	if strings.HasPrefix(w.Detail, "-") || strings.ContainsAny(w.Detail, "$`\x00") {
		return true, nil // a source DES cannot hand git safely
	}
	out, err := runGit(ctx, new(gitexec.Runner), dir, nil, "rev-parse", "--show-toplevel", "--show-object-format")
	if err != nil {
		return true, err
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		return true, fmt.Errorf("git rev-parse in %s: unexpected output %q", dir, out)
	}
	top, format := lines[0], lines[1]
	index, err := gitEntries(ctx, dir, w.Path, "")
	if err != nil {
		return true, err
	}
	source := index
	if w.Detail != "" {
		if source, err = gitEntries(ctx, dir, w.Path, w.Detail); err != nil {
			return true, err
		}
	}
	for name, e := range source {
		abs := filepath.Join(filepath.FromSlash(top), filepath.FromSlash(name))
		if !t.ours(docs, t.normalize(abs)) {
			continue
		}
		if !sameAsEntry(abs, e, format) {
			return true, nil
		}
	}
	if w.How == shell.HowGitRestore || w.Detail != "" {
		// restore (and checkout --no-overlay, which DES does not tell
		// apart) removes tracked files the source lacks.
		for name := range index {
			if _, ok := source[name]; ok {
				continue
			}
			abs := filepath.Join(filepath.FromSlash(top), filepath.FromSlash(name))
			if _, err := os.Lstat(abs); err == nil && t.ours(docs, t.normalize(abs)) {
				return true, nil
			}
		}
	}
	return false, nil
}

// gitEntry is one file of a tree or the index: its mode and object id.
type gitEntry struct{ mode, id string }

// gitEntries lists the files under pathspec in the index (tree "") or in
// tree, by path from the top of the repository.
func gitEntries(ctx context.Context, dir, pathspec, tree string) (map[string]gitEntry, error) {
	args := []string{"ls-files", "-s", "-z", "--full-name", "--", pathspec}
	if tree != "" {
		args = []string{"ls-tree", "-r", "-z", "--full-name", tree, "--", pathspec}
	}
	out, err := runGit(ctx, new(gitexec.Runner), dir, nil, args...)
	if err != nil {
		return nil, err
	}
	entries := map[string]gitEntry{}
	for _, rec := range bytes.Split(out, []byte{0}) {
		meta, name, ok := strings.Cut(string(rec), "\t")
		if !ok {
			continue
		}
		f := strings.Fields(meta)
		switch {
		case tree == "" && len(f) == 3: // mode id stage
			entries[name] = gitEntry{f[0], f[1]}
		case tree != "" && len(f) == 3: // mode type id
			entries[name] = gitEntry{f[0], f[2]}
		}
	}
	return entries, nil
}

// sameAsEntry reports whether the work-tree file abs already is what the
// entry would write: a regular file with the same executable bit and the
// same content. Anything else (a link, a submodule, a file too large to
// read) is a difference.
func sameAsEntry(abs string, e gitEntry, format string) bool {
	fi, err := os.Lstat(abs)
	if err != nil || !fi.Mode().IsRegular() || e.mode != "100644" && e.mode != "100755" {
		return false
	}
	if (fi.Mode()&0o100 != 0) != (e.mode == "100755") {
		return false
	}
	data, err := fileio.ReadBounded(abs, maxDocumentSize)
	if err != nil {
		return false
	}
	var h hash.Hash
	switch format {
	case "sha1":
		h = sha1.New()
	case "sha256":
		h = sha256.New()
	default:
		return false
	}
	fmt.Fprintf(h, "blob %d\x00", len(data))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil)) == e.id
}

// setIDBits are the set-user-id and set-group-id bits of the classes in who.
func setIDBits(who uint32) uint32 {
	var bits uint32
	if who&0o700 != 0 {
		bits |= 0o4000
	}
	if who&0o070 != 0 {
		bits |= 0o2000
	}
	return bits
}
