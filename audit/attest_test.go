package audit

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

var attestDay = time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)

// forgeLine appends a line chained after the trail's last line, as any
// writer of the directory can: the chain does not say who wrote it.
func forgeLine(t *testing.T, dir string, fields map[string]any) {
	t.Helper()
	head, err := findHead(dir)
	if err != nil {
		t.Fatal(err)
	}
	body, err := encodeFields(fields)
	if err != nil {
		t.Fatal(err)
	}
	data := encodeLine(nil, attestDay, HookError, head.seq+1, head.hash, body)
	f, err := os.OpenFile(filepath.Join(dir, FileName(attestDay)), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
}

func readTrail(t *testing.T, l *Log) []Entry {
	t.Helper()
	es, err := l.Read(context.Background(), Query{})
	if err != nil {
		t.Fatal(err)
	}
	return es
}

func TestAttestations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "audit")
	file := filepath.Join(t.TempDir(), "state", "audit-attested")
	l := mustOpen(t, dir, fixedClock(attestDay), WithAttestations(file, true))
	if err := l.Append(ctx, hookError(map[string]any{"error": "one"}), hookError(map[string]any{"error": "two"})); err != nil {
		t.Fatal(err)
	}
	forgeLine(t, dir, map[string]any{"error": "forged"})
	if err := l.Append(ctx, hookError(map[string]any{"error": "three"})); err != nil {
		t.Fatal(err)
	}
	if rep, err := Verify(ctx, dir); err != nil || !rep.Intact() || rep.LastSeq != 4 {
		t.Fatalf("the forged line is chained as well as any: %+v %v", rep, err)
	}
	got := map[string]bool{}
	for _, e := range readTrail(t, l) {
		got[e.Fields["error"].(string)+"@"+strconv.FormatInt(e.Seq, 10)] = e.Attested
	}
	want := map[string]bool{"one@1": true, "two@2": true, "forged@3": false, "three@4": true}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s attested = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("attestation file: %v %v", fi, err)
	}

	// A line rewritten in place (same seq, other content) is not the
	// attested one.
	data, _ := os.ReadFile(filepath.Join(dir, FileName(attestDay)))
	os.WriteFile(filepath.Join(dir, FileName(attestDay)), bytes.Replace(data, []byte(`"one"`), []byte(`"uno"`), 1), 0o644)
	tampered := readTrail(t, mustOpen(t, dir, WithAttestations(file, true)))
	if len(tampered) != 4 || tampered[0].Attested || !tampered[1].Attested || !tampered[3].Attested {
		t.Fatalf("read after the rewrite of line 1: %+v", tampered)
	}

	// Without the option, or before any writer attested (no file), every
	// entry is attested; with an attestation file that holds none of the
	// lines, none is.
	for _, e := range readTrail(t, mustOpen(t, dir)) {
		if !e.Attested {
			t.Errorf("entry %d not attested by a Log without attestations", e.Seq)
		}
	}
	for _, e := range readTrail(t, mustOpen(t, dir, WithAttestations(filepath.Join(t.TempDir(), "none"), false))) {
		if !e.Attested {
			t.Errorf("entry %d not attested before any writer attested", e.Seq)
		}
	}
	empty := filepath.Join(t.TempDir(), "empty")
	os.WriteFile(empty, nil, 0o600)
	for _, e := range readTrail(t, mustOpen(t, dir, WithAttestations(empty, false))) {
		if e.Attested {
			t.Errorf("entry %d attested by an attestation file without it", e.Seq)
		}
	}
}

// A writer that cannot record its lines (a sandboxed process) still
// appends; its lines are not attested.
func TestAppendWithoutAttestationsWritable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "audit")
	// A file where the attestations' directory would be: no process can
	// create it, root included.
	ro := filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(ro, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	l := mustOpen(t, dir, fixedClock(attestDay), WithAttestations(filepath.Join(ro, "audit-attested"), true))
	if err := l.Append(ctx, hookError(map[string]any{"error": "sandboxed"})); err != nil {
		t.Fatal(err)
	}
	if es := readTrail(t, l); len(es) != 1 {
		t.Errorf("entries: %+v", es)
	}
}

// A Log that does not start attestations records nothing until one that
// does has: a trail made by hand is read as it always was.
func TestAttestationsStartedOnlyByTheStarter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "audit")
	file := filepath.Join(t.TempDir(), "state", "audit-attested")
	cli := mustOpen(t, dir, fixedClock(attestDay), WithAttestations(file, false))
	if err := cli.Append(ctx, hookError(map[string]any{"error": "before"})); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Fatalf("a Log without start created the attestations: %v", err)
	}
	hook := mustOpen(t, dir, fixedClock(attestDay), WithAttestations(file, true))
	if err := hook.Append(ctx, hookError(map[string]any{"error": "hook"})); err != nil {
		t.Fatal(err)
	}
	if err := cli.Append(ctx, hookError(map[string]any{"error": "after"})); err != nil {
		t.Fatal(err)
	}
	var got []bool
	for _, e := range readTrail(t, cli) {
		got = append(got, e.Attested)
	}
	if fmt.Sprint(got) != "[false true true]" {
		t.Errorf("attested = %v, want [false true true]", got)
	}
}

// A line DES attested, copied byte for byte to a later place in the trail
// (after lines DES wrote after it), is attested only where DES wrote it;
// a copy in a later day file no more than one in the same file.
func TestAttestationsReplayedLineNotAttested(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "audit")
	file := filepath.Join(t.TempDir(), "state", "audit-attested")
	l := mustOpen(t, dir, fixedClock(attestDay), WithAttestations(file, true))
	if err := l.Append(ctx, hookError(map[string]any{"error": "resolved"}), hookError(map[string]any{"error": "failed"})); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName(attestDay))
	data, _ := os.ReadFile(path)
	first := data[:bytes.IndexByte(data, '\n')+1]
	os.WriteFile(path, append(data, first...), 0o644)
	os.WriteFile(filepath.Join(dir, FileName(attestDay.AddDate(0, 0, 3))), first, 0o644)
	var got []string
	for _, e := range readTrail(t, l) {
		got = append(got, fmt.Sprintf("%s@%d:%v", e.Fields["error"], e.Seq, e.Attested))
	}
	if want := "[resolved@1:true failed@2:true resolved@1:false resolved@1:false]"; fmt.Sprint(got) != want {
		t.Errorf("read %v, want %s", got, want)
	}
}

// The starter starts the attestations when it first reads, too: a line
// chained in before its first append is not read as from a trail no
// writer attests.
func TestAttestationsStartedByTheStartersRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "audit")
	file := filepath.Join(t.TempDir(), "state", "audit-attested")
	if err := mustOpen(t, dir, fixedClock(attestDay)).Append(ctx, hookError(map[string]any{"error": "before"})); err != nil {
		t.Fatal(err)
	}
	forgeLine(t, dir, map[string]any{"error": "forged"})
	hook := mustOpen(t, dir, fixedClock(attestDay), WithAttestations(file, true))
	for _, e := range readTrail(t, hook) {
		if e.Attested {
			t.Errorf("the starter's first read attested %v", e.Fields)
		}
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("the starter's read did not start the attestations: %v", err)
	}
	if err := hook.Append(ctx, hookError(map[string]any{"error": "hook"})); err != nil {
		t.Fatal(err)
	}
	var got []bool
	for _, e := range readTrail(t, mustOpen(t, dir, WithAttestations(file, false))) {
		got = append(got, e.Attested)
	}
	if fmt.Sprint(got) != "[false false true]" {
		t.Errorf("attested = %v, want [false false true]", got)
	}
}

// A line chained in with a low seq sets back the seqs DES writes next: its
// later lines are still attested (the order they were recorded in, not
// their seqs, says where they stand), and a copy of an earlier one still
// is not.
func TestAttestationsAfterSeqsSetBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "audit")
	file := filepath.Join(t.TempDir(), "state", "audit-attested")
	l := mustOpen(t, dir, fixedClock(attestDay), WithAttestations(file, true))
	if err := l.Append(ctx, hookError(map[string]any{"error": "one"}), hookError(map[string]any{"error": "two"}), hookError(map[string]any{"error": "three"})); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, FileName(attestDay))
	data, _ := os.ReadFile(path)
	first := data[:bytes.IndexByte(data, '\n')+1]
	body, _ := encodeFields(map[string]any{"error": "set back"})
	os.WriteFile(path, append(data, encodeLine(nil, attestDay, HookError, 1, zeroHash, body)...), 0o644)
	if err := l.Append(ctx, hookError(map[string]any{"error": "resolved"})); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.Write(first)
	f.Close()
	var got []string
	for _, e := range readTrail(t, l) {
		got = append(got, fmt.Sprintf("%s@%d:%v", e.Fields["error"], e.Seq, e.Attested))
	}
	if want := "[one@1:true two@2:true three@3:true set back@1:false resolved@2:true one@1:false]"; fmt.Sprint(got) != want {
		t.Errorf("read %v, want %s", got, want)
	}
}

// The attestation file is read from its end only as far back as the lines
// asked about: a long history (here 3,000 lines, 200 KB of records) is read
// in growing pieces, and lines at either end are attested alike.
func TestAttestationsOfALongHistory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "audit")
	file := filepath.Join(t.TempDir(), "state", "audit-attested")
	l := mustOpen(t, dir, fixedClock(attestDay), WithAttestations(file, true))
	batch := make([]Entry, 100)
	for i := range batch {
		batch[i] = hookError(map[string]any{"error": "x"})
	}
	for range 30 {
		if err := l.Append(ctx, batch...); err != nil {
			t.Fatal(err)
		}
	}
	forgeLine(t, dir, map[string]any{"error": "forged"})
	if err := l.Append(ctx, hookError(map[string]any{"error": "last"})); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(file); err != nil || fi.Size() <= 64<<10 {
		t.Fatalf("attestation file: %v %v, want more than the first piece read", fi, err)
	}
	all := readTrail(t, l)
	if len(all) != 3002 {
		t.Fatalf("%d entries", len(all))
	}
	for _, e := range all {
		if want := e.Fields["error"] != "forged"; e.Attested != want {
			t.Errorf("entry %d (%v) attested = %v, want %v", e.Seq, e.Fields["error"], e.Attested, want)
		}
	}
}
