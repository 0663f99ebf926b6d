package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The record keeps the last logPushesKept pushes, and the last push is the
// latest to the same URL; its description names the variable, never a
// token.
func TestLogPushRecord(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	lookup := envMap{"DES_STATE_DIR": t.TempDir()}.lookup
	if _, ok := lastLogPush(readLogPushes(root, lookup), "https://a/logs"); ok {
		t.Fatal("a last push without a record")
	}
	at := time.Date(2025, 6, 2, 10, 0, 0, 0, time.UTC)
	for i := range logPushesKept + 5 {
		url := "https://a/logs"
		if i%2 == 1 {
			url = "https://b/logs"
		}
		r := logPushRecord{At: at.Add(time.Duration(i) * time.Minute), By: pushedByCLI, PID: i, URL: url, Events: i + 1, Uploads: 1, TokenEnv: "ORG_TOKEN", TokenSet: i%3 == 0}
		if err := recordLogPush(t.Context(), root, lookup, r); err != nil {
			t.Fatal(err)
		}
	}
	pushes := readLogPushes(root, lookup)
	if len(pushes) != logPushesKept || pushes[0].PID != 5 {
		t.Fatalf("record kept %d pushes from pid %d, want %d from 5", len(pushes), pushes[0].PID, logPushesKept)
	}
	last, ok := lastLogPush(pushes, "https://a/logs")
	if !ok || last.PID != logPushesKept+4 {
		t.Fatalf("last push to a: %+v", last)
	}
	got := last.describe(last.At.Add(90 * time.Second))
	want := fmt.Sprintf("%d decision(s) in 1 upload(s) at %s (1m30s ago) by `des-hook logs push` (pid %d), with the bearer token of $ORG_TOKEN (setting decision_log_token_env) from its environment",
		last.Events, last.At.Local().Format(time.RFC3339), last.PID)
	if got != want {
		t.Errorf("describe:\n got %s\nwant %s", got, want)
	}
	server := logPushRecord{By: pushedByServer, PID: 7, TokenEnv: "ORG_TOKEN", TokenSet: true}
	if c := server.credentials(); c != "with the bearer token of $ORG_TOKEN (setting decision_log_token_env) from the environment Claude Code ran the hook with" {
		t.Errorf("server credentials: %s", c)
	}
	if w := server.who(); !strings.Contains(w, "warm decision server (pid 7)") {
		t.Errorf("server: %s", w)
	}
}
