package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// testTrail is a trail of three day files of four lines each, seq 1 to 12:
// file i (0-based) line j (1-based) has seq 4*i+j and "error" "d<i+1>-l<j>".
type testTrail struct {
	dir   string
	files []string
}

var trailDay = time.Date(2026, 3, 10, 9, 0, 0, 0, time.UTC)

func newTestTrail(t *testing.T) testTrail {
	t.Helper()
	dir := t.TempDir()
	l := mustOpen(t, dir)
	tr := testTrail{dir: dir}
	for d := range 3 {
		day := trailDay.AddDate(0, 0, d)
		for j := 1; j <= 4; j++ {
			e := hookError(map[string]any{"error": fmt.Sprintf("d%d-l%d", d+1, j)})
			e.Time = day.Add(time.Duration(j) * time.Minute)
			if err := l.Append(context.Background(), e); err != nil {
				t.Fatal(err)
			}
		}
		tr.files = append(tr.files, filepath.Join(dir, FileName(day)))
	}
	return tr
}

// lines returns the lines of file i, each with its newline.
func (tr testTrail) lines(t *testing.T, i int) []string {
	t.Helper()
	data, err := os.ReadFile(tr.files[i])
	if err != nil {
		t.Fatal(err)
	}
	ls := strings.SplitAfter(string(data), "\n")
	return ls[:len(ls)-1] // the empty string after the last newline
}

func (tr testTrail) write(t *testing.T, i int, lines []string) {
	t.Helper()
	if err := os.WriteFile(tr.files[i], []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// edit replaces line j (1-based) of file i by f(line).
func (tr testTrail) edit(t *testing.T, i, j int, f func(string) string) {
	t.Helper()
	ls := tr.lines(t, i)
	ls[j-1] = f(ls[j-1])
	tr.write(t, i, ls)
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func mustVerify(t *testing.T, dir string) Report {
	t.Helper()
	rep, err := Verify(context.Background(), dir)
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return rep
}

func TestVerifyIntact(t *testing.T) {
	t.Parallel()
	tr := newTestTrail(t)
	rep := mustVerify(t, tr.dir)
	if diff := cmp.Diff(Report{Files: 3, Lines: 12, LastSeq: 12}, rep); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	// The chain as documented: seq from 1, prev the SHA-256 of the line
	// before with its newline, 64 zeros first; keys in a fixed order.
	prev, seq := zeroHash, 1
	for i := range tr.files {
		for _, ln := range tr.lines(t, i) {
			want := fmt.Sprintf(`"event":"HOOK_ERROR","seq":%d,"prev":"%s","error":"d`, seq, prev)
			if !strings.HasPrefix(ln, `{"timestamp":"`) || !strings.Contains(ln, want) {
				t.Fatalf("line %q lacks %s", ln, want)
			}
			prev, seq = sha(ln), seq+1
		}
	}
	head, err := os.ReadFile(filepath.Join(tr.dir, HeadFile))
	if err != nil {
		t.Fatal(err)
	}
	size := len(strings.Join(tr.lines(t, 2), ""))
	if want := fmt.Sprintf(`{"seq":12,"sha256":"%s","file":"%s","size":%d}`+"\n", prev, filepath.Base(tr.files[2]), size); string(head) != want {
		t.Errorf("head record = %s, want %s", head, want)
	}
}

func TestVerifyFindsTampering(t *testing.T) {
	t.Parallel()
	forge := func(seq int, prev string) string {
		return string(encodeLine(nil, trailDay, HookError, int64(seq), prev, []byte(`,"error":"forged"`)))
	}
	for _, tc := range []struct {
		name   string
		tamper func(t *testing.T, tr testTrail)
		kind   BreakKind
		file   int // index into tr.files; -1 for the head record
		line   int
	}{
		{"edit a field", func(t *testing.T, tr testTrail) {
			tr.edit(t, 1, 2, func(s string) string { return strings.Replace(s, "d2-l2", "d2-lX", 1) })
		}, BreakEdited, 1, 2},
		{"edit the first line", func(t *testing.T, tr testTrail) {
			tr.edit(t, 0, 1, func(s string) string { return strings.Replace(s, "d1-l1", "d1-lX", 1) })
		}, BreakEdited, 0, 1},
		{"edit the last line of a file", func(t *testing.T, tr testTrail) {
			tr.edit(t, 0, 4, func(s string) string { return strings.Replace(s, "09:04:00Z", "09:05:00Z", 1) })
		}, BreakEdited, 0, 4},
		{"edit the line before the last", func(t *testing.T, tr testTrail) {
			tr.edit(t, 2, 3, func(s string) string { return strings.Replace(s, "d3-l3", "d3-lX", 1) })
		}, BreakEdited, 2, 3},
		{"edit the last line", func(t *testing.T, tr testTrail) {
			tr.edit(t, 2, 4, func(s string) string { return strings.Replace(s, "d3-l4", "d3-lX", 1) })
		}, BreakEdited, 2, 4},
		{"edit a prev", func(t *testing.T, tr testTrail) {
			tr.edit(t, 1, 2, func(s string) string { return strings.Replace(s, `"prev":"`, `"prev":"1`, 1)[:len(s)] + "\n" })
		}, BreakEdited, 1, 2},
		{"edit a seq", func(t *testing.T, tr testTrail) {
			tr.edit(t, 1, 2, func(s string) string { return strings.Replace(s, `"seq":6,`, `"seq":60,`, 1) })
		}, BreakEdited, 1, 2},
		{"remove a line", func(t *testing.T, tr testTrail) {
			tr.write(t, 1, slices.Delete(tr.lines(t, 1), 1, 2))
		}, BreakRemoved, 1, 2},
		{"remove the first line of a file", func(t *testing.T, tr testTrail) {
			tr.write(t, 1, tr.lines(t, 1)[1:])
		}, BreakMissingFile, 1, 1},
		{"remove a day file in the middle", func(t *testing.T, tr testTrail) {
			mustRemove(t, tr.files[1])
		}, BreakMissingFile, 2, 1},
		{"remove the oldest day file", func(t *testing.T, tr testTrail) {
			mustRemove(t, tr.files[0])
		}, BreakMissingFile, 1, 1},
		{"remove the first line", func(t *testing.T, tr testTrail) {
			tr.write(t, 0, tr.lines(t, 0)[1:])
		}, BreakMissingFile, 0, 1},
		{"cut the last line", func(t *testing.T, tr testTrail) {
			tr.write(t, 2, tr.lines(t, 2)[:3])
		}, BreakTruncated, 2, 4},
		{"remove the newest day file", func(t *testing.T, tr testTrail) {
			mustRemove(t, tr.files[2])
		}, BreakTruncated, 1, 5},
		{"insert an unchained line", func(t *testing.T, tr testTrail) {
			ls := tr.lines(t, 1)
			tr.write(t, 1, slices.Insert(ls, 2, `{"timestamp":"2026-03-11T09:02:30Z","event":"HOOK_ERROR","error":"forged"}`+"\n"))
		}, BreakInserted, 1, 3},
		{"insert a line that continues the chain", func(t *testing.T, tr testTrail) {
			ls := tr.lines(t, 1)
			tr.write(t, 1, slices.Insert(ls, 2, forge(7, sha(ls[1]))))
		}, BreakInserted, 1, 3},
		{"insert a line with a stray seq", func(t *testing.T, tr testTrail) {
			ls := tr.lines(t, 1)
			tr.write(t, 1, slices.Insert(ls, 2, forge(99, zeroHash)))
		}, BreakInserted, 1, 3},
		{"insert a line with the next seq and a wrong prev", func(t *testing.T, tr testTrail) {
			ls := tr.lines(t, 1)
			tr.write(t, 1, slices.Insert(ls, 2, forge(7, zeroHash)))
		}, BreakInserted, 1, 3},
		{"duplicate a line", func(t *testing.T, tr testTrail) {
			ls := tr.lines(t, 1)
			tr.write(t, 1, slices.Insert(ls, 2, ls[1]))
		}, BreakInserted, 1, 3},
		{"append a line after the end", func(t *testing.T, tr testTrail) {
			ls := tr.lines(t, 2)
			tr.write(t, 2, append(ls, forge(20, zeroHash)))
		}, BreakInserted, 2, 5},
		{"insert unchained lines before the chain", func(t *testing.T, tr testTrail) {
			ls := tr.lines(t, 0)
			tr.write(t, 0, slices.Insert(ls, 0, `{"timestamp":"2026-03-10T08:00:00Z","event":"HOOK_ERROR","error":"forged"}`+"\n"))
		}, BreakInserted, 0, 1},
		{"swap two lines", func(t *testing.T, tr testTrail) {
			ls := tr.lines(t, 1)
			ls[1], ls[2] = ls[2], ls[1]
			tr.write(t, 1, ls)
		}, BreakReordered, 1, 2},
		{"swap the last two lines", func(t *testing.T, tr testTrail) {
			ls := tr.lines(t, 2)
			ls[2], ls[3] = ls[3], ls[2]
			tr.write(t, 2, ls)
		}, BreakReordered, 2, 3},
		{"move a line to a later file", func(t *testing.T, tr testTrail) {
			first := tr.lines(t, 0)
			moved := first[1]
			tr.write(t, 0, slices.Delete(first, 1, 2))
			tr.write(t, 2, append(tr.lines(t, 2), moved))
		}, BreakReordered, 0, 2},
		{"torn last line", func(t *testing.T, tr testTrail) {
			tr.edit(t, 2, 4, func(s string) string { return s[:len(s)-10] })
		}, BreakTorn, 2, 4},
		{"JSON cut short", func(t *testing.T, tr testTrail) {
			tr.edit(t, 1, 2, func(s string) string { return s[:len(s)/2] + "\n" })
		}, BreakTorn, 1, 2},
		{"not JSON", func(t *testing.T, tr testTrail) {
			tr.edit(t, 1, 2, func(string) string { return "{oops}\n" })
		}, BreakMalformed, 1, 2},
		{"empty line", func(t *testing.T, tr testTrail) {
			tr.write(t, 1, slices.Insert(tr.lines(t, 1), 1, "\n"))
		}, BreakMalformed, 1, 2},
		{"no event", func(t *testing.T, tr testTrail) {
			tr.edit(t, 1, 2, func(s string) string { return strings.Replace(s, `"event":"HOOK_ERROR",`, "", 1) })
		}, BreakMalformed, 1, 2},
		{"head record removed", func(t *testing.T, tr testTrail) {
			mustRemove(t, filepath.Join(tr.dir, HeadFile))
		}, BreakHead, -1, 0},
		{"head record garbled", func(t *testing.T, tr testTrail) {
			if err := os.WriteFile(filepath.Join(tr.dir, HeadFile), []byte("{\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, BreakHead, -1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTestTrail(t)
			tc.tamper(t, tr)
			rep := mustVerify(t, tr.dir)
			if rep.Intact() {
				t.Fatalf("intact after tampering: %+v", rep)
			}
			b := rep.Break
			wantFile := filepath.Join(tr.dir, HeadFile)
			if tc.file >= 0 {
				wantFile = tr.files[tc.file]
			}
			if b.Kind != tc.kind || b.File != wantFile || b.Line != tc.line {
				t.Errorf("break = %v\nwant %s at %s:%d", b, tc.kind, filepath.Base(wantFile), tc.line)
			}
			if !strings.HasPrefix(b.Error(), wantFile) || !strings.Contains(b.Error(), string(tc.kind)) || b.Msg == "" {
				t.Errorf("Error() = %q", b.Error())
			}
		})
	}
}

func mustRemove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyEmptyAndMissing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if rep := mustVerify(t, dir); !rep.Intact() || rep.Lines != 0 || rep.Files != 0 {
		t.Errorf("empty directory: %+v, want intact and empty", rep)
	}
	// An empty day file is intact too.
	if err := os.WriteFile(filepath.Join(dir, FileName(trailDay)), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if rep := mustVerify(t, dir); !rep.Intact() || rep.Files != 1 {
		t.Errorf("empty day file: %+v, want intact", rep)
	}
	// A head record without lines: the whole trail was removed.
	if err := writeHeadAt(dir, headRecord{Seq: 3, SHA256: zeroHash, File: FileName(trailDay)}, -1, false); err != nil {
		t.Fatal(err)
	}
	if rep := mustVerify(t, dir); rep.Intact() || rep.Break.Kind != BreakTruncated {
		t.Errorf("head record without lines: %+v, want truncated", rep)
	}
	missing := filepath.Join(dir, "nope")
	if _, err := Verify(context.Background(), missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing directory: err = %v, want ErrNotExist", err)
	}
	if _, err := Verify(context.Background(), filepath.Join(dir, FileName(trailDay))); err == nil {
		t.Error("a file as the directory: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Verify(ctx, newTestTrail(t).dir); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled: err = %v, want context.Canceled", err)
	}
}

// Lines written before the chain existed may open the trail; the first
// chained line covers the last of them.
func TestVerifyUnchainedStart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	legacy := `{"timestamp":"2026-03-09T10:00:00Z","event":"PHASE_STARTED","phase":"RED"}` + "\n" +
		`{"timestamp":"2026-03-09T10:01:00Z","event":"HOOK_ERROR","error":"old"}` + "\n"
	old := filepath.Join(dir, "audit-2026-03-09.log")
	if err := os.WriteFile(old, []byte(legacy), 0o644); err != nil {
		t.Fatal(err)
	}
	if rep := mustVerify(t, dir); !rep.Intact() || rep.Unchained != 2 {
		t.Errorf("unchained trail: %+v, want intact, 2 unchained", rep)
	}
	l := mustOpen(t, dir, fixedClock(trailDay))
	if err := l.Append(context.Background(), hookError(nil), hookError(nil)); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, FileName(trailDay)))
	if err != nil {
		t.Fatal(err)
	}
	lastLegacy := legacy[strings.Index(legacy, "\n")+1:]
	if want := `"seq":1,"prev":"` + sha(lastLegacy) + `"`; !strings.Contains(string(data), want) {
		t.Errorf("first chained line %q lacks %s", data, want)
	}
	if diff := cmp.Diff(Report{Files: 2, Lines: 4, Unchained: 2, LastSeq: 2}, mustVerify(t, dir)); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	// Changing the last unchained line is found; so is an unchained line
	// after the chain started.
	if err := os.WriteFile(old, []byte(strings.Replace(legacy, "old", "new", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if rep := mustVerify(t, dir); rep.Intact() || rep.Break.Kind != BreakEdited || rep.Break.Line != 2 {
		t.Errorf("edited unchained line: %+v", rep.Break)
	}
}

// Lines in Append's exact form are read from their start; every other form
// through encoding/json. Both must judge a line alike.
func TestParseVlineForms(t *testing.T) {
	t.Parallel()
	h := strings.Repeat("ab", 32)
	for _, tc := range []struct {
		line    string
		fast    bool
		chained bool
		seq     int64
		bad     BreakKind
	}{
		{`{"timestamp":"2026-03-14T15:09:26Z","event":"HOOK_ERROR","seq":7,"prev":"` + h + `","error":"e"}`, true, true, 7, ""},
		{`{"timestamp":"2026-03-14T15:09:26Z","event":"HOOK_ERROR","seq":7,"prev":"` + h + `"}`, true, true, 7, ""},
		{`{"timestamp":"2026-03-14T15:09:26Z","event":"HOOK_ERROR","seq":07,"prev":"` + h + `"}`, false, false, 0, BreakMalformed},
		{`{"timestamp":"2026-03-14T15:09:26Z","event":"HOOK_ERROR","seq":0,"prev":"` + h + `"}`, false, false, 0, BreakMalformed},
		{`{"timestamp":"2026-03-14T15:09:26Z","event":"HOOK_ERROR","seq":7,"prev":"` + h + `","error":}`, false, false, 0, BreakMalformed},
		{`{"timestamp":"2026-03-14T15:09:26Z","event":"HOOK_ERROR","seq":7,"prev":"` + h + `","error":"e"`, false, false, 0, BreakTorn},
		{`{"timestamp":"yesterday","event":"HOOK_ERROR","seq":7,"prev":"` + h + `"}`, false, false, 0, BreakMalformed},
		{`{"timestamp":"2026-03-14T15:09:26Z","event":"","seq":7,"prev":"` + h + `"}`, false, false, 0, BreakMalformed},
		{`{"timestamp": "2026-03-14T15:09:26Z", "event": "HOOK_ERROR", "seq": 7, "prev": "` + h + `"}`, false, true, 7, ""},
		{`{"event":"HOOK_ERROR","timestamp":"2026-03-14T15:09:26Z","prev":"` + strings.ToUpper(h) + `","seq":7}`, false, true, 7, ""},
		{`{"timestamp":"2026-03-14T15:09:26Z","event":"HOOK_ERROR","seq":7}`, false, false, 0, BreakMalformed},
		{`{"timestamp":"2026-03-14T15:09:26Z","event":"HOOK_ERROR"}`, false, false, 0, ""},
	} {
		var fast vline
		if got := parseWritten(&fast, []byte(tc.line)); got != tc.fast {
			t.Errorf("parseWritten(%s) = %v, want %v", tc.line, got, tc.fast)
		}
		var l vline
		parseVline(&l, []byte(tc.line))
		if l.chained != tc.chained || l.seq != tc.seq || l.bad != tc.bad {
			t.Errorf("parseVline(%s) = chained %v seq %d bad %q, want %v %d %q", tc.line, l.chained, l.seq, l.bad, tc.chained, tc.seq, tc.bad)
		}
		if l.chained && l.prevText() != h && l.prevText() != strings.ToUpper(h) {
			t.Errorf("parseVline(%s): prev %s", tc.line, l.prevText())
		}
		if l.chained && strings.Contains(tc.line, h) != l.prevOK {
			t.Errorf("parseVline(%s): prevOK %v", tc.line, l.prevOK)
		}
	}
}
