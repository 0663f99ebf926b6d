package audit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/deterministic-exec/des/internal/fileio"
)

// The witness and the attestations live in one per-user state directory:
// whoever removes that directory (a process outside the sandbox, a person)
// removes both, and a trail rewritten since reads as a new, unwitnessed
// one. Anchors are copies of the trail's head kept elsewhere, in places
// that leave a trace when they are removed and that are copied off the
// machine: the events of the decision log (pushed to the team's collector)
// and git notes on the commits (objects in the repository, pushed with
// it). Each says: at this time, the trail held the line with this seq and
// this hash. Verify, given them (WithAnchors), requires the trail still to
// hold each such line unchanged.

// Anchor is a head of the trail recorded outside it: the seq and hash of
// a chained line that the trail held at Time.
type Anchor struct {
	// Dir is the audit directory the head is of: its absolute path with
	// the links resolved (as WitnessPath names trails).
	Dir string `json:"dir"`
	// Host is the name of the machine the trail is on (os.Hostname): git
	// notes fetched from a colleague's clone at the same path are of
	// another trail. "" matches any host.
	Host string `json:"host,omitempty"`
	// Seq is the line's seq; SHA256 its hash, newline included (the next
	// line's "prev").
	Seq    int64  `json:"seq"`
	SHA256 string `json:"sha256"`
	// Time is when the head was read (and recorded).
	Time time.Time `json:"time"`
	// Source says where the anchor was found, for a report: a decision
	// log file and line, a git note and its commit. Not recorded.
	Source string `json:"-"`
}

// Valid reports whether a names a chained line: a positive seq and a
// lowercase hex SHA-256.
func (a Anchor) Valid() bool {
	return a.Seq > 0 && len(a.SHA256) == 64 && isLowerHex([]byte(a.SHA256))
}

// Of reports whether a is an anchor of the trail in dir, on this machine.
func (a Anchor) Of(dir string) bool {
	return a.Dir != "" && sameDir(a.Dir, dir) && (a.Host == "" || a.Host == hostname())
}

// hostname is this machine's name, "" when unknown.
var hostname = sync.OnceValue(func() string {
	h, _ := os.Hostname()
	return h
})

// Head returns the head of the trail in dir as an anchor at now: the line
// the head record names, when the day file it names still holds that line
// with that hash where the record says. ok is false when there is no
// chained line, or the record and the file disagree (a write in progress,
// day files being archived, a trail someone changed: Verify reports that
// one): an anchor is only ever a line the trail held. It takes no lock and
// reads two small pieces of two files, so a hook can call it for every
// event.
func Head(dir string, now time.Time) (a Anchor, ok bool) {
	rec, found, _, err := readHead(dir)
	if err != nil || !found {
		return a, false
	}
	line, ok := lineAt(dir, rec.File, rec.Size, rec.SHA256)
	if !ok {
		return a, false
	}
	// The line's own seq, not only the record's: a head record pointing a
	// seq at another line is no head.
	var l vline
	parseVline(&l, line[:len(line)-1])
	if l.bad != "" || !l.chained || l.seq != rec.Seq {
		return a, false
	}
	return Anchor{Dir: realPath(dir), Host: hostname(), Seq: rec.Seq, SHA256: rec.SHA256, Time: now.UTC()}, true
}

// Head is [Head] of the Log's directory.
func (l *Log) Head() (Anchor, bool) { return Head(l.dir, l.now()) }

// lineAt returns the line, newline included, that the day file name in
// dir holds ending at offset size, when it hashes to sum. It reads
// backwards from size in growing chunks, so a short line costs one small
// read.
func lineAt(dir, name string, size int64, sum string) ([]byte, bool) {
	if size < 1 || filepath.Base(name) != name || !isDayFile(name) {
		return nil, false
	}
	f, fi, err := fileio.OpenRegular(filepath.Join(dir, name))
	if err != nil {
		return nil, false
	}
	defer f.Close()
	if fi.Size() < size {
		return nil, false
	}
	for chunk := int64(4096); ; chunk *= 4 {
		n := min(chunk, size, int64(MaxLineSize)+1)
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, size-n); err != nil && !errors.Is(err, io.EOF) {
			return nil, false
		}
		if buf[n-1] != '\n' {
			return nil, false
		}
		if i := bytes.LastIndexByte(buf[:n-1], '\n'); i >= 0 || n == size {
			return buf[i+1:], lineHash(buf[i+1:]) == sum
		}
		if n > int64(MaxLineSize) {
			return nil, false
		}
	}
}

// WithAnchors makes Verify require the trail to hold the line of each
// anchor of it (Anchor.Of: anchors of other trails are left out) with the
// anchor's hash: a trail that no longer holds one was deleted, cut or
// rewritten after the anchor was recorded, witness or no witness. Anchors
// recorded before the witness was adopted (AdoptWitness: a person vouched
// for the trail as it then was) are not checked. Verify takes the option;
// a Log ignores it.
func WithAnchors(anchors []Anchor) Option {
	return func(l *Log) { l.anchors = append(l.anchors, anchors...) }
}

// AnchorReport says how the trail stands against its anchors.
type AnchorReport struct {
	// Checked is the number of anchors of this trail that were checked;
	// Superseded those recorded before the witness was adopted, and
	// Invalid those that name no chained line (left out).
	Checked, Superseded, Invalid int
	// Seq is the highest seq an anchor checked names (0: none).
	Seq int64
}

// anchorIndex maps each seq an anchor of the trail names to those anchors.
func anchorIndex(anchors []Anchor, dir string, adopted time.Time, rep *AnchorReport) map[int64][]Anchor {
	idx := map[int64][]Anchor{}
	for _, a := range anchors {
		switch {
		case !a.Of(dir):
		case !a.Valid():
			rep.Invalid++
		case !adopted.IsZero() && a.Time.Before(adopted):
			rep.Superseded++
		default:
			idx[a.Seq] = append(idx[a.Seq], a)
			rep.Checked++
			rep.Seq = max(rep.Seq, a.Seq)
		}
	}
	return idx
}

// checkAnchor compares a chained line of the trail with the anchors of its
// seq; the first that disagrees is the break.
func checkAnchor(c *vline, anchors []Anchor) *Break {
	for _, a := range anchors {
		if c.hash.String() != a.SHA256 {
			return &Break{Kind: BreakAnchor, File: c.file, Line: c.n,
				Msg: fmt.Sprintf("seq %d hashes to %s, but %s records %s (the trail's head at %s): the trail was rewritten at or before this line after that",
					c.seq, c.hash, a.Source, a.SHA256, a.Time.Format(time.RFC3339))}
		}
	}
	return nil
}

// missingAnchor is the break for anchors of seqs past the trail's end
// (lastSeq), last being its last chained line: the highest such seq's.
func missingAnchor(dir string, idx map[int64][]Anchor, lastSeq int64, last *vline) *Break {
	var worst *Anchor
	for seq, as := range idx {
		if seq > lastSeq && (worst == nil || seq > worst.Seq) {
			worst = &as[0]
		}
	}
	if worst == nil {
		return nil
	}
	file, n := dir, 0
	if last != nil {
		file, n = last.file, last.n+1
	}
	if lastSeq == 0 {
		return &Break{Kind: BreakAnchor, File: file, Line: n,
			Msg: fmt.Sprintf("the trail holds no chained line, but %s records seq %d (the trail's head at %s): the trail was deleted",
				worst.Source, worst.Seq, worst.Time.Format(time.RFC3339))}
	}
	return &Break{Kind: BreakAnchor, File: file, Line: n,
		Msg: fmt.Sprintf("the trail ends at seq %d, but %s records seq %d (the trail's head at %s): %d lines were cut from the end, or the trail deleted and started again",
			lastSeq, worst.Source, worst.Seq, worst.Time.Format(time.RFC3339), worst.Seq-lastSeq)}
}
