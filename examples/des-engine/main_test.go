package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/deterministic-exec/des"
)

func TestRunNoArgsIsHookMode(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), nil, strings.NewReader("not json"), &stdout, &stderr, envMap{}.lookup)
	if code != 0 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "malformed") {
		t.Errorf("code %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}

func TestFormatStatusLine(t *testing.T) {
	t.Parallel()
	graph := func(cur int, parallel ...bool) *des.GraphState {
		g := &des.GraphState{CurrentWave: cur}
		for i, p := range parallel {
			g.Waves = append(g.Waves, des.WaveState{ID: i, Parallel: p})
		}
		return g
	}
	last := &des.AgentState{ID: "a9", Type: "codebase-context-analyzer", StoppedAt: time.Now(), Seconds: 86.6}
	two := []des.AgentState{{ID: "a1"}, {ID: "a2"}}
	cases := []struct {
		st   des.OrchestrationStatus
		want string
	}{
		{des.OrchestrationStatus{Running: two, Graph: graph(1, false, true), Last: last}, "[PAR] Active: 2 Wave 1 | Last: codebase-context-analyzer completed (87s)"},
		{des.OrchestrationStatus{Graph: graph(0, false, true)}, "[SEQ] Active: 0 Wave 0"},
		{des.OrchestrationStatus{Graph: graph(2, false, true)}, "[SEQ] Active: 0 Waves done"},
		{des.OrchestrationStatus{Graph: &des.GraphState{Problem: "x"}}, "[DES] Active: 0 Graph unreadable"},
		{des.OrchestrationStatus{Running: two[:1], Last: &des.AgentState{ID: "a3", Seconds: 3}}, "[DES] Active: 1 | Last: a3 completed (3s)"},
		{des.OrchestrationStatus{}, "[DES] Active: 0"},
	}
	for _, c := range cases {
		if got := formatStatusLine(c.st); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}
