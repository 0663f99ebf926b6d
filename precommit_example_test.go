package des_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/audit"
)

// Gate 3 judges step files before they are committed: here one whose last
// phase is still open. Each file's verdict is recorded in the audit trail.
func ExampleEngine_PreCommit() {
	root, err := os.MkdirTemp("", "des-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	var phases []string
	for i, name := range []string{"PREPARE", "RED_ACCEPTANCE", "RED_UNIT", "GREEN_UNIT", "CHECK_ACCEPTANCE", "GREEN_ACCEPTANCE", "REVIEW",
		"REFACTOR_L1", "REFACTOR_L2", "REFACTOR_L3", "REFACTOR_L4", "POST_REFACTOR_REVIEW", "FINAL_VALIDATE", "COMMIT"} {
		status := `"status": "EXECUTED", "outcome": "PASS"`
		if name == "COMMIT" {
			status = `"status": "IN_PROGRESS"`
		}
		phases = append(phases, fmt.Sprintf(`{"phase_name": %q, "phase_index": %d, %s}`, name, i, status))
	}
	step := `{"task_id": "01-01", "tdd_cycle": {"phase_execution_log": [` + strings.Join(phases, ", ") + `]}}`
	path := filepath.Join(root, "docs", "feature", "shop", "steps", "01-01.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(step), 0o644); err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	clock := func() time.Time { return time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC) }
	engine, err := des.New(ctx, des.WithRoot(root), des.WithEnv(noEnv), des.WithClock(clock))
	if err != nil {
		log.Fatal(err)
	}
	res, err := engine.PreCommit(ctx, "docs/feature/shop/steps/01-01.json")
	if err != nil {
		log.Fatal(err) // DES could not decide: refuse the commit
	}
	for _, f := range res.Failed() {
		for _, v := range f.Decision.Deny {
			fmt.Printf("%s: [%s] %s\n", f.StepFile, v.Code, v.Field)
		}
	}
	fmt.Println("commit allowed:", !res.Denied())

	entries, err := engine.Audit().Read(ctx, audit.Query{Events: []audit.EventType{audit.CommitValidationFailed}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(entries[0].Event, entries[0].Fields["step_file"], entries[0].Fields["codes"], entries[0].Fields["source"])
	// Output:
	// docs/feature/shop/steps/01-01.json: [DES-COMMIT-PHASE-OPEN] /tdd_cycle/phase_execution_log/13/status
	// commit allowed: false
	// COMMIT_VALIDATION_FAILED docs/feature/shop/steps/01-01.json [DES-COMMIT-PHASE-OPEN] library
}
