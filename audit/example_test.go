package audit_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/deterministic-exec/des/audit"
)

func Example() {
	dir, err := os.MkdirTemp("", "audit-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	now := time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	log, err := audit.Open(dir, audit.WithClock(func() time.Time { return now }))
	if err != nil {
		fmt.Println(err)
		return
	}
	err = log.Append(context.Background(),
		audit.Entry{Event: audit.PhaseStarted, Fields: map[string]any{"step_file": "steps/01-01.json", "phase": "RED"}},
		audit.Entry{Event: audit.PhaseCompleted, Fields: map[string]any{"phase": "RED", "duration_ms": 42}},
	)
	if err != nil {
		fmt.Println(err)
		return
	}

	files, err := log.Files()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s:\n%s", filepath.Base(f), data)
	}
	entries, err := audit.ReadFile(files[0])
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(entries[1].Event, entries[1].Fields["duration_ms"])
	// Output:
	// audit-2026-03-14.log:
	// {"timestamp":"2026-03-14T15:09:26Z","event":"PHASE_STARTED","phase":"RED","step_file":"steps/01-01.json"}
	// {"timestamp":"2026-03-14T15:09:26Z","event":"PHASE_COMPLETED","duration_ms":42,"phase":"RED"}
	// PHASE_COMPLETED 42
}
