package audit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// witnessed is a trail of n lines appended with a witness.
func witnessed(t *testing.T, n int) (dir, wdir string) {
	t.Helper()
	dir, wdir = filepath.Join(t.TempDir(), "audit"), t.TempDir()
	appendN(t, dir, wdir, n, "orig")
	return dir, wdir
}

func appendN(t *testing.T, dir, wdir string, n int, tag string) {
	t.Helper()
	var opts []Option
	if wdir != "" {
		opts = append(opts, WithWitness(wdir))
	}
	l := mustOpen(t, dir, opts...)
	for i := range n {
		if err := l.Append(context.Background(), hookError(map[string]any{"error": fmt.Sprintf("%s-%d", tag, i)})); err != nil {
			t.Fatal(err)
		}
	}
}

func verifyWitnessed(t *testing.T, dir, wdir string) Report {
	t.Helper()
	rep, err := Verify(context.Background(), dir, WithWitness(wdir))
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func wantWitnessBreak(t *testing.T, rep Report, msg string) {
	t.Helper()
	if rep.Intact() || rep.Break.Kind != BreakWitness || !strings.Contains(rep.Break.Msg, msg) {
		t.Errorf("report = %+v (break %v), want a witness break saying %q", rep, rep.Break, msg)
	}
}

func TestWitnessIntactTrail(t *testing.T) {
	t.Parallel()
	dir, wdir := witnessed(t, 5)
	rep := verifyWitnessed(t, dir, wdir)
	if !rep.Intact() || !rep.Witness.Found || rep.Witness.Seq != 5 || rep.Witness.Behind != 0 {
		t.Errorf("report = %+v", rep)
	}
	if _, err := os.Stat(WitnessPath(wdir, dir)); err != nil {
		t.Error(err)
	}
	// The witness lives outside the audit directory.
	if strings.HasPrefix(WitnessPath(wdir, dir), dir) {
		t.Errorf("witness %s inside %s", WitnessPath(wdir, dir), dir)
	}
}

// The attacks of the issue: each leaves a valid chain, which only the
// witness catches; later appends do not wash the evidence away.
func TestWitnessCatchesTamperedTrails(t *testing.T) {
	t.Parallel()
	t.Run("every file deleted", func(t *testing.T) {
		dir, wdir := witnessed(t, 5)
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				os.Remove(p)
			}
			return nil
		})
		if rep, err := Verify(context.Background(), dir); err != nil || !rep.Intact() {
			t.Fatalf("without the witness the deleted trail verifies: %+v %v", rep, err)
		}
		wantWitnessBreak(t, verifyWitnessed(t, dir, wdir), "the trail was deleted")
		appendN(t, dir, wdir, 8, "after") // a new chain, longer than the witnessed one
		wantWitnessBreak(t, verifyWitnessed(t, dir, wdir), "seq 5 hashes to")
	})
	t.Run("directory removed", func(t *testing.T) {
		dir, wdir := witnessed(t, 2)
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		wantWitnessBreak(t, verifyWitnessed(t, dir, wdir), "the audit directory is gone")
	})
	t.Run("end cut and head rewritten", func(t *testing.T) {
		dir, wdir := witnessed(t, 6)
		day := onlyDayFile(t, dir)
		data, _ := os.ReadFile(day)
		lines := strings.SplitAfter(string(data), "\n")
		kept := strings.Join(lines[:4], "")
		if err := os.WriteFile(day, []byte(kept), 0o644); err != nil {
			t.Fatal(err)
		}
		writeHeadFor(t, dir, day, 4, lines[3], int64(len(kept)))
		if rep, _ := Verify(context.Background(), dir); !rep.Intact() {
			t.Fatalf("the cut trail should be a valid chain without the witness: %v", rep.Break)
		}
		wantWitnessBreak(t, verifyWitnessed(t, dir, wdir), "the trail ends at seq 4, but the witness")
		appendN(t, dir, wdir, 3, "after")
		wantWitnessBreak(t, verifyWitnessed(t, dir, wdir), "seq 6 hashes to")
	})
	t.Run("rewritten from line 1", func(t *testing.T) {
		dir, wdir := witnessed(t, 4)
		forged := filepath.Join(t.TempDir(), "audit")
		appendN(t, forged, "", 4, "forged")
		os.RemoveAll(dir)
		if err := os.Rename(forged, dir); err != nil {
			t.Fatal(err)
		}
		wantWitnessBreak(t, verifyWitnessed(t, dir, wdir), "seq 4 hashes to")
	})
}

func onlyDayFile(t *testing.T, dir string) string {
	t.Helper()
	days, err := listDays(dir)
	if err != nil || len(days) != 1 {
		t.Fatalf("day files: %v %v", days, err)
	}
	return days[0].path
}

func writeHeadFor(t *testing.T, dir, day string, seq int64, line string, size int64) {
	t.Helper()
	if err := writeHeadAt(dir, headRecord{Seq: seq, SHA256: lineHash([]byte(line)), File: filepath.Base(day), Size: size}, -1, false); err != nil {
		t.Fatal(err)
	}
}

func TestWitnessMissing(t *testing.T) {
	t.Parallel()
	wdir := t.TempDir()
	empty := t.TempDir()
	rep := verifyWitnessed(t, empty, wdir)
	if !rep.Intact() || rep.Witness.Found || rep.Witness.Path == "" {
		t.Errorf("empty trail, no witness: %+v", rep)
	}
	dir := filepath.Join(t.TempDir(), "audit")
	appendN(t, dir, "", 3, "old") // a trail from before witnesses, or from another machine
	// A trail with lines and no witness is checked on its chain alone.
	if rep := verifyWitnessed(t, dir, wdir); !rep.Intact() || rep.Witness.Found || rep.LastSeq != 3 {
		t.Errorf("trail with lines, no witness: %+v", rep)
	}
	rep, err := AdoptWitness(context.Background(), dir, WithWitness(wdir))
	if err != nil || !rep.Witness.Found || rep.Witness.Seq != 3 {
		t.Fatalf("adopt: %+v %v", rep, err)
	}
	if rep := verifyWitnessed(t, dir, wdir); !rep.Intact() {
		t.Errorf("after adopting: %v", rep.Break)
	}
	// A broken trail is not adopted.
	day := onlyDayFile(t, dir)
	data, _ := os.ReadFile(day)
	os.WriteFile(day, []byte(strings.Replace(string(data), "old-1", "OLD-1", 1)), 0o644)
	if _, err := AdoptWitness(context.Background(), dir, WithWitness(wdir)); !errors.Is(err, ErrNotIntact) {
		t.Errorf("adopting a broken trail: %v", err)
	}
}

// A crash between the writes of an append leaves the witness behind the
// trail's end, never ahead: Verify accepts it, and the next append moves
// the witness on.
func TestWitnessCrashWindows(t *testing.T) {
	t.Parallel()
	t.Run("after the lines and the head record, before the witness", func(t *testing.T) {
		dir, wdir := witnessed(t, 3)
		appendN(t, dir, "", 2, "crash") // lines and head, no witness update
		rep := verifyWitnessed(t, dir, wdir)
		if !rep.Intact() || rep.Witness.Seq != 3 || rep.Witness.Behind != 2 {
			t.Fatalf("report = %+v (break %v)", rep, rep.Break)
		}
		appendN(t, dir, wdir, 1, "next")
		if rep := verifyWitnessed(t, dir, wdir); !rep.Intact() || rep.Witness.Seq != 6 || rep.Witness.Behind != 0 {
			t.Errorf("after the next append: %+v (break %v)", rep, rep.Break)
		}
	})
	t.Run("after the lines, before the head record", func(t *testing.T) {
		dir, wdir := witnessed(t, 3)
		head, _ := os.ReadFile(filepath.Join(dir, HeadFile))
		appendN(t, dir, "", 2, "crash")
		if err := os.WriteFile(filepath.Join(dir, HeadFile), head, 0o644); err != nil { // the head record as before
			t.Fatal(err)
		}
		if rep := verifyWitnessed(t, dir, wdir); !rep.Intact() || rep.Witness.Behind != 2 {
			t.Fatalf("report = %+v (break %v)", rep, rep.Break)
		}
		appendN(t, dir, wdir, 1, "next")
		if rep := verifyWitnessed(t, dir, wdir); !rep.Intact() || rep.Witness.Seq != 6 {
			t.Errorf("after the next append: %+v (break %v)", rep, rep.Break)
		}
	})
	t.Run("during the witness write", func(t *testing.T) {
		dir, wdir := witnessed(t, 3)
		// A temporary file left by a crash before the rename.
		if err := os.WriteFile(WitnessPath(wdir, dir)+".tmp", []byte(`{"seq":`), 0o600); err != nil {
			t.Fatal(err)
		}
		if rep := verifyWitnessed(t, dir, wdir); !rep.Intact() || rep.Witness.Seq != 3 {
			t.Errorf("report = %+v (break %v)", rep, rep.Break)
		}
	})
	t.Run("before the lines", func(t *testing.T) {
		dir, wdir := witnessed(t, 3)
		if rep := verifyWitnessed(t, dir, wdir); !rep.Intact() {
			t.Errorf("report = %+v", rep.Break)
		}
	})
}

func TestWitnessUnusable(t *testing.T) {
	t.Parallel()
	dir, wdir := witnessed(t, 2)
	if err := os.WriteFile(WitnessPath(wdir, dir), []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	wantWitnessBreak(t, verifyWitnessed(t, dir, wdir), "witness does not parse")
	appendN(t, dir, wdir, 1, "more") // logged, not an error; the witness is left for Verify to report
	wantWitnessBreak(t, verifyWitnessed(t, dir, wdir), "witness does not parse")
}

// The same trail reached through a symbolic link has the same witness, also
// once the audit directory is gone.
func TestWitnessThroughSymlink(t *testing.T) {
	t.Parallel()
	real := t.TempDir()
	link := filepath.Join(t.TempDir(), "proj")
	if err := os.Symlink(real, link); err != nil {
		t.Skip(err)
	}
	wdir := t.TempDir()
	appendN(t, filepath.Join(link, "audit"), wdir, 2, "x")
	if WitnessPath(wdir, filepath.Join(link, "audit")) != WitnessPath(wdir, filepath.Join(real, "audit")) {
		t.Fatal("two witnesses for one trail")
	}
	if rep := verifyWitnessed(t, filepath.Join(real, "audit"), wdir); !rep.Intact() || !rep.Witness.Found {
		t.Errorf("through the real path: %+v %v", rep, rep.Break)
	}
	os.RemoveAll(filepath.Join(real, "audit"))
	wantWitnessBreak(t, verifyWitnessed(t, filepath.Join(link, "audit"), wdir), "the audit directory is gone")
}

// A witness des kept and lost is a finding: the attestations (written by
// the same appends) say the trail was witnessed. The next append does not
// start a new witness at whatever end the trail then has, and a trail
// rewritten meanwhile is not taken as a new one; adopting it ends the
// finding.
func TestWitnessDeletedIsFound(t *testing.T) {
	t.Parallel()
	dir, wdir := filepath.Join(t.TempDir(), "audit"), t.TempDir()
	attested := filepath.Join(t.TempDir(), "state", "audit-attested")
	opts := []Option{WithWitness(wdir), WithAttestations(attested, true)}
	l := mustOpen(t, dir, opts...)
	for i := range 3 {
		if err := l.Append(context.Background(), hookError(map[string]any{"error": fmt.Sprintf("orig-%d", i)})); err != nil {
			t.Fatal(err)
		}
	}
	verify := func() Report {
		t.Helper()
		rep, err := Verify(context.Background(), dir, WithWitness(wdir), WithAttestations(attested, false))
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	if rep := verify(); !rep.Intact() || !rep.Witness.Found || rep.Witness.Seq != 3 {
		t.Fatalf("witnessed, attested trail: %+v", rep)
	}
	// The witness directory removed, the trail rewritten from line 1, and
	// the hook's next event appends to it.
	if err := os.RemoveAll(wdir); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	appendN(t, dir, "", 2, "forged")
	if err := mustOpen(t, dir, opts...).Append(context.Background(), hookError(map[string]any{"error": "next event"})); err != nil {
		t.Fatal(err)
	}
	if w, ok, _ := readWitness(WitnessPath(wdir, dir)); !ok || w.LostAfter != 3 || w.Seq != 0 {
		t.Errorf("the append left the witness %+v (found %v); want a record of its loss after seq 3", w, ok)
	}
	// More events: the record keeps the line the loss happened after.
	appendN(t, dir, "", 0, "")
	for range 2 {
		if err := mustOpen(t, dir, opts...).Append(context.Background(), hookError(map[string]any{"error": "later"})); err != nil {
			t.Fatal(err)
		}
	}
	wantWitnessBreak(t, verify(), "the witness is gone since line 3")
	if rep, err := Verify(context.Background(), dir, WithWitness(wdir)); err != nil {
		t.Fatal(err)
	} else {
		wantWitnessBreak(t, rep, "the witness is gone since line 3")
	}
	if _, err := AdoptWitness(context.Background(), dir, WithWitness(wdir)); err != nil {
		t.Fatal(err)
	}
	if rep := verify(); !rep.Intact() || !rep.Witness.Found {
		t.Errorf("after adopting: %+v", rep)
	}
}
