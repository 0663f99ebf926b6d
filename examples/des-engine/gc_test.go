package main

import (
	"runtime/debug"
	"testing"
)

// TestHookGC checks the collector settings of a hook process: proportional
// collection off with a bounded heap, unless the environment sets GOGC or
// GOMEMLIMIT.
func TestHookGC(t *testing.T) {
	t.Parallel()
	restore := func(percent int, limit int64) {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		percent int
		limit   int64
	}{
		{"default", nil, -1, hookMemoryLimit},
		{"GOGC set", map[string]string{"GOGC": "100"}, 100, 1 << 40},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "1GiB"}, 100, 1 << 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			percent, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(1<<40)
			defer restore(percent, limit)
			hookGC(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			gotPercent, gotLimit := debug.SetGCPercent(100), debug.SetMemoryLimit(1<<40)
			if gotPercent != tc.percent || gotLimit != tc.limit {
				t.Errorf("GC percent %d, memory limit %d; want %d, %d", gotPercent, gotLimit, tc.percent, tc.limit)
			}
		})
	}
}
