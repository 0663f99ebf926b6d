package audit_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	ctx := context.Background()
	err = log.Append(ctx,
		audit.Entry{Event: audit.PhaseStarted, Fields: map[string]any{
			"step_file": "steps/01-01.json", "phase": "RED_UNIT", "from": "NOT_EXECUTED", "to": "IN_PROGRESS"}},
		audit.Entry{Event: audit.PhaseCompleted, Fields: map[string]any{
			"step_file": "steps/01-01.json", "phase": "RED_UNIT", "from": "IN_PROGRESS", "to": "EXECUTED", "outcome": "PASS"}},
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

	done, err := log.Read(ctx, audit.Query{StepFile: "steps/01-01.json", Events: []audit.EventType{audit.PhaseCompleted}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(done[0].Seq, done[0].Event, done[0].Fields["outcome"])

	report, err := audit.Verify(ctx, dir)
	fmt.Println("intact:", report.Intact(), report.Lines, "lines", err)

	// An entry that fails its event's schema is refused, and nothing is written.
	err = log.Append(ctx, audit.Entry{Event: audit.TaskStateChanged, Fields: map[string]any{"step_file": "steps/01-01.json"}})
	fmt.Println(strings.TrimPrefix(err.Error(), "audit: append to "+dir+": "))
	// Output:
	// audit-2026-03-14.log:
	// {"timestamp":"2026-03-14T15:09:26Z","event":"PHASE_STARTED","seq":1,"prev":"0000000000000000000000000000000000000000000000000000000000000000","from":"NOT_EXECUTED","phase":"RED_UNIT","step_file":"steps/01-01.json","to":"IN_PROGRESS"}
	// {"timestamp":"2026-03-14T15:09:26Z","event":"PHASE_COMPLETED","seq":2,"prev":"ee845e5d1b9ed1c9f7621d493d9baffdf74a6333926e709aadbf45250e4932d7","from":"IN_PROGRESS","outcome":"PASS","phase":"RED_UNIT","step_file":"steps/01-01.json","to":"EXECUTED"}
	// 2 PHASE_COMPLETED PASS
	// intact: true 2 lines <nil>
	// entry 0: entry fails its event schema: TASK_STATE_CHANGED: (root): missing properties: 'from', 'to', 'by'
}
