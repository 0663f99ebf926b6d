package audit

import (
	"context"
	"sync"
	"testing"
	"time"
)

// AppendNew must hold across processes' worth of concurrency: many
// appenders racing on one escalation record it once, and the chain stays
// intact.
func TestAppendNewOnceUnderParallelCalls(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	now := day
	dup := func(recorded []Entry, e Entry) bool {
		for _, r := range recorded {
			if r.Event == e.Event && r.Fields["phase"] == e.Fields["phase"] && e.Time.Sub(r.Time) < time.Minute {
				return true
			}
		}
		return false
	}
	entry := Entry{Event: PhaseEscalation, Fields: map[string]any{"type": "gate_blocked", "phase": "06-implementation", "codes": []string{"DES-GATE-BLOCKED"}}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A Log per goroutine: as separate hook processes, they share only the directory's file lock.
			l := mustOpen(t, dir, fixedClock(now))
			n, err := l.AppendNew(context.Background(), Query{Events: []EventType{PhaseEscalation}, Since: now.Add(-time.Minute)}, dup, entry, entry)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	if total != 1 {
		t.Errorf("appended %d escalations, want 1", total)
	}
	assertIntact(t, dir, 1)

	// A minute later it is recorded again; another phase at once.
	l := mustOpen(t, dir, fixedClock(now.Add(time.Minute)))
	other := Entry{Event: PhaseEscalation, Fields: map[string]any{"type": "gate_blocked", "phase": "07-testing", "codes": []string{"DES-GATE-BLOCKED"}}}
	n, err := l.AppendNew(context.Background(), Query{Events: []EventType{PhaseEscalation}, Since: now}, dup, entry, other)
	if err != nil || n != 2 {
		t.Errorf("a minute later: appended %d, %v; want 2", n, err)
	}
	assertIntact(t, dir, 3)
}
