package claudecode

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/integrity"
)

func TestDetaches(t *testing.T) {
	t.Parallel()
	for cmd, want := range map[string]bool{
		"sleep 5 &":                        true,
		"(sleep 5; rm -rf .des) & echo hi": true,
		"nohup sh -c x":                    true,
		"setsid x":                         true,
		"a && b":                           false,
		"make >out 2>&1":                   false,
		"cmd &> log":                       false,
		"cmd |& tee x":                     false,
		"echo 'look at home'":              false,
		"crontab -l | crontab -":           true,
		"go test ./... && git status":      false,
	} {
		if got := detaches().MatchString(cmd); got != want {
			t.Errorf("detaches(%q) = %v, want %v", cmd, got, want)
		}
	}
}

// A command that leaves a job running is counted as running for the
// longest time, whatever its own timeout: `(sleep 66; write) &` with a
// timeout of one second writes long after a minute and a second.
func TestCallLifetime(t *testing.T) {
	t.Parallel()
	bash := func(input string) *Event {
		return &Event{ToolName: toolBash, ToolInput: []byte(input)}
	}
	for input, want := range map[string]time.Duration{
		`{"command": "(sleep 66; python3 w.py) &", "timeout": 1000}`: integrity.InFlightLifetime,
		`{"command": "make", "run_in_background": true}`:             integrity.InFlightLifetime,
		`{"command": "make", "timeout": 1000.5}`:                     time.Second + time.Minute,
		`{"command": "make"}`:                                        3 * time.Minute,
	} {
		if got := callLifetime(bash(input)); got != want {
			t.Errorf("callLifetime(%s) = %v, want %v", input, got, want)
		}
	}
}

// runsOn reads the command, not only its text: an "&" or a detaching word
// in a quoted argument leaves nothing running, and counting such a call
// as running for eleven minutes would take the hand edits made meanwhile
// for its doing (found by TestE2EHonestWorkProperty). What the parse
// cannot read keeps the pattern's answer.
func TestRunsOn(t *testing.T) {
	t.Parallel()
	for cmd, want := range map[string]bool{
		`echo "Tom & Jerry"`:                             false,
		`git commit -qm 'cart & checkout'`:               false,
		`grep -n 'nohup' README.md`:                      false,
		`echo "a & b" && ls`:                             false,
		`printf '%s\n' "setsid is a command"`:            false,
		"sleep 5 &":                                      true,
		"(sleep 5; rm -rf .des) & echo hi":               true,
		`bash -c 'sleep 9 & echo "x"'`:                   true,
		`python3 -c 'import os; os.system("sleep 9 &")'`: true,
		"nohup make":                                     true,
		"env setsid x":                                   true,
		"coproc cat":                                     true,
		`bash -c "$CMD &"`:                               true, // the script is not literal
		`echo "unterminated &`:                           true, // does not parse
		`eval "$(cat cmd.txt) &"`:                        true,
		"make >out 2>&1":                                 false,
	} {
		ev := &Event{ToolName: toolBash}
		ev.ToolInput, _ = json.Marshal(map[string]any{"command": cmd})
		if got := runsOn(ev); got != want {
			t.Errorf("runsOn(%q) = %v, want %v", cmd, got, want)
		}
	}
}
