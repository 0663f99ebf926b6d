package audit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// anchored is a trail of n lines and the head recorded after each append,
// as the decision log and the git notes record it.
func anchored(t *testing.T, n int) (dir string, anchors []Anchor) {
	t.Helper()
	dir = filepath.Join(t.TempDir(), "audit")
	for i := range n {
		appendN(t, dir, "", 1, "orig"+string(rune('a'+i)))
		a, ok := Head(dir, time.Now())
		if !ok {
			t.Fatalf("no head after append %d", i+1)
		}
		a.Source = "anchor " + string(rune('a'+i))
		anchors = append(anchors, a)
	}
	return dir, anchors
}

func verifyAnchored(t *testing.T, dir string, anchors []Anchor, opts ...Option) Report {
	t.Helper()
	rep, err := Verify(context.Background(), dir, append(opts, WithAnchors(anchors))...)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func wantAnchorBreak(t *testing.T, rep Report, msg string) {
	t.Helper()
	if rep.Intact() || rep.Break.Kind != BreakAnchor || !strings.Contains(rep.Break.Msg, msg) {
		t.Errorf("report = %+v (break %v), want an anchor break saying %q", rep, rep.Break, msg)
	}
}

func TestHeadIsTheLastLine(t *testing.T) {
	t.Parallel()
	dir, anchors := anchored(t, 3)
	for i, a := range anchors {
		if a.Seq != int64(i+1) || !a.Valid() || !a.Of(dir) {
			t.Errorf("anchor %d = %+v", i, a)
		}
	}
	// No trail, no head.
	if a, ok := Head(filepath.Join(t.TempDir(), "none"), time.Now()); ok {
		t.Errorf("head of no trail: %+v", a)
	}
	// A head record that names another line's seq is no head.
	rec, _, _, _ := readHead(dir)
	forged := fmt.Sprintf(`{"seq":9,"sha256":"%s","file":"%s","size":%d}`+"\n", rec.SHA256, rec.File, rec.Size)
	os.WriteFile(filepath.Join(dir, HeadFile), []byte(forged), 0o644)
	if a, ok := Head(dir, time.Now()); ok {
		t.Errorf("head of a record naming seq 9 at line 3: %+v", a)
	}
	os.WriteFile(filepath.Join(dir, HeadFile), []byte(fmt.Sprintf(`{"seq":3,"sha256":"%s","file":"%s","size":%d}`+"\n", rec.SHA256, rec.File, rec.Size)), 0o644)
	if _, ok := Head(dir, time.Now()); !ok {
		t.Error("no head after the record was put back")
	}
	// A head record the day file does not back is no head.
	data, _ := os.ReadFile(filepath.Join(dir, rec.File))
	os.WriteFile(filepath.Join(dir, rec.File), []byte(strings.Replace(string(data), "origc", "origx", 1)), 0o644)
	if a, ok := Head(dir, time.Now()); ok {
		t.Errorf("head of an edited last line: %+v", a)
	}
}

func TestAnchorsHonestTrail(t *testing.T) {
	t.Parallel()
	dir, anchors := anchored(t, 4)
	appendN(t, dir, "", 2, "later") // lines after the last anchor are fine
	rep := verifyAnchored(t, dir, anchors)
	if !rep.Intact() || rep.Anchors.Checked != 4 || rep.Anchors.Seq != 4 {
		t.Errorf("report = %+v, break %v", rep, rep.Break)
	}
	// Anchors of another trail are left out.
	other := anchors[0]
	other.Dir, other.SHA256 = "/elsewhere/.des/audit", strings.Repeat("0", 64)
	// And so are those of the same path on another machine (git notes
	// fetched from a colleague's clone).
	elsewhere := anchors[1]
	elsewhere.Host, elsewhere.SHA256 = hostname()+"-other", strings.Repeat("0", 64)
	rep = verifyAnchored(t, dir, append(anchors, other, elsewhere))
	if !rep.Intact() || rep.Anchors.Checked != 4 || anchors[0].Host != hostname() {
		t.Errorf("an anchor of another trail: %+v, break %v", rep, rep.Break)
	}
}

// The attack the anchors are for: no witness, no attestations (the state
// directory removed), and a trail rewritten into a valid chain.
func TestAnchorsCatchRewrittenTrails(t *testing.T) {
	t.Parallel()
	t.Run("rewritten from line 1", func(t *testing.T) {
		dir, anchors := anchored(t, 3)
		os.RemoveAll(dir)
		appendN(t, dir, "", 5, "forged")
		if rep, err := Verify(context.Background(), dir); err != nil || !rep.Intact() {
			t.Fatalf("without anchors the rewritten trail verifies: %+v %v", rep, err)
		}
		wantAnchorBreak(t, verifyAnchored(t, dir, anchors), "seq 1 hashes to")
	})
	t.Run("deleted and started again, shorter", func(t *testing.T) {
		dir, anchors := anchored(t, 3)
		os.RemoveAll(dir)
		appendN(t, dir, "", 1, "again")
		rep := verifyAnchored(t, dir, anchors[1:])
		wantAnchorBreak(t, rep, "the trail ends at seq 1, but anchor c records seq 3")
	})
	t.Run("deleted", func(t *testing.T) {
		dir, anchors := anchored(t, 3)
		os.RemoveAll(dir)
		wantAnchorBreak(t, verifyAnchored(t, dir, anchors), "the audit directory is gone, but anchor c records seq 3")
		os.MkdirAll(dir, 0o755)
		wantAnchorBreak(t, verifyAnchored(t, dir, anchors), "the trail holds no chained line, but anchor c records seq 3")
	})
}

// A break the chain or the witness finds is named as before: the anchors
// come last.
func TestAnchorsAfterTheWitness(t *testing.T) {
	t.Parallel()
	dir, wdir := witnessed(t, 3)
	a, ok := Head(dir, time.Now())
	if !ok {
		t.Fatal("no head")
	}
	a.Source = "a note"
	os.RemoveAll(dir)
	appendN(t, dir, "", 3, "forged")
	rep := verifyAnchored(t, dir, []Anchor{a}, WithWitness(wdir))
	wantWitnessBreak(t, rep, "rewritten")
}

// A person who rewrote the trail adopts it: the anchors recorded before
// are of the trail the person replaced.
func TestAdoptionSupersedesAnchors(t *testing.T) {
	t.Parallel()
	dir, wdir := witnessed(t, 3)
	a, _ := Head(dir, time.Now().Add(-time.Second))
	a.Source = "a note"
	os.RemoveAll(dir)
	appendN(t, dir, "", 2, "redone")
	if _, err := AdoptWitness(context.Background(), dir, WithWitness(wdir)); err != nil {
		t.Fatal(err)
	}
	appendN(t, dir, wdir, 1, "after") // the witness moves on, its adoption with it
	rep := verifyAnchored(t, dir, []Anchor{a}, WithWitness(wdir))
	if !rep.Intact() || rep.Anchors.Superseded != 1 || rep.Anchors.Checked != 0 {
		t.Errorf("report = %+v, break %v", rep, rep.Break)
	}
	// With the state directory gone, the adoption goes with it: the anchor
	// is a finding again, until a person adopts once more.
	os.RemoveAll(wdir)
	wantAnchorBreak(t, verifyAnchored(t, dir, []Anchor{a}, WithWitness(wdir)), "a note records")
}
