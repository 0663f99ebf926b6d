package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/deterministic-exec/des/internal/fileio"
)

// The chain proves the order of the lines, not who wrote them: whoever can
// append to the directory can append a line chained as well as any (Claude
// Code's sandbox lets Bash append to it, for the pre-commit hook). An
// attestation file kept where those writers cannot write (des's per-user
// state directory, which the sandbox denies) records the seq and hash of
// each line the Log wrote itself, so that readers can tell its lines from
// lines someone else chained in.

// WithAttestations makes every Append also record, in file, the seq and
// SHA-256 of each line it wrote ("<seq> <sha256>" lines, appended). file
// belongs where the writers the trail must catch cannot write. With start,
// the Log creates file (0o600, its directory 0o700) if it does not exist,
// on its first Append or Read: it starts the attestations (a Read that
// starts them attests nothing); without, it records only once they have
// started. Read then sets [Entry.Attested] on the
// entries whose line is recorded there. An Append that cannot record (a
// sandboxed process, which may append to the trail but not write file)
// still appends: its lines are simply not attested. Without the option, or
// while file does not exist (no writer ever attested: a trail from before
// attestations, from another machine, or made by hand), Read attests every
// entry; once it exists, lines written before it are not attested.
func WithAttestations(file string, start bool) Option {
	return func(l *Log) { l.attestFile, l.attestStart = file, start }
}

// maxAttestations bounds the attestation file Read reads: about 80 bytes
// a line, so a million lines.
const maxAttestations = 80 << 20

// attest records lines, written with seqs first..first+len(lines)-1.
func (l *Log) attest(first int64, lines []line) {
	if l.attestFile == "" {
		return
	}
	var buf []byte
	for i, ln := range lines {
		buf = strconv.AppendInt(buf, first+int64(i), 10)
		buf = append(buf, ' ')
		buf = append(buf, lineHash(ln.data)...)
		buf = append(buf, '\n')
	}
	err := appendAttestations(l.attestFile, buf, l.attestStart)
	if errors.Is(err, fs.ErrNotExist) && l.attestStart {
		if err = l.startAttestations(); err == nil {
			err = appendAttestations(l.attestFile, buf, true)
		}
	}
	if errors.Is(err, fs.ErrNotExist) && !l.attestStart {
		return // not started: the trail is read as it always was
	}
	if err != nil {
		l.logger.Debug("audit: lines not attested", "file", l.attestFile, "from_seq", first, "err", err)
	}
}

// startAttestations creates the attestation file, empty.
func (l *Log) startAttestations() error {
	if err := os.MkdirAll(filepath.Dir(l.attestFile), 0o700); err != nil {
		return err
	}
	return appendAttestations(l.attestFile, nil, true)
}

func appendAttestations(file string, buf []byte, create bool) error {
	flag := os.O_WRONLY | os.O_APPEND | fileio.NoFollow | syscall.O_NONBLOCK
	if create {
		flag |= os.O_CREATE
	}
	f, err := os.OpenFile(file, flag, 0o600)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s: %w", file, fileio.ErrNotRegular)
	}
	if err == nil {
		_, err = f.Write(buf)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// markAttested sets Attested on entries, whose lines hash to sums: every
// entry without attestations configured, else those recorded in the file.
// A file that cannot be read attests nothing.
func (l *Log) markAttested(entries []Entry, sums [][sha256.Size]byte) {
	if l.attestFile == "" {
		for i := range entries {
			entries[i].Attested = true
		}
		return
	}
	if len(entries) == 0 {
		return
	}
	want := make(map[int64][]int, len(entries)) // a seq's entries: a line may be copied
	least := entries[0].Seq
	for i, e := range entries {
		want[e.Seq] = append(want[e.Seq], i)
		least = min(least, e.Seq)
	}
	data, err := readAttestations(l.attestFile, least)
	if errors.Is(err, fs.ErrNotExist) && l.attestStart {
		// The starter reads before it appended: it starts the
		// attestations now, or lines chained in before its first append
		// would be read as from a trail no writer attests.
		if err := l.startAttestations(); err != nil {
			l.logger.Warn("audit: attestations not started; no entry is attested", "file", l.attestFile, "err", err)
		}
		return
	}
	if errors.Is(err, fs.ErrNotExist) {
		// No writer of this Log ever attested here: a trail from before
		// attestations, from another machine or made by hand is read as
		// it always was.
		for i := range entries {
			entries[i].Attested = true
		}
		return
	}
	if err != nil {
		l.logger.Warn("audit: attestations unreadable; no entry is attested", "file", l.attestFile, "err", err)
		return
	}
	// Seqs grow along the file: read it from the end, down to the least
	// seq wanted. at is where each attested entry's record is in the file:
	// the order DES wrote its lines in.
	at := make([]int, len(entries))
	for len(data) > 0 {
		data = bytes.TrimSuffix(data, []byte{'\n'})
		start := bytes.LastIndexByte(data, '\n') + 1
		rec := data[start:]
		data = data[:start]
		seqText, sum, ok := bytes.Cut(rec, []byte{' '})
		seq, err := strconv.ParseInt(string(seqText), 10, 64)
		if !ok || err != nil {
			continue
		}
		if seq < least {
			break
		}
		is, wanted := want[seq]
		if !wanted {
			continue
		}
		var got [sha256.Size]byte
		if n, err := hex.Decode(got[:], sum); err != nil || n != sha256.Size {
			continue
		}
		for _, i := range is {
			if got == sums[i] {
				entries[i].Attested, at[i] = true, start
			}
		}
	}
	// The record says a line was written, not where: a copy of it, byte for
	// byte, moved or replayed after later lines (a resolution after the
	// failure that followed it) is where DES did not write it. An entry is
	// attested only when its record follows the record of every attested
	// entry before it in the trail, so the first copy of a line is the one
	// attested. (The file's order, not the seqs: a line chained in with a
	// low seq sets back the seqs DES writes next, not the order it wrote in.)
	last := -1
	for i := range entries {
		if !entries[i].Attested {
			continue
		}
		if at[i] <= last {
			entries[i].Attested = false
			continue
		}
		last = at[i]
	}
}

// readAttestations reads the end of the attestation file back to a record
// of a seq below least (all of it when there is none): the reader stops
// there, so a long history is not read for the few lines a gate asks
// about. A file over maxAttestations is refused, as a whole read would be.
func readAttestations(file string, least int64) ([]byte, error) {
	f, fi, err := fileio.OpenRegular(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := fi.Size()
	if size > maxAttestations {
		return nil, fmt.Errorf("%s: %w: %d bytes, over the %d MiB limit", file, fileio.ErrTooLarge, size, maxAttestations>>20)
	}
	for n := int64(64 << 10); ; n *= 4 {
		off := max(0, size-n)
		buf := make([]byte, size-off)
		if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if off == 0 {
			return buf, nil
		}
		buf = buf[bytes.IndexByte(buf, '\n')+1:] // the first line may be cut
		for rest := buf; len(rest) > 0; {
			line, next, _ := bytes.Cut(rest, []byte{'\n'})
			seqText, _, _ := bytes.Cut(line, []byte{' '})
			if seq, err := strconv.ParseInt(string(seqText), 10, 64); err == nil && seq < least {
				return buf, nil
			}
			rest = next
		}
	}
}

// lastAttestation returns the seq of the last line the attestation file
// records (the last line a Log attesting here wrote); ok is false when the
// file is missing, unreadable or holds no record. A record is written under
// the same lock and by the same Append as the witness, so a trail with an
// attested line had a witness: its loss is a finding (Verify), and Append
// does not start a new one behind it.
func lastAttestation(file string) (seq int64, ok bool) {
	if file == "" {
		return 0, false
	}
	data, err := readAttestations(file, math.MaxInt64) // the last block: its last record is below any seq
	if err != nil {
		return 0, false
	}
	for len(data) > 0 {
		data = bytes.TrimSuffix(data, []byte{'\n'})
		start := bytes.LastIndexByte(data, '\n') + 1
		seqText, sum, found := bytes.Cut(data[start:], []byte{' '})
		data = data[:start]
		n, err := strconv.ParseInt(string(seqText), 10, 64)
		if found && err == nil && n > 0 && len(sum) == 2*sha256.Size {
			return n, true
		}
	}
	return 0, false
}
