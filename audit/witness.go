package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/deterministic-exec/des/internal/fileio"
)

// The chain and its head record live in the audit directory, so whoever can
// write that directory can delete the trail, cut its end and fix the head
// record, or rewrite it from the first line: each is a valid chain again. A
// witness kept outside the directory pins the chain's end: every Append
// also records the seq, hash, day file and file size of the last line it
// wrote in a witness file elsewhere (WithWitness), and Verify, given the
// same witness directory, requires the trail to hold that line unchanged.
//
// The witness only moves forward along the chain: Append advances it when
// the trail it appends to ends at the witnessed line, or continues past it
// with that line intact (a crash between an append and the witness update
// leaves the witness behind, never ahead). A trail that does not continue
// the witness (deleted, cut, rewritten) is appended to, but the witness
// stays where it was, so Verify keeps reporting the break until a person
// removes the witness file.
//
// Order of writes in Append: the lines, then the head record, then the
// witness, each complete before the next starts. A crash at any point
// leaves a witness equal to or behind the trail's end, which Verify accepts.

// WithWitness makes the Log record the chain's head in a witness file in
// dir (created, mode 0700, when missing), named by a hash of the log's
// absolute directory, so one witness directory serves many trails. dir
// should be outside the audit directory, where the writers the trail is
// meant to catch cannot write. Verify takes the same option. "" (the
// default) keeps no witness.
func WithWitness(dir string) Option {
	return func(l *Log) { l.witnessDir = dir }
}

// WitnessPath returns the witness file of the trail in auditDir under the
// witness directory dir. The trail is named by its absolute path with
// symbolic links resolved (as far as it exists), so that the hook (given
// CLAUDE_PROJECT_DIR) and `git rev-parse --show-toplevel` (links resolved)
// find the same witness, and a deleted audit directory still finds its own.
func WitnessPath(dir, auditDir string) string {
	sum := sha256.Sum256([]byte(realPath(auditDir)))
	return filepath.Join(dir, "audit-"+hex.EncodeToString(sum[:16])+".json")
}

// realPath is path made absolute, with the symbolic links of its longest
// existing prefix resolved.
func realPath(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	var rest []string
	for p := abs; ; {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			for i := len(rest) - 1; i >= 0; i-- {
				r = filepath.Join(r, rest[i])
			}
			return r
		}
		parent := filepath.Dir(p)
		if parent == p {
			return abs
		}
		rest = append(rest, filepath.Base(p))
		p = parent
	}
}

// witnessRecord is the content of a witness file.
type witnessRecord struct {
	Dir    string `json:"dir"`    // the absolute audit directory
	Seq    int64  `json:"seq"`    // seq of the witnessed line: the number of chained lines up to it
	SHA256 string `json:"sha256"` // lineHash of that line
	File   string `json:"file"`   // its day file
	Size   int64  `json:"size"`   // the day file's size just after it
	// LostAfter, when set, marks a witness found deleted by an append:
	// the last line des had attested before (the witness was gone since
	// then). Only AdoptWitness replaces it.
	LostAfter int64 `json:"lost_after,omitempty"`
	// Adopted is when a person adopted the trail (AdoptWitness): anchors
	// recorded before it are of the trail as it was before (removed or
	// rewritten by that person), and Verify does not check them. Carried
	// forward as the witness moves.
	Adopted time.Time `json:"adopted,omitzero"`
}

// errBadWitness marks a witness file that exists but cannot be used.
var errBadWitness = errors.New("witness does not parse")

func readWitness(path string) (rec witnessRecord, ok bool, err error) {
	// Never waits on a FIFO: a sandbox that lets a commit move the witness
	// on lets the agent write the witness directory too.
	data, err := fileio.ReadBounded(path, 1<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return rec, false, nil
	}
	if errors.Is(err, fileio.ErrNotRegular) || errors.Is(err, fileio.ErrTooLarge) {
		return rec, true, fmt.Errorf("%w: %w", errBadWitness, err)
	}
	if err != nil {
		return rec, false, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return rec, true, fmt.Errorf("%w: %s: %w", errBadWitness, path, err)
	}
	if rec.LostAfter > 0 && rec.Seq == 0 {
		return rec, true, nil
	}
	if rec.Seq < 1 || len(rec.SHA256) != 64 {
		return rec, true, fmt.Errorf("%w: %s holds %q", errBadWitness, path, bytes.TrimSpace(data))
	}
	return rec, true, nil
}

// writeWitness replaces the witness file by rename, so that a reader (or a
// crash) sees the old record or the new one; with sync, the data and the
// directory entry are on disk before it returns. The temporary file has a
// fixed name: its writers hold the audit directory's lock.
func writeWitness(path string, rec witnessRecord, sync bool) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if writeInPlace(path, data, sync) == nil {
		return nil
	}
	tmp := path + ".tmp"
	err = writeFileSync(tmp, data, sync)
	if errors.Is(err, fs.ErrNotExist) {
		if err = os.MkdirAll(filepath.Dir(path), 0o700); err == nil {
			err = writeFileSync(tmp, data, sync)
		}
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	if sync {
		_ = fileio.SyncDir(filepath.Dir(path)) // not every platform syncs a directory
	}
	return nil
}

// writeInPlace rewrites the witness at path in place, when it is a regular
// file of its own (not a link, a FIFO or a file with another name): a
// record of 200 bytes is written in one sector, and on this path an append
// creates no file, which costs more than the rest of the witness on some
// disks. Anything else at path is left to writeWitness's new file.
func writeInPlace(path string, data []byte, sync bool) error {
	f, err := os.OpenFile(path, os.O_WRONLY|fileio.NoFollow|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || fileio.LinkCount(fi) != 1 {
		return fileio.ErrNotRegular
	}
	if _, err := f.WriteAt(data, 0); err != nil {
		return err
	}
	if int64(len(data)) < fi.Size() {
		if err := f.Truncate(int64(len(data))); err != nil {
			return err
		}
	}
	if sync {
		return f.Sync()
	}
	return nil
}

// writeFileSync creates the file at path anew: whatever is at the name (a
// link the agent left there, to the user's ~/.bashrc, say, or a FIFO) is
// removed first, never written through or waited on.
func writeFileSync(path string, data []byte, sync bool) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// advanceWitness moves the witness to next, the head after an append whose
// trail ended at prev before it, when that trail continues the witness.
// Called under the directory lock. It returns whether the witness moved; a
// trail that does not continue it leaves it in place (and is reported by
// Verify).
//
// A trail without a witness gets its first one, unless des attested lines
// of it before: those appends witnessed it, so the witness was deleted,
// and starting a new one at the current end would witness whatever the
// trail now holds. A record of the loss takes its place (LostAfter), which
// Verify reports until a person adopts the trail (AdoptWitness).
// lastAttested is the last seq des attested before this append (0: none).
func (l *Log) advanceWitness(prev chainHead, next headRecord, lastAttested int64) (bool, error) {
	path := WitnessPath(l.witnessDir, l.dir)
	w, ok, err := readWitness(path)
	if err != nil {
		return false, err
	}
	if !ok && lastAttested > 0 {
		// Keep the loss on record where Verify looks, with the line it
		// happened after, for the appends to come.
		return false, writeWitness(path, witnessRecord{Dir: realPath(l.dir), LostAfter: lastAttested}, l.fsync)
	}
	if w.LostAfter > 0 {
		return false, nil
	}
	continues := !ok || // first witness of this trail
		prev.seq == w.Seq && prev.hash == w.SHA256 || // the trail ended at the witnessed line
		prev.seq > w.Seq && witnessedLineIntact(l.dir, w) // a crash left the witness behind
	if !continues {
		return false, nil
	}
	return true, writeWitness(path, witnessRecord{Dir: realPath(l.dir), Seq: next.Seq, SHA256: next.SHA256, File: next.File, Size: next.Size, Adopted: w.Adopted}, l.fsync)
}

// witnessedLineIntact reports whether the day file the witness names still
// holds the witnessed line where it was: the line ending at w.Size hashes
// to w.SHA256.
func witnessedLineIntact(dir string, w witnessRecord) bool {
	if w.Size < 1 || filepath.Base(w.File) != w.File || !isDayFile(w.File) {
		return false
	}
	f, _, err := fileio.OpenRegular(filepath.Join(dir, w.File))
	if err != nil {
		return false
	}
	defer f.Close()
	n := min(w.Size, int64(MaxLineSize)+1)
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, w.Size-n); err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	if buf[n-1] != '\n' {
		return false
	}
	start := bytes.LastIndexByte(buf[:n-1], '\n') + 1
	return lineHash(buf[start:]) == w.SHA256
}

// ErrNotIntact is returned by AdoptWitness for a trail Verify finds broken.
var ErrNotIntact = errors.New("the trail is not intact")

// AdoptWitness witnesses the current end of the trail in dir, replacing any
// witness it has: for a trail that is trusted but has no witness here (a
// new machine, a moved project, a trail written before des kept witnesses),
// or after a person deliberately removed or rewrote the trail. It checks
// the chain first (without the witness) and refuses a broken trail with
// ErrNotIntact. The witness directory comes from WithWitness. It returns
// the report of that check; a trail with no chained line is left without a
// witness.
func AdoptWitness(ctx context.Context, dir string, opts ...Option) (Report, error) {
	var cfg Log
	for _, opt := range opts {
		if opt != nil {
			opt(&cfg)
		}
	}
	if cfg.witnessDir == "" {
		return Report{}, errors.New("audit: adopt witness: no witness directory (WithWitness)")
	}
	rep, err := Verify(ctx, dir, WithRoot(cfg.root))
	// Where the witness is (or will be, from the trail's first chained
	// line), whatever the adoption does: the report names it.
	rep.Witness.Path = WitnessPath(cfg.witnessDir, dir)
	if err != nil {
		return rep, err
	}
	if !rep.Intact() {
		return rep, fmt.Errorf("audit: adopt witness for %s: %w: %v", dir, ErrNotIntact, rep.Break)
	}
	l, err := Open(dir, opts...)
	if err != nil {
		return rep, err
	}
	lctx, cancel := context.WithTimeout(ctx, verifyLockWait) // a lock held for good is reported, not waited on
	defer cancel()
	_, unlock, err := l.lock(lctx) // the witness and its temporary file are the appenders' too
	if err != nil {
		return rep, err
	}
	defer unlock()
	rec, ok, _, err := readHead(dir)
	if err != nil || !ok {
		return rep, err // no chained line: nothing to witness
	}
	path := WitnessPath(cfg.witnessDir, dir)
	// The adoption's time: anchors recorded before it pin the trail the
	// person replaced, and are no longer checked.
	adopted := time.Now().UTC()
	if err := writeWitness(path, witnessRecord{Dir: realPath(dir), Seq: rec.Seq, SHA256: rec.SHA256, File: rec.File, Size: rec.Size, Adopted: adopted}, true); err != nil {
		return rep, fmt.Errorf("audit: adopt witness %s: %w", path, err)
	}
	rep.Witness = WitnessReport{Path: path, Found: true, Seq: rec.Seq, Behind: rep.LastSeq - rec.Seq}
	return rep, nil
}
