package claudecode

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/hooklog"
)

// A handler stuck on a wait that ignores its context: the hook answers by
// the deadline all the same, failing closed where des is in charge.
func TestHandlerPastTheDeadline(t *testing.T) {
	t.Parallel()
	block := make(chan struct{})
	defer close(block)
	routes := routeTable{
		{"PreToolUse", "Bash"}: func(context.Context, *hookEnv, *Event) response {
			<-block
			return noOpinion()
		},
		{"PreToolUse", "Write"}: func(_ context.Context, h *hookEnv, _ *Event) response {
			h.requireValidation()
			<-block
			return noOpinion()
		},
	}
	env := envMap{"DES_HOOK_DEADLINE_MS": "200"}
	for _, c := range []struct {
		tool, want string
	}{
		{"Bash", ""},
		{"Write", "[DES-INTERNAL] "},
	} {
		start := time.Now()
		res := runHookWith(t, []byte(`{"hook_event_name":"PreToolUse","tool_name":"`+c.tool+`"}`), env, routes)
		if took := time.Since(start); took > 200*time.Millisecond+deadlineGrace+time.Second {
			t.Errorf("%s: the hook took %v", c.tool, took)
		}
		if res.code != 0 || (c.want == "") != (res.stdout == "") || !strings.Contains(res.stdout, c.want) {
			t.Errorf("%s: code %d stdout %q", c.tool, res.code, res.stdout)
		}
		if c.want != "" && !strings.Contains(res.stdout, "did not finish within the hook's deadline of 200ms") {
			t.Errorf("%s: the reason does not name the deadline: %s", c.tool, res.stdout)
		}
	}
}

func TestDeadlines(t *testing.T) {
	t.Parallel()
	logger := hooklog.New(&strings.Builder{}, envMap{}.lookup)
	read, event := deadlines(envMap{}.lookup, logger)
	if read != toolDeadline || event(eventPreToolUse) != toolDeadline || event(eventSubagentStop) != stopDeadline {
		t.Errorf("defaults: %v %v %v", read, event(eventPreToolUse), event(eventSubagentStop))
	}
	read, event = deadlines(envMap{"DES_HOOK_DEADLINE_MS": "1500"}.lookup, logger)
	if read != 1500*time.Millisecond || event(eventSubagentStop) != 1500*time.Millisecond {
		t.Errorf("set: %v %v", read, event(eventSubagentStop))
	}
	var log strings.Builder
	read, _ = deadlines(envMap{"DES_HOOK_DEADLINE_MS": "60000"}.lookup, hooklog.New(&log, envMap{}.lookup))
	if read != toolDeadline || !strings.Contains(log.String(), "DES_HOOK_DEADLINE_MS") {
		t.Errorf("over the bound: %v, log %q", read, log.String())
	}
}
