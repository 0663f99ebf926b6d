package claudecode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/gate"
	"github.com/deterministic-exec/des/policy"
	"github.com/google/go-cmp/cmp"
)

// renderJSON renders r for event and returns it parsed, nil for no output.
func renderJSON(t *testing.T, event string, r response) any {
	t.Helper()
	var buf bytes.Buffer
	if err := render(&buf, event, r); err != nil {
		t.Fatalf("render: %v", err)
	}
	if buf.Len() == 0 {
		return nil
	}
	if !bytes.HasSuffix(buf.Bytes(), []byte("}\n")) || bytes.Count(buf.Bytes(), []byte("\n")) != 1 {
		t.Errorf("output is not one JSON line: %q", buf.String())
	}
	var v any
	dec := json.NewDecoder(&buf)
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("output is not JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Errorf("more than one JSON value on stdout")
	}
	return v
}

func golden(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("golden %s: %v", s, err)
	}
	return v
}

func TestRender(t *testing.T) {
	t.Parallel()
	const R = "[DES-X] a && b <tag>\nRecovery:\n- fix it"
	for _, tc := range []struct {
		name  string
		event string
		r     response
		want  string // "" is no output
	}{
		{"no opinion", "PreToolUse", noOpinion(), ""},
		{"no opinion on any event", "Whatever", noOpinion(), ""},
		{"deny", "PreToolUse", denyPreToolUse(R),
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"` + jsonEscape(R) + `"}}`},
		{"deny without reason still says why", "PreToolUse", denyPreToolUse(" "),
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"DES denied this tool call without giving a reason."}}`},
		{"warn context only", "PreToolUse", warnPreToolUse("W", ""),
			`{"hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"W"}}`},
		{"warn user only", "PreToolUse", warnPreToolUse("", "U"), `{"systemMessage":"U"}`},
		{"warn both", "PreToolUse", warnPreToolUse("W", "U"),
			`{"systemMessage":"U","hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"W"}}`},
		{"warn nothing", "PreToolUse", warnPreToolUse("", ""), ""},
		{"block stop", "SubagentStop", blockStop(R), `{"decision":"block","reason":"` + jsonEscape(R) + `"}`},
		{"block stop without reason", "SubagentStop", blockStop(""), `{"decision":"block","reason":"DES blocked the stop without giving a reason."}`},
		{"stop message", "SubagentStop", stopMessage(R), `{"systemMessage":"` + jsonEscape(R) + `"}`},
		{"stop message empty", "SubagentStop", stopMessage(""), ""},
		{"post tool context", "PostToolUse", postToolContext(R),
			`{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"` + jsonEscape(R) + `"}}`},
		{"post tool context empty", "PostToolUse", postToolContext(""), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := renderJSON(t, tc.event, tc.r)
			var want any
			if tc.want != "" {
				want = golden(t, tc.want)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("output mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func jsonEscape(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

func TestRenderNeverAllowsAndKeepsHTML(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	if err := render(&buf, "PreToolUse", denyPreToolUse("run `a && b` <x>")); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, "`a && b` <x>") {
		t.Errorf("HTML-escaped output: %s", out)
	}
	if strings.Contains(out, `"allow"`) {
		t.Errorf("explicit allow: %s", out)
	}
}

func TestRenderRejectsWrongEvent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		event string
		r     response
	}{
		{"SubagentStop", denyPreToolUse("x")},
		{"PostToolUse", warnPreToolUse("x", "")},
		{"PreToolUse", postToolContext("x")},
	} {
		var buf bytes.Buffer
		if err := render(&buf, tc.event, tc.r); !errors.Is(err, errWrongEvent) || buf.Len() != 0 {
			t.Errorf("render(%s, %+v) = %v, %q; want errWrongEvent and nothing", tc.event, tc.r, err, buf.String())
		}
	}
	// Top-level fields suit any event.
	var buf bytes.Buffer
	if err := render(&buf, "Stop", blockStop("x")); err != nil || buf.Len() == 0 {
		t.Errorf("blockStop on Stop: %v, %q", err, buf.String())
	}
}

func testEnv(event string) (*hookEnv, *bytes.Buffer) {
	var stderr bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&stderr, nil))
	return newHookEnv("/p", event, envMap{}.lookup, logger, &stderr), &stderr
}

func TestInternalError(t *testing.T) {
	t.Parallel()
	cause := &des.ConfigError{Setting: "stale_threshold_minutes", Source: "DES_STALE_THRESHOLD_MINUTES", Value: "abc", Reason: "not a whole number"}

	t.Run("not required", func(t *testing.T) {
		for _, event := range []string{"PreToolUse", "PostToolUse", "SubagentStop", "Stop"} {
			h, stderr := testEnv(event)
			if r := h.internalError(false, cause); !r.isNoOpinion() {
				t.Errorf("%s: %+v, want no opinion", event, r)
			}
			if !strings.Contains(stderr.String(), "stale_threshold_minutes") {
				t.Errorf("%s: error not logged: %q", event, stderr.String())
			}
		}
	})

	t.Run("required PreToolUse denies", func(t *testing.T) {
		h, stderr := testEnv("PreToolUse")
		r := h.internalError(true, fmt.Errorf("load: %w", cause))
		got := renderJSON(t, "PreToolUse", r).(map[string]any)
		hso := got["hookSpecificOutput"].(map[string]any)
		reason, _ := hso["permissionDecisionReason"].(string)
		if hso["permissionDecision"] != "deny" || !strings.HasPrefix(reason, "[DES-INTERNAL] DES could not validate this call and fails closed: load: setting stale_threshold_minutes") {
			t.Errorf("output = %v", got)
		}
		if !strings.Contains(reason, "\nRecovery:\n- Fix the setting named above in .des/config.json") {
			t.Errorf("no settings recovery in %q", reason)
		}
		if !strings.Contains(stderr.String(), "stale_threshold_minutes") {
			t.Errorf("error not logged: %q", stderr.String())
		}
	})

	t.Run("required policy error", func(t *testing.T) {
		h, _ := testEnv("PreToolUse")
		perr := policy.Errors{{File: ".des/policies/team.rego", Row: 3, Col: 1, Code: "rego_parse_error", Message: "unexpected }"}}
		r := h.internalError(true, fmt.Errorf("des: %w", perr))
		if !strings.Contains(r.decisionReason, "- Fix the team policy or data file named above (a policy error is at its file:line:col") {
			t.Errorf("reason = %q", r.decisionReason)
		}
	})

	t.Run("required other events", func(t *testing.T) {
		for event, want := range map[string]string{
			"SubagentStop": `{"systemMessage":"R"}`,
			"PostToolUse":  `{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"R"}}`,
			"Stop":         "",
		} {
			h, _ := testEnv(event)
			r := h.internalError(true, errors.New("boom"))
			text := gate.Internal("", errors.New("boom"), internalRecovery(errors.New("boom"))...).Reason()
			var wantV any
			if want != "" {
				wantV = golden(t, strings.Replace(want, `"R"`, `"`+jsonEscape(text)+`"`, 1))
			}
			if diff := cmp.Diff(wantV, renderJSON(t, event, r)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", event, diff)
			}
		}
	})

	t.Run("nil error", func(t *testing.T) {
		h, _ := testEnv("PreToolUse")
		if r := h.internalError(true, nil); !strings.Contains(r.decisionReason, "[DES-INTERNAL]") {
			t.Errorf("reason = %q", r.decisionReason)
		}
	})
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// tWriter sends log lines to the test log.
type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
