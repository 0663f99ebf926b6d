package testenv

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

func TestLongFollowsTheSwitch(t *testing.T) {
	for _, c := range []struct {
		value string
		long  bool
	}{{"1", !testing.Short()}, {"", false}, {"0", false}, {"yes", false}} {
		t.Setenv(Var, c.value)
		if got := IsLong(); got != c.long {
			t.Errorf("%s=%q: IsLong() = %v, want %v", Var, c.value, got, c.long)
		}
		if got := Pick(3, 30); got != map[bool]int{false: 3, true: 30}[c.long] {
			t.Errorf("%s=%q: Pick(3, 30) = %d", Var, c.value, got)
		}
		ran := false
		t.Run("Long", func(t *testing.T) {
			Long(t)
			ran = true
		})
		if ran != c.long {
			t.Errorf("%s=%q: a long test ran = %v, want %v", Var, c.value, ran, c.long)
		}
	}
}

func TestMeanwhileRunsUntilStopped(t *testing.T) {
	var runs atomic.Int64
	stop := Meanwhile(t, func() { runs.Add(1) })
	for runs.Load() < 3 {
		runtime.Gosched()
	}
	stop()
	n := runs.Load()
	stop() // again: nothing more to wait for
	time.Sleep(10 * time.Millisecond)
	if runs.Load() != n {
		t.Errorf("body ran after stop: %d, then %d", n, runs.Load())
	}
}
