package audit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// gate1Entry is a TASK_INVOCATION_VALIDATED entry as Gate 1 writes it.
func gate1Entry() Entry {
	return Entry{Event: TaskInvocationValidated, Fields: map[string]any{
		"step_file": "docs/feature/shop/steps/01-01.json", "tool_use_id": "toolu_01ABCDEFGHIJKLMNOPQRSTUV", "session_id": "0b6c7f5e-3f0c-4a55-9a43-7d8f2c1e9a10",
		"origin": "execute-step", "level": "full", "codes": []string{}, "duration_ms": int64(2),
	}}
}

// BenchmarkAppend appends one Gate 1 entry, without fsync, to a trail of 90
// day files of 1,000 lines each: lock, head of the chain read backwards from
// the newest file, schema, encoding, hash, write and head record.
func BenchmarkAppend(b *testing.B) { benchAppend(b) }

// BenchmarkAppendWitnessed is BenchmarkAppend with a witness: the witness
// read, checked and replaced by rename on every append.
func BenchmarkAppendWitnessed(b *testing.B) { benchAppend(b, WithWitness(b.TempDir())) }

// BenchmarkAppendInProject is BenchmarkAppendWitnessed as des.Engine and
// the hook append: the trail in .des/audit of a project, opened from the
// project root (WithRoot) on every append.
func BenchmarkAppendInProject(b *testing.B) {
	root := b.TempDir()
	benchAppendIn(b, filepath.Join(root, ".des", "audit"), WithWitness(b.TempDir()), WithRoot(root))
}

func benchAppend(b *testing.B, opts ...Option) { benchAppendIn(b, b.TempDir(), opts...) }

func benchAppendIn(b *testing.B, dir string, opts ...Option) {
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	seedTrail(b, dir, now.AddDate(0, 0, -89), 90, 1000)
	l := mustOpen(b, dir, append([]Option{fixedClock(now)}, opts...)...)
	ctx := context.Background()
	e := gate1Entry()
	if err := l.Append(ctx, e); err != nil { // schema compiled once, as in a hook's first append
		b.Fatal(err)
	}
	b.ReportAllocs()
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		if err := l.Append(ctx, e); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
	}
	reportMedian(b, took)
}

// reportMedian adds the median of the timed operations as "median-ns/op":
// the mean (ns/op) moves with the odd slow write on a shared machine.
func reportMedian(b *testing.B, took []time.Duration) {
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "median-ns/op")
}

// BenchmarkAppendFsync is BenchmarkAppend with WithFsync(true): the day
// file and the head record are synced.
func BenchmarkAppendFsync(b *testing.B) {
	dir := b.TempDir()
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	seedTrail(b, dir, now, 1, 10)
	l := mustOpen(b, dir, fixedClock(now), WithFsync(true))
	for b.Loop() {
		if err := l.Append(context.Background(), gate1Entry()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFirstAppend is a hook process's first append to a trail: the
// event's schema (and the one all events share) compiles first.
func BenchmarkFirstAppend(b *testing.B) {
	dir := b.TempDir()
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	seedTrail(b, dir, now, 1, 10)
	l := mustOpen(b, dir, fixedClock(now))
	b.Cleanup(func() { eventSchemas = sync.OnceValue(newEventSchemas) })
	for b.Loop() {
		eventSchemas = sync.OnceValue(newEventSchemas)
		if err := l.Append(context.Background(), gate1Entry()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerify verifies a 100,000-line trail of 100 day files.
func BenchmarkVerify(b *testing.B) {
	dir := b.TempDir()
	seedTrail(b, dir, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 100, 1000)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		rep, err := Verify(ctx, dir)
		if err != nil || !rep.Intact() || rep.Lines != 100_000 {
			b.Fatalf("Verify = %+v, %v", rep, err)
		}
	}
}

// BenchmarkRead reads the SUBAGENT_STOP_VALIDATION and STALE_RESOLUTION
// entries of a 100,000-line trail, as Gate 3 does once for all step files.
func BenchmarkRead(b *testing.B) {
	dir := b.TempDir()
	seedTrail(b, dir, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 100, 1000)
	l := mustOpen(b, dir)
	ctx := context.Background()
	q := Query{Events: []EventType{SubagentStopValidation, StaleResolution}}
	b.ReportAllocs()
	for b.Loop() {
		es, err := l.Read(ctx, q)
		if err != nil || len(es) != 10_000 {
			b.Fatalf("Read = %d entries, %v", len(es), err)
		}
	}
}

// seedTrail writes days day files from first with perDay chained lines
// each, one in ten a SUBAGENT_STOP_VALIDATION, through one Append per day.
func seedTrail(tb testing.TB, dir string, first time.Time, days, perDay int) {
	tb.Helper()
	l := mustOpen(tb, dir)
	for d := range days {
		t := first.AddDate(0, 0, d)
		batch := make([]Entry, perDay)
		for i := range batch {
			batch[i] = gate1Entry()
			if i%10 == 0 {
				batch[i] = Entry{Event: SubagentStopValidation, Fields: map[string]any{
					"step_file": fmt.Sprintf("steps/%02d-%02d.json", d%30, i%50), "outcome": "PASS", "codes": []string{}, "action": "none",
					"agent_id": "a1b2c3", "agent_type": "software-crafter", "duration_ms": 1200,
				}}
			}
			batch[i].Time = t.Add(time.Duration(i) * time.Second)
		}
		if err := l.Append(context.Background(), batch...); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, FileName(first))); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkHead reads the trail's head as the decision log records it with
// every event: the head record, and the line it names read back and
// hashed.
func BenchmarkHead(b *testing.B) {
	dir := b.TempDir()
	l, err := Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	for range 100 {
		if err := l.Append(context.Background(), gate1Entry()); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if _, ok := Head(dir, time.Time{}); !ok {
			b.Fatal("no head")
		}
	}
}
