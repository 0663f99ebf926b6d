package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/internal/filelock"
)

// BreakKind names how a trail is broken.
type BreakKind string

// The ways Verify finds a trail broken.
const (
	// BreakEdited: a line's bytes are not those the chain recorded: its hash
	// differs from the next line's "prev" (or from the head record, for the
	// last line), or its own "prev" or "seq" was changed.
	BreakEdited BreakKind = "edited"
	// BreakRemoved: seq jumps inside a day file, or the chain does not start
	// at 1: lines are missing before this one.
	BreakRemoved BreakKind = "removed"
	// BreakMissingFile: seq jumps from the last line of one file to the
	// first of the next: a day file (or the end of the earlier one) is
	// missing. At the first file of the trail: the oldest files are missing.
	BreakMissingFile BreakKind = "missing file"
	// BreakInserted: a line that is not part of the chain: no seq and prev
	// after the chain started, a seq seen already, or a seq out of place
	// that no later line continues.
	BreakInserted BreakKind = "inserted"
	// BreakReordered: a line of the chain out of its place: its seq is not
	// the next, the next one comes later, and the chain continues from it.
	BreakReordered BreakKind = "reordered"
	// BreakTorn: a line cut short: no trailing newline, or JSON that ends
	// early.
	BreakTorn BreakKind = "torn"
	// BreakMalformed: a line that does not parse as an entry.
	BreakMalformed BreakKind = "malformed"
	// BreakTruncated: the trail ends before the line the head record names:
	// lines were cut from the end, or the newest day files removed.
	BreakTruncated BreakKind = "truncated"
	// BreakHead: the head record (HeadFile) is missing or unreadable while
	// the trail has chained lines, so its end cannot be checked.
	BreakHead BreakKind = "head"
	// BreakWitness: the trail disagrees with its witness (WithWitness): it
	// does not hold the witnessed line unchanged (deleted, cut, rewritten),
	// or it has chained lines but no witness, or the witness is unusable.
	BreakWitness BreakKind = "witness"
	// BreakAnchor: the trail disagrees with a head of it recorded outside
	// it (WithAnchors: a decision-log event, a git note): it does not hold
	// the recorded line unchanged (deleted, cut, rewritten since).
	BreakAnchor BreakKind = "anchor"
)

// Break is the first broken place of a trail.
type Break struct {
	Kind BreakKind
	// File is the day file or archive (the directory joined with its name),
	// or the head record for BreakHead, or the directory for a trail with
	// no lines at all.
	File string
	// Line is the 1-based line number in File (in the decompressed content
	// of an archive); for BreakTruncated, one past the last line; 0 when the
	// break is not at a line.
	Line int
	// Msg says what was found, with the seqs and hashes involved.
	Msg string
}

// Error renders the break as "file:line: kind: msg" (without ":line" when
// Line is 0).
func (b *Break) Error() string {
	if b.Line == 0 {
		return fmt.Sprintf("%s: %s: %s", b.File, b.Kind, b.Msg)
	}
	return fmt.Sprintf("%s:%d: %s: %s", b.File, b.Line, b.Kind, b.Msg)
}

// Report is what Verify found.
type Report struct {
	// Files is the number of day files and archives read.
	Files int
	// Lines is the number of lines read: all of them when the trail is
	// intact, up to and including the broken one otherwise.
	Lines int
	// Unchained is the number of lines before the chain's first line:
	// lines written by a des without the chain (no "seq", no "prev"). Only
	// the last of them is covered, by the first chained line's "prev".
	Unchained int
	// LastSeq is the seq of the last line that continued the chain.
	LastSeq int64
	// Break is the first broken place; nil when the trail is intact.
	Break *Break
	// Witness is what Verify found of the witness, when given one.
	Witness WitnessReport
	// Anchors is what Verify found of the anchors (WithAnchors).
	Anchors AnchorReport
}

// WitnessReport says how the trail stands against its witness.
type WitnessReport struct {
	// Path is the witness file; "" when Verify was given no witness.
	Path string
	// Found is whether the witness file exists.
	Found bool
	// Seq is the witnessed seq (0 when not Found).
	Seq int64
	// Behind is how many chained lines follow the witnessed one: lines
	// written since, whose witness update a crash (or a writer without the
	// witness) skipped. They are chained but not witnessed.
	Behind int64
}

// Intact reports whether Verify found no break.
func (r Report) Intact() bool { return r.Break == nil }

// Verify checks the hash chain of the trail in dir, walking every archive
// and day file in trail order (by date; an archive before the day file of
// the same date), and reports the first broken place. The rules:
//
//   - every line ends with a newline and parses as an entry ("timestamp",
//     "event", and an integer "seq" and string "prev" when present);
//   - lines without "seq" and "prev" (written before des had the chain) may
//     only come before the first chained line;
//   - the first chained line has seq 1, and each later line the seq after
//     the previous one;
//   - each chained line's "prev" is the lowercase hex SHA-256 of the line
//     before it in the trail, newline included (an unchained line
//     included), or 64 zeros when it is the trail's first line;
//   - the head record (HeadFile) names the seq and hash of a line of the
//     trail, normally the last: a trail that ends before it was cut. A
//     trail with chained lines must have one.
//
// At the first line that breaks a rule, Verify tells what happened from
// the lines after it: which line is out of the chain, whether the missing
// seq comes later, which hashes later lines record. Editing a line is
// found at that line, whichever field changed.
//
// A trail is read as it stood when Verify started: the lock (when its file
// exists) is held only to list the files, their sizes and the head record.
//
// The error is for a check that could not run: dir missing or not a
// directory (wrapping [fs.ErrNotExist] when missing), an I/O error, or ctx
// done. A directory with no trail files and no head record is an intact,
// empty trail.
//
// Limits: the chain proves the trail is the one Append wrote, unless the
// whole chain from the changed line on, and the head record, were
// recomputed: whoever can write the directory can do that. A witness kept
// where that writer cannot write (WithWitness) pins the trail. Unchained
// lines other than the last are not covered.
//
// With WithRoot, a dir below the root is opened from it as an append
// opens it: a link at any component between them (the trail moved aside
// and an empty directory linked in its place) is an error, not a trail
// found intact where DES cannot append.
//
// With WithWitness (other options are ignored), the trail must also hold
// the witnessed line, with the witnessed hash: a trail deleted (even with
// its directory), cut below it, or rewritten from any line up to it, is a
// BreakWitness. Lines after the witnessed one are fine (Report.Witness
// counts them). With no witness file (a new trail, a new machine, a trail
// from before witnesses, a copy), only the chain is checked and
// Report.Witness.Found is false: the trail's end is not witnessed, and a
// trail rewritten after its witness was deleted cannot be told from it.
func Verify(ctx context.Context, dir string, opts ...Option) (Report, error) {
	var rep Report
	var cfg Log
	for _, opt := range opts {
		if opt != nil {
			opt(&cfg)
		}
	}
	if cfg.root != "" {
		if rel, err := filepath.Rel(cfg.root, dir); err == nil && filepath.IsLocal(rel) {
			d, err := fileio.OpenDirIn(cfg.root, rel, false)
			if errors.Is(err, fileio.ErrNotRealDir) {
				return rep, fmt.Errorf("audit: verify %s: %w (a link or other file where DES keeps its trail, which DES does not append through: remove it, and put the trail back if it was moved)", dir, err)
			}
			if err == nil {
				d.Close()
			}
		}
	}
	var wit witnessRecord
	var wErr error
	if cfg.witnessDir != "" {
		rep.Witness.Path = WitnessPath(cfg.witnessDir, dir)
		wit, rep.Witness.Found, wErr = readWitness(rep.Witness.Path)
		if wErr != nil && !rep.Witness.Found {
			return rep, fmt.Errorf("audit: verify %s: witness: %w", dir, wErr)
		}
		rep.Witness.Seq = wit.Seq
		// A witness des kept and lost: the attestations (another file of
		// the state directory) record lines des wrote, and every such
		// append witnessed the trail. Whatever the trail holds now, its
		// end is no longer pinned: a trail rewritten after the witness
		// went would verify on its chain alone.
		last, attested := lastAttestation(cfg.attestFile)
		if wErr == nil && wit.LostAfter > 0 {
			last, attested = wit.LostAfter, true // an append found it gone, and said since when
		} else if rep.Witness.Found {
			attested = false
		}
		if attested {
			rep.Break = &Break{Kind: BreakWitness, File: rep.Witness.Path,
				Msg: fmt.Sprintf("the witness is gone since line %d: des witnessed this trail as it wrote it (its attestations %s record the lines des wrote), and the witness was deleted after seq %d; the trail's end is no longer witnessed, so a rewrite since would not show", last, cfg.attestFile, last)}
			return rep, nil
		}
		if wit.LostAfter > 0 {
			// A record of the loss, read without the attestations (--dir).
			rep.Break = &Break{Kind: BreakWitness, File: rep.Witness.Path,
				Msg: fmt.Sprintf("the witness is gone since line %d: an append found it deleted", wit.LostAfter)}
			return rep, nil
		}
	}
	var adopted time.Time
	if rep.Witness.Found && wErr == nil {
		adopted = wit.Adopted
	}
	anchors := anchorIndex(cfg.anchors, dir, adopted, &rep.Anchors)
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) && rep.Witness.Found {
		rep.Break = &Break{Kind: BreakWitness, File: dir,
			Msg: fmt.Sprintf("the audit directory is gone, but the witness %s records seq %d (%s): the trail was deleted", rep.Witness.Path, wit.Seq, wit.File)}
		return rep, nil
	}
	if errors.Is(err, fs.ErrNotExist) && len(anchors) > 0 {
		rep.Break = missingAnchor(dir, anchors, 0, nil)
		rep.Break.Msg = strings.Replace(rep.Break.Msg, "the trail holds no chained line", "the audit directory is gone", 1)
		return rep, nil
	}
	if err != nil {
		return rep, fmt.Errorf("audit: verify %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return rep, fmt.Errorf("audit: verify %s: not a directory", dir)
	}
	if err := appendsRefused(dir); err != nil {
		return rep, fmt.Errorf("audit: verify %s: every append to this trail is refused, so DES records nothing: %w", dir, err)
	}
	snap, err := takeSnapshot(ctx, dir)
	if err != nil {
		return rep, err
	}
	w := &walker{ctx: ctx, snap: snap}
	// Values, not pointers, so that a line does not escape to the heap.
	var last, first, atHead, atWitness vline // the last line that kept the chain, the first line, the line the head record names, the witnessed line
	var hasLast, hasFirst, hasAtHead, hasAtWitness bool
	var anchorBreak *Break // the first line an anchor disagrees with
	started := false
	for {
		c, ok, err := w.next()
		if err != nil {
			rep.Files = w.files
			return rep, err
		}
		if !ok {
			break
		}
		rep.Lines++
		if !hasFirst {
			first, hasFirst = c, true
		}
		if c.bad != "" {
			rep.Files, rep.Break = w.files, &Break{Kind: c.bad, File: c.file, Line: c.n, Msg: c.why}
			return rep, nil
		}
		expSeq, expPrev := int64(1), digest{}
		if hasLast {
			expSeq, expPrev = last.seq+1, last.hash
		}
		switch {
		case !c.chained && !started:
			rep.Unchained++
			last, hasLast = c, true
			continue
		case c.chained && c.seq == expSeq && c.follows(expPrev):
			started, rep.LastSeq = true, c.seq
			last, hasLast = c, true
			if snap.headOK && c.seq == snap.head.Seq {
				atHead, hasAtHead = c, true
			}
			if rep.Witness.Found && c.seq == wit.Seq {
				atWitness, hasAtWitness = c, true
			}
			if as := anchors[c.seq]; as != nil && anchorBreak == nil {
				anchorBreak = checkAnchor(&c, as)
			}
			continue
		}
		rest, err := w.rest()
		if err != nil {
			return rep, err
		}
		var lp *vline
		if hasLast {
			lp = &last
		}
		rep.Files, rep.Break = w.files, diagnose(&first, lp, c, rest, snap, rep.Lines-1)
		return rep, nil
	}
	rep.Files = w.files
	var lp, hp *vline
	if hasLast {
		lp = &last
	}
	if hasAtHead {
		hp = &atHead
	}
	rep.Break = checkEnd(dir, lp, hp, started, rep.LastSeq, snap)
	if rep.Break == nil && rep.Witness.Path != "" {
		var wp *vline
		if hasAtWitness {
			wp = &atWitness
		}
		rep.Break = checkWitness(dir, rep, wit, wErr, wp, lp)
		if rep.Break == nil && rep.Witness.Found {
			rep.Witness.Behind = rep.LastSeq - wit.Seq
		}
	}
	// The anchors last: a break the chain, the head record or the witness
	// finds is named as it always was.
	if rep.Break == nil {
		rep.Break = anchorBreak
	}
	if rep.Break == nil {
		rep.Break = missingAnchor(dir, anchors, rep.LastSeq, lp)
	}
	return rep, nil
}

// checkWitness compares an otherwise intact trail with its witness w
// (wErr: why it is unusable), atWitness being the line with the witnessed
// seq and last the trail's last chained line.
func checkWitness(dir string, rep Report, w witnessRecord, wErr error, atWitness, last *vline) *Break {
	path := rep.Witness.Path
	switch {
	case wErr != nil:
		return &Break{Kind: BreakWitness, File: path, Msg: wErr.Error()}
	case !rep.Witness.Found:
		// No witness at all: a new machine, a trail from before witnesses,
		// a copy verified elsewhere. The chain alone is checked and the
		// report says the end is not witnessed (Report.Witness.Found).
		// Refusing it would refuse every such trail; a deleted witness is
		// kept away by protecting the state directory, not detected here.
		return nil
	case w.Dir != "" && !sameDir(w.Dir, dir):
		return &Break{Kind: BreakWitness, File: path, Msg: fmt.Sprintf("the witness is for %s, not %s", w.Dir, dir)}
	case atWitness == nil:
		file, n := dir, 0
		if last != nil {
			file, n = last.file, last.n+1
		}
		if rep.LastSeq == 0 {
			return &Break{Kind: BreakWitness, File: file, Line: n,
				Msg: fmt.Sprintf("the trail holds no chained line, but the witness %s records seq %d (%s): the trail was deleted", path, w.Seq, w.File)}
		}
		return &Break{Kind: BreakWitness, File: file, Line: n,
			Msg: fmt.Sprintf("the trail ends at seq %d, but the witness %s records seq %d (%s): %d lines were cut from the end (and the head record rewritten), or the trail deleted and started again",
				rep.LastSeq, path, w.Seq, w.File, w.Seq-rep.LastSeq)}
	case atWitness.hash.String() != w.SHA256:
		return &Break{Kind: BreakWitness, File: atWitness.file, Line: atWitness.n,
			Msg: fmt.Sprintf("seq %d hashes to %s, but the witness %s records %s: the trail was rewritten at or before this line (or cut and written again)",
				w.Seq, atWitness.hash, path, w.SHA256)}
	}
	return nil
}

func sameDir(a, b string) bool { return filepath.Clean(a) == realPath(b) }

// checkEnd compares the end of an otherwise intact trail with the head
// record.
func checkEnd(dir string, last, atHead *vline, started bool, lastSeq int64, snap snapshot) *Break {
	headPath := filepath.Join(dir, HeadFile)
	switch {
	case snap.headErr != nil:
		return &Break{Kind: BreakHead, File: headPath, Msg: snap.headErr.Error()}
	case !snap.headOK && started:
		return &Break{Kind: BreakHead, File: headPath,
			Msg: fmt.Sprintf("missing, though the trail has chained lines up to seq %d: whether lines were cut from the end cannot be checked", lastSeq)}
	case !snap.headOK:
		return nil
	case snap.head.Seq > lastSeq:
		file, n := dir, 0
		if last != nil {
			file, n = last.file, last.n+1
		}
		return &Break{Kind: BreakTruncated, File: file, Line: n,
			Msg: fmt.Sprintf("the trail ends at seq %d, but the head record names seq %d: %d lines cut from the end, or the newest day files removed",
				lastSeq, snap.head.Seq, snap.head.Seq-lastSeq)}
	case atHead != nil && atHead.hash.String() != snap.head.SHA256:
		return &Break{Kind: BreakEdited, File: atHead.file, Line: atHead.n,
			Msg: fmt.Sprintf("seq %d hashes to %s, but the head record says %s: this line was changed", atHead.seq, atHead.hash, snap.head.SHA256)}
	}
	return nil
}

// diagnose names the break at c, the first line that does not continue the
// chain after last (nil at the start of the trail), from the lines after it
// and the first line of the trail; before lines precede c.
func diagnose(first, last *vline, c vline, rest []vline, snap snapshot, before int) *Break {
	at := func(l *vline, kind BreakKind, format string, args ...any) *Break {
		return &Break{Kind: kind, File: l.file, Line: l.n, Msg: fmt.Sprintf(format, args...)}
	}
	hG, s := digest{}, int64(0)
	if last != nil {
		hG, s = last.hash, last.seq
	}
	// referenced: a later line, or the head record, continues from hash.
	referenced := func(hash digest, seq int64) bool {
		for _, r := range rest {
			if r.chained && r.follows(hash) {
				return true
			}
		}
		return snap.headOK && snap.head.Seq == seq && snap.head.SHA256 == hash.String()
	}
	later := func(seq int64) *vline {
		for i := range rest {
			if rest[i].chained && rest[i].seq == seq {
				return &rest[i]
			}
		}
		return nil
	}
	var next *vline
	if len(rest) > 0 {
		next = &rest[0]
	}
	switch {
	case !c.chained:
		return at(&c, BreakInserted, "no seq and prev after the chain started (seq %d on the line before): an inserted line, or its chain keys were removed", s)
	case c.seq == 1 && c.follows(digest{}) && last != nil && !last.chained && referenced(c.hash, c.seq):
		return at(first, BreakInserted, "the chain's first line (%s:%d) has prev %s, so it was the first line of the trail: the %d lines before it were inserted",
			c.file, c.n, digest{}, before)
	case c.seq == s+1:
		if next != nil && next.chained && next.seq == c.seq && next.follows(hG) {
			return at(&c, BreakInserted, "seq %d, but its prev does not match the line before, and the next line has seq %d too and continues the chain: this line was inserted", c.seq, c.seq)
		}
		if last != nil && referenced(c.hash, c.seq) {
			return at(last, BreakEdited, "this line hashes to %s, but the next line (seq %d) records prev %s: this line was changed", hG, c.seq, c.prevText())
		}
		if last == nil {
			return at(&c, BreakEdited, "the first line of the trail must have prev %s, found %s: this line was changed", digest{}, c.prevText())
		}
		return at(&c, BreakEdited, "prev %s does not match the line before (%s), and no later line continues from this one: this line was changed", c.prevText(), hG)
	case last != nil && c.follows(hG):
		return at(&c, BreakEdited, "seq %d where %d was due, though its prev continues the chain: its seq was changed", c.seq, s+1)
	case c.seq > s+1:
		if l := later(s + 1); l != nil {
			if referenced(c.hash, c.seq) {
				return at(&c, BreakReordered, "seq %d where %d was due; seq %d comes later, at %s:%d", c.seq, s+1, s+1, l.file, l.n)
			}
			return at(&c, BreakInserted, "seq %d where %d was due, and no later line continues from this one; seq %d comes later, at %s:%d: this line was inserted", c.seq, s+1, s+1, l.file, l.n)
		}
		if last != nil && last.chained && snap.headOK && snap.head.Seq == s && snap.head.SHA256 == hG.String() {
			return at(&c, BreakInserted, "seq %d after seq %d, which the head record names as the last line: lines were added after the end", c.seq, s)
		}
		missing := c.seq - s - 1
		switch {
		case last == nil && c.first:
			return at(&c, BreakMissingFile, "the trail starts at seq %d: the %d lines before it are missing (the oldest day files or archives removed, or lines cut from their start)", c.seq, missing)
		case last == nil || !last.chained:
			return at(&c, BreakRemoved, "the chain starts at seq %d, not 1: %d lines removed before this one", c.seq, missing)
		case c.first && last.file != c.file:
			return at(&c, BreakMissingFile, "seq jumps from %d (the last line of %s) to %d: %d lines missing between the two files: a day file removed, or lines cut from the end of %s or the start of %s",
				s, filepath.Base(last.file), c.seq, missing, filepath.Base(last.file), filepath.Base(c.file))
		}
		return at(&c, BreakRemoved, "seq jumps from %d to %d: %d lines removed before this one", s, c.seq, missing)
	default: // c.seq <= s: a place in the chain taken already
		if last != nil && c.hash == last.hash {
			return at(&c, BreakInserted, "a copy of the line before (seq %d)", c.seq)
		}
		if c.seq == s && last != nil && c.prevText() == last.prevText() && referenced(c.hash, c.seq) {
			return at(last, BreakInserted, "this line and the next both have seq %d and follow the same line; the chain continues from the next: this line was inserted", s)
		}
		return at(&c, BreakInserted, "seq %d again, after seq %d: a copied or inserted line", c.seq, s)
	}
}

// vline is what Verify knows of one line.
type vline struct {
	file    string
	n       int  // 1-based line number in file
	first   bool // the first line of its file
	hash    digest
	chained bool // has "seq" and "prev"
	seq     int64
	prev    digest // "prev" decoded, when prevOK
	prevOK  bool   // "prev" is 64 lowercase hex digits
	prevBad string // "prev" as written when it is not 64 lowercase hex digits
	bad     BreakKind
	why     string
}

// follows reports whether l's "prev" is h.
func (l *vline) follows(h digest) bool { return l.prevOK && l.prev == h }

// digest is a SHA-256; its String is the lowercase hex "prev" form.
type digest [sha256.Size]byte

func (d digest) String() string { return hex.EncodeToString(d[:]) }

// setPrev records the "prev" text of a chained line.
func (l *vline) setPrev(text []byte) {
	l.prevOK = len(text) == 2*sha256.Size && isLowerHex(text)
	if l.prevOK {
		hex.Decode(l.prev[:], text)
	} else {
		l.prevBad = string(text)
	}
}

// prevText is "prev" as written.
func (l *vline) prevText() string {
	if l.prevOK {
		return l.prev.String()
	}
	return l.prevBad
}

func isLowerHex(b []byte) bool {
	for _, c := range b {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// snapshot is the trail as it stood when Verify started.
type snapshot struct {
	srcs    []source
	limits  []int64 // bytes of each day file to read; -1 for archives
	head    headRecord
	headOK  bool
	headErr error
}

// appendsRefused reports what in dir has every append refused while the
// lines already written read intact: a link or a directory at the lock, a
// second name to the newest day file. A person's verify must not find a
// trail intact that DES can no longer write.
func appendsRefused(dir string) error {
	d, err := os.OpenRoot(dir)
	if err != nil {
		return nil // the directory itself is Verify's to report
	}
	defer d.Close()
	if fi, err := d.Lstat(lockName); err == nil && (fi.Mode()&fs.ModeSymlink != 0 || fi.IsDir()) {
		return notDESFile(d, lockName, fmt.Errorf("%s: %w", lockName, fileio.ErrNotRegular))
	}
	days, err := listDays(dir)
	if err != nil || len(days) == 0 {
		return nil
	}
	name := filepath.Base(days[len(days)-1].path)
	if f, err := openRegularIn(d, name, os.O_RDONLY, 0); err != nil && errors.Is(err, fileio.ErrNotRegular) {
		return err
	} else if err == nil {
		f.Close()
	}
	return nil
}

// verifyLockWait bounds Verify's wait for the directory lock: appends hold
// it for milliseconds, retention's catch-up for seconds.
var verifyLockWait = 30 * time.Second

// takeSnapshot lists the trail and reads the head record under the
// directory lock, when its file exists (a copy of a trail may have none,
// or be read-only: then without it).
func takeSnapshot(ctx context.Context, dir string) (snapshot, error) {
	var snap snapshot
	lockPath := filepath.Join(dir, lockName)
	if _, err := os.Stat(lockPath); err == nil {
		// Bounded: whoever can write the directory can hold its lock
		// forever (flock .lock sleep infinity), and a person's verify
		// must then say so, not hang.
		lctx, cancel := context.WithTimeout(ctx, verifyLockWait)
		defer cancel()
		lk, err := filelock.Acquire(lctx, lockPath)
		if err != nil && lctx.Err() != nil {
			return snap, fmt.Errorf("audit: verify %s: %w", dir, err)
		}
		if err == nil {
			defer lk.Unlock()
		}
	}
	srcs, err := listTrail(dir)
	if err != nil {
		return snap, err
	}
	snap.srcs = srcs
	snap.limits = make([]int64, len(srcs))
	for i, s := range srcs {
		snap.limits[i] = -1
		if !s.archive {
			fi, err := os.Stat(s.path)
			if err != nil {
				return snap, fmt.Errorf("audit: verify: %w", err)
			}
			snap.limits[i] = fi.Size()
		}
	}
	snap.head, snap.headOK, _, snap.headErr = readHead(dir)
	if snap.headErr != nil && !snap.headOK {
		return snap, fmt.Errorf("audit: verify %s: %w", dir, snap.headErr) // could not read it at all
	}
	return snap, nil
}

// walker reads the lines of a snapshot in trail order, one file in memory
// at a time.
type walker struct {
	ctx   context.Context
	snap  snapshot
	i     int    // next source
	files int    // sources opened
	file  string // current source
	data  []byte // rest of the current source
	n     int    // lines read from the current source
}

func (w *walker) next() (vline, bool, error) {
	for len(w.data) == 0 {
		if w.i == len(w.snap.srcs) {
			return vline{}, false, nil
		}
		if err := w.ctx.Err(); err != nil {
			return vline{}, false, fmt.Errorf("audit: verify: %w", err)
		}
		s := w.snap.srcs[w.i]
		data, err := s.read(w.snap.limits[w.i])
		if errors.Is(err, errArchiveCorrupt) {
			w.i++
			w.files++
			return vline{file: s.path, n: 1, first: true, bad: BreakMalformed, why: err.Error()}, true, nil
		}
		if err != nil {
			return vline{}, false, err
		}
		w.i++
		w.files++
		w.file, w.data, w.n = s.path, data, 0
	}
	w.n++
	l := vline{file: w.file, n: w.n, first: w.n == 1}
	end := bytes.IndexByte(w.data, '\n')
	if end < 0 {
		l.hash = sha256.Sum256(w.data)
		l.bad, l.why = BreakTorn, "no trailing newline: the line was cut short (a torn write, or the file truncated)"
		w.data = nil
		return l, true, nil
	}
	raw := w.data[:end+1]
	w.data = w.data[end+1:]
	l.hash = sha256.Sum256(raw)
	parseVline(&l, raw[:end])
	return l, true, nil
}

// rest reads every line after the current one.
func (w *walker) rest() ([]vline, error) {
	var out []vline
	for {
		l, ok, err := w.next()
		if err != nil || !ok {
			return out, err
		}
		out = append(out, l)
	}
}

// chainKeys are the keys Verify reads; the JSON decoder still checks the
// whole line.
type chainKeys struct {
	Timestamp *string `json:"timestamp"`
	Event     *string `json:"event"`
	Seq       *int64  `json:"seq"`
	Prev      *string `json:"prev"`
}

// parseVline reads a line's chain keys. A line in the exact form Append
// writes is read from its start and checked by json.Valid; any other form
// is decoded by encoding/json.
func parseVline(l *vline, raw []byte) {
	if parseWritten(l, raw) {
		return
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		l.bad, l.why = BreakMalformed, "an empty line"
		return
	}
	var k chainKeys
	if err := json.Unmarshal(raw, &k); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) && strings.HasPrefix(syn.Error(), "unexpected end of JSON input") {
			l.bad, l.why = BreakTorn, "the JSON ends early: the line was cut short"
			return
		}
		l.bad, l.why = BreakMalformed, "does not parse: "+err.Error()
		return
	}
	switch {
	case k.Timestamp == nil || k.Event == nil || *k.Event == "":
		l.bad, l.why = BreakMalformed, `not an entry: "timestamp" or "event" missing`
		return
	case (k.Seq == nil) != (k.Prev == nil):
		l.bad, l.why = BreakMalformed, `"seq" without "prev", or "prev" without "seq"`
		return
	case k.Seq != nil && *k.Seq < 1:
		l.bad, l.why = BreakMalformed, fmt.Sprintf(`"seq" %d is not positive`, *k.Seq)
		return
	}
	if _, err := time.Parse(time.RFC3339Nano, *k.Timestamp); err != nil {
		l.bad, l.why = BreakMalformed, `"timestamp": `+err.Error()
		return
	}
	if k.Seq != nil {
		l.chained, l.seq = true, *k.Seq
		l.setPrev([]byte(*k.Prev))
	}
}

// parseWritten reads `{"timestamp":"T","event":"E","seq":N,"prev":"P"`
// followed by "}" or "," from the start of raw, without escapes, and checks
// that raw is valid JSON. It reports false, having set nothing, for a line
// in any other form.
func parseWritten(l *vline, raw []byte) bool {
	rest, ok := bytes.CutPrefix(raw, prefixTimestamp)
	if !ok {
		return false
	}
	i := bytes.IndexByte(rest, '"')
	if i < 0 {
		return false
	}
	ts := rest[:i]
	if rest, ok = bytes.CutPrefix(rest[i:], prefixEvent); !ok {
		return false
	}
	if i = bytes.IndexByte(rest, '"'); i <= 0 || bytes.IndexByte(rest[:i], '\\') >= 0 {
		return false
	}
	if rest, ok = bytes.CutPrefix(rest[i:], []byte(`","seq":`)); !ok {
		return false
	}
	var seq int64
	for i = 0; i < len(rest) && i < 19 && rest[i] >= '0' && rest[i] <= '9'; i++ {
		seq = seq*10 + int64(rest[i]-'0')
	}
	if i == 0 || rest[0] == '0' || seq < 1 {
		return false
	}
	if rest, ok = bytes.CutPrefix(rest[i:], []byte(`,"prev":"`)); !ok || len(rest) < 2*sha256.Size+2 {
		return false
	}
	prev, after := rest[:2*sha256.Size], rest[2*sha256.Size:]
	if after[0] != '"' || (after[1] != '}' && after[1] != ',') || !json.Valid(raw) {
		return false
	}
	if _, err := time.Parse(time.RFC3339Nano, string(ts)); err != nil {
		return false
	}
	l.chained, l.seq = true, seq
	l.setPrev(prev)
	return true
}
