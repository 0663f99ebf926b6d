package gate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	pathpkg "path"
	"path/filepath"
	"strings"

	"github.com/deterministic-exec/des/internal/glob"
	"github.com/deterministic-exec/des/internal/shell"
	"github.com/deterministic-exec/des/policy"
)

// BashCall is a Bash command about to run.
type BashCall struct {
	Command   string
	Cwd       string // where it runs (Claude Code keeps a session's cwd); "" = the root
	ToolUseID string
	SessionID string
	AgentID   string // the event's agent_id: set when a subagent runs the command
	// Home and OldPwd are the shell's HOME and OLDPWD (absolute; "" when
	// unknown): ~, $HOME, ~-, $OLDPWD in the command expand from them, as
	// ~+ and $PWD do from Cwd.
	Home, OldPwd string
	// Env is the environment the command starts with (the hook's, which
	// Claude Code's Bash tool shares): a variable the command does not
	// assign expands from it ($CLAUDE_PROJECT_DIR/.des/config.json,
	// "$DES_STATE_DIR"). nil leaves such variables unknown.
	Env func(string) (string, bool)
}

// CheckBash runs the tool_use gate on the files a Bash command may write
// (shell.Analyze): those that are, or are directories that may hold, a
// guarded document of docs or one of DES's protected files. A command that
// writes none of them is not evaluated. A denied command is recorded as
// DOCUMENT_WRITE_BLOCKED.
func (t ToolUse) CheckBash(ctx context.Context, ev Evaluator, docs DocumentWrite, call BashCall) (Result, error) {
	writes, err := t.bashWrites(ctx, docs, call, true)
	if err != nil {
		return Result{Gate: policy.ToolUse}, fmt.Errorf("tool_use: %w", err)
	}
	if len(writes) == 0 {
		return Result{Gate: policy.ToolUse}, nil
	}
	return t.evaluate(ctx, ev, "Bash", writes, withAgent(map[string]any{"tool_use_id": call.ToolUseID, "session_id": call.SessionID}, call.AgentID))
}

// ConcernsBash reports whether a command may write a guarded document or
// one of DES's files: when CheckBash evaluates it, and when an error must
// fail closed. A written path DES cannot resolve (ErrTooManyLinks)
// concerns it.
func (t ToolUse) ConcernsBash(docs DocumentWrite, call BashCall) bool {
	writes, err := t.bashWrites(context.Background(), docs, call, false)
	return err != nil || len(writes) > 0
}

// bashWrites are the policy's input writes of a command: those of
// shell.Analyze that reach a guarded document or DES's files. With facts,
// the writes of broad commands (chmod, git checkout, git restore) carry
// "changes": whether they would change one of those files (wouldChange).
// A glob target is judged as every file it matches now, and, like a target
// DES cannot know (dynamic), by what it could name (dynamicWrite).
func (t ToolUse) bashWrites(ctx context.Context, docs DocumentWrite, call BashCall, facts bool) ([]any, error) {
	cwd := call.Cwd
	if cwd == "" {
		cwd = t.Root
	}
	opts := t.shellOptions(call, cwd)
	var out []any
	a := shell.Analyze(call.Command, opts...)
	for _, w := range a.Writes {
		base := cwd
		if w.Dir != "" {
			base = w.Dir
			if !filepath.IsAbs(base) {
				base = cwd + string(filepath.Separator) + base
			}
		}
		p := w.Path
		if !filepath.IsAbs(p) {
			p = base + string(filepath.Separator) + p
		}
		if w.Dynamic || w.Glob {
			if in := t.dynamicWrite(docs, w, p); in != nil {
				out = append(out, in)
			}
			if w.Dynamic {
				continue
			}
			matches, err := globBounded(p)
			if err != nil {
				return nil, err
			}
			for _, m := range matches {
				// find prints a start as the shell gave it: the match
				// written the way the pattern was, when DES can tell.
				written, ok := strings.CutPrefix(m, base+string(filepath.Separator))
				if filepath.IsAbs(w.Path) {
					written, ok = m, true
				}
				if !ok {
					written = ""
				}
				ins, err := t.startWrites(ctx, docs, w, base, m, filepath.ToSlash(written), facts, a.ParseError != "")
				if err != nil {
					return nil, err
				}
				out = append(out, ins...)
			}
			continue
		}
		ins, err := t.startWrites(ctx, docs, w, base, p, w.Path, facts, a.ParseError != "")
		if err != nil {
			return nil, err
		}
		out = append(out, ins...)
	}
	return out, nil
}

// startWrites are the input writes of w on p: its literalWrite, or, for a
// find whose action only reaches entries passing name tests, those of the
// entries under p that pass them (findWrites).
func (t ToolUse) startWrites(ctx context.Context, docs DocumentWrite, w shell.Write, base, p, written string, facts, unparsed bool) ([]any, error) {
	if w.How == shell.HowFindDelete && !unparsed {
		if tests := shell.FindTests(w.Detail); len(tests) > 0 {
			ins, ok, err := t.findWrites(ctx, docs, w, base, p, written, tests, facts)
			if err != nil || ok {
				return ins, err
			}
		}
	}
	in, err := t.literalWrite(ctx, docs, w, base, p, facts, unparsed)
	if err != nil || in == nil {
		return nil, err
	}
	return []any{in}, nil
}

// literalWrite is the input write of w on the file p (absolute), or nil
// when p is none of DES's concern.
func (t ToolUse) literalWrite(ctx context.Context, docs DocumentWrite, w shell.Write, base, p string, facts, unparsed bool) (map[string]any, error) {
	rel, err := t.target(p)
	if err != nil {
		return nil, err
	}
	document := docs.documentAt(rel)
	if document == "" && !t.coversProtected(rel) {
		// Another hard link of a guarded document is that document.
		kind, doc, err := docs.documentLink(rel)
		if err != nil {
			return nil, err
		}
		if kind != "" {
			document, rel = kind, doc
		}
	}
	if document == "" && !t.coversProtected(rel) {
		return nil, nil
	}
	in := map[string]any{"path": rel, "tool": "Bash", "how": w.How, "document": document}
	if facts && changeFacts[w.How] {
		// A command DES could not parse may hide its mode or source.
		in["changes"] = unparsed || t.wouldChange(ctx, docs, w, base, t.abs(rel))
	}
	return in, nil
}

// maxGlobMatches bounds the files one glob target is judged as.
const maxGlobMatches = 1000

// errGlobBound is wrapped when a glob target matches more files than DES
// judges one by one.
var errGlobBound = errors.New("a glob write target matches too many files to judge")

// globBounded expands the glob write target p (absolute) against the disk
// as the shell would, without following more than three pattern elements
// (each one reads a directory per match of the previous ones).
func globBounded(p string) ([]string, error) {
	metas := 0
	for _, el := range strings.Split(p, string(filepath.Separator)) {
		if strings.ContainsAny(el, "*?[") {
			metas++
		}
	}
	if metas > 3 {
		return nil, fmt.Errorf("%w: %s has more than three pattern elements", errGlobBound, p)
	}
	matches, err := filepath.Glob(p)
	if err != nil {
		return nil, nil // a malformed pattern matches nothing: the shell writes it as written
	}
	if len(matches) > maxGlobMatches {
		return nil, fmt.Errorf("%w: %s matches %d files", errGlobBound, p, len(matches))
	}
	return matches, nil
}

// dynamicWrite is the input write of a target DES cannot know exactly (a
// glob, or a path built at run time), when it could name a guarded
// document or one of DES's files; nil otherwise. Its literal part is
// split at the first unknown character into a directory D and the start
// of a name N, and its last element S when that is literal. It could name:
//   - a protected file when D is in a protected root, or when N is not
//     empty and D/N starts a protected root's path (`.d$X`);
//   - a guarded document, when S is absent or matches the guarded glob's
//     last element, and D is the directory of a guarded glob (`.isdlc/$X`
//     for .isdlc/state.json, `docs/steps/$X` for **/steps/*.json), or N is
//     not empty and D/N starts a guarded path with no pattern (`.is$X/...`),
//     or S is the name a guarded glob ends in (`$D/state.json`; for step
//     globs, a step file's name, `$D/01-01.json`).
//
// A target whose literal part says nothing (`$OUT`, `"$D/out.json"`), or
// whose unknown part spans directories (`docs/$X` for docs/steps/01-01.json)
// or climbs out with "..", could name more than this rule sees; it gets no
// opinion, and the PostToolUse integrity check undoes what it changes.
func (t ToolUse) dynamicWrite(docs DocumentWrite, w shell.Write, p string) map[string]any {
	unknown := "$`"
	if w.Glob {
		unknown = "*?[\\"
		if w.Dynamic {
			unknown += "$`"
		}
	}
	i := strings.IndexAny(p, unknown)
	if i < 0 {
		i = len(p)
	}
	literal := p[:i]
	sep := strings.LastIndex(literal, string(filepath.Separator))
	if sep < 0 {
		return nil // a relative unknown start: nothing to tell
	}
	dir, start := literal[:sep], literal[sep+1:]
	if dir == "" {
		dir = string(filepath.Separator)
	}
	relDir, err := t.resolve(dir)
	if err != nil {
		relDir = filepath.ToSlash(dir)
	}
	prefix := start
	if relDir != "." {
		prefix = relDir + "/" + start
	}
	last := p[strings.LastIndex(p, string(filepath.Separator))+1:]
	if strings.ContainsAny(last, unknown) {
		last = ""
	}

	protected := t.protectedRoot(relDir)
	for _, r := range append([]string{DESDir}, t.Protected...) {
		if start != "" && strings.HasPrefix(t.normalize(r), prefix) {
			protected = true
		}
	}
	document := ""
	for _, set := range []struct {
		kind  string
		globs []string
	}{{KindStep, docs.StepGlobs}, {KindState, docs.StateGlobs}, {KindTaskGraph, docs.Graph.globs()}, {KindStateSelector, []string{StateSelectorFile}}} {
		for _, g := range set.globs {
			gdir, gname := pathpkg.Split(g)
			gdir = strings.TrimSuffix(gdir, "/")
			nameMatch, _ := pathpkg.Match(gname, last)
			if last != "" && !nameMatch {
				continue // a literal name the glob cannot end in
			}
			switch {
			case gdir != "" && glob.Match(gdir, relDir),
				gdir == "" && relDir == ".",
				start != "" && !strings.ContainsAny(g, "*?[") && strings.HasPrefix(g, prefix),
				last != "" && (set.kind != KindStep || stepNamePattern().MatchString(last)):
				if document == "" {
					document = set.kind
				}
			}
		}
	}
	if document == "" && !protected {
		return nil
	}
	return map[string]any{
		"path": filepath.ToSlash(p), "tool": "Bash", "how": w.How, "document": document,
		"dynamic": true, "protected": protected,
	}
}

// documentAt is the kind of guarded document at rel, or of one that the
// directory at rel holds now (rm -r, cp -r onto it). Directories are looked
// into, boundedly, rather than judged by pattern: "**/steps/*.json" could
// match under any directory, and `rm -rf node_modules` must stay possible.
func (d DocumentWrite) documentAt(rel string) string {
	if kind, _ := d.kindOf(rel, nil); kind != "" { // other hard links: the caller's documentLink
		return kind
	}
	abs := filepath.Join(d.Root, filepath.FromSlash(rel))
	if filepath.IsAbs(filepath.FromSlash(rel)) {
		return ""
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return ""
	}
	kind, seen := "", 0
	_ = filepath.WalkDir(abs, func(p string, e fs.DirEntry, err error) error {
		if seen++; err != nil || kind != "" || seen > maxDirScan {
			return filepath.SkipAll
		}
		if e.IsDir() && p != abs && (e.Name() == ".git" || e.Name() == "node_modules" || e.Name() == "vendor") {
			return filepath.SkipDir
		}
		if !e.IsDir() {
			kind, _ = d.kindOf(ProjectPath(d.Root, p), nil) // no hard-link search per file: removing one name leaves the others
		}
		return nil
	})
	return kind
}

// maxDirScan bounds the look into a directory a command writes as a whole.
const maxDirScan = 20000

// coversProtected reports whether a write at rel is in, or replaces a
// directory above, a protected root.
func (t ToolUse) coversProtected(rel string) bool {
	if t.protectedRoot(rel) || rel == "." {
		return true
	}
	for _, r := range append([]string{DESDir}, t.Protected...) {
		if strings.HasPrefix(t.normalize(r)+"/", rel+"/") {
			return true
		}
	}
	return false
}

// abs is the absolute path of a ProjectPath.
func (t ToolUse) abs(rel string) string {
	p := filepath.FromSlash(rel)
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(t.Root, p)
}
