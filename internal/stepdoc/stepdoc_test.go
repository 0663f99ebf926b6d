package stepdoc

import (
	"os"
	"path/filepath"
	"testing"
)

func TestLooks(t *testing.T) {
	for content, want := range map[string]bool{
		`{"task_id": "01-01", "tdd_cycle": {"phase_execution_log": []}}`:            true,
		`{"task_specification": {"task_id": "01-01"}}`:                              true,
		`{"task_id": "x", "tdd_phase": "RED"}`:                                      true,
		`{"task_id": "c", "workflow_type": "configuration_setup", "state": {}}`:     true,
		`{"task_id": "x", "fixture": true}`:                                         false,
		`{"task_id": "02-03", "title": "Pick a plan", "state": {"status": "TODO"}}`: false,
		`{"step_id": "welcome", "phase_id": "intro"}`:                               false,
		`{"task_id": "x", "workflow_type": "wizard"}`:                               false,
		`{"title": "Welcome", "next": "profile"}`:                                   false,
		`[{"tdd_cycle": {}}]`:                                                       false,
		`not json`:                                                                  false,
		``:                                                                          false,
	} {
		if got := Looks([]byte(content)); got != want {
			t.Errorf("Looks(%s) = %v, want %v", content, got, want)
		}
	}
}

// Every real nWave step file is a step file (the corpus is beside the
// repository when the tests run on a machine that has it).
func TestLooksCorpus(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "shared", "corpus", "nwave-steps")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Skip("corpus absent (../shared/corpus/nwave-steps):", err)
	}
	n := 0
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		n++
		if !Looks(raw) {
			t.Errorf("%s is a real step file but does not look like one", e.Name())
		}
	}
	if n < 300 {
		t.Errorf("read %d step files, want the 300 of the corpus", n)
	}
}
