package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/internal/decisionlog"
)

// pushTimeout bounds one `logs push`: each upload is small (32 KiB), and a
// push that gives up leaves the rest for the next one.
const pushTimeout = 2 * time.Minute

const logsDoc = `Sends the decision logs kept in ` + des.DecisionsDir + ` (setting decision_log) that
the collector has not accepted yet to decision_log_url, as OPA sends its
decision logs: POST, gzipped JSON arrays of at most 32 KiB. The bearer token
is read from the variable decision_log_token_env names. What the collector
accepts is remembered; what it refuses is sent again by the next push.
Each push the collector accepted events from (this command's, or the warm
server's in the background, which has the token only when it is set in the
environment Claude Code starts with) is recorded in des's state directory:
with nothing to send, the command prints the last push to the same URL, when,
by whom and with which credentials (the variable's name, never the token).
Exit 0 when everything was sent, 1 when the collector refused an upload or
could not be reached, 2 when the push could not run.`

// runLogs is `des-hook logs push`.
func runLogs(ctx context.Context, e env, args []string) int {
	if len(args) == 0 || args[0] != "push" {
		fs := newFlagSet(e, "logs", "push", logsDoc)
		if len(args) > 0 {
			if code, done := parseFlags(fs, args, -1); done {
				return code
			}
			fmt.Fprintf(e.stderr, "des-hook logs: unknown action %q\n", args[0])
		}
		fs.Usage()
		return exitUsage
	}
	fs := newFlagSet(e, "logs push", "", logsDoc)
	if code, done := parseFlags(fs, args[1:], 0); done {
		return code
	}
	root := commandRoot(ctx, e.lookupEnv)
	cfg, err := des.LoadConfig(root, e.lookupEnv)
	if err != nil {
		fmt.Fprintf(e.stderr, "des-hook logs push: %v\n", err)
		return exitUsage
	}
	if cfg.DecisionLogURL == "" {
		fmt.Fprintf(e.stderr, "des-hook logs push: no collector to push to: set decision_log_url in %s (or DES_DECISION_LOG_URL) to the URL of a collector of OPA decision logs\n", filepath.Join(root, des.ConfigFile))
		return exitUsage
	}
	token, _ := e.lookupEnv(cfg.DecisionLogTokenEnv)
	if token == "" {
		fmt.Fprintf(e.stderr, "des-hook logs push: $%s (setting decision_log_token_env) is not set: pushing without a bearer token\n", cfg.DecisionLogTokenEnv)
	}
	ctx, cancel := context.WithTimeout(ctx, pushTimeout)
	defer cancel()
	res, err := logPusher(root, cfg, e.lookupEnv).Push(ctx)
	rec := logPushRecord{At: time.Now(), By: pushedByCLI, PID: os.Getpid(), URL: cfg.DecisionLogURL, Events: res.Events, Uploads: res.Chunks, TokenEnv: cfg.DecisionLogTokenEnv, TokenSet: token != ""}
	if res.Events > 0 {
		if err := recordLogPush(ctx, root, e.lookupEnv, rec); err != nil {
			fmt.Fprintf(e.stderr, "des-hook logs push: %v (the push itself went through)\n", err)
		}
	}
	if res.Skipped > 0 {
		fmt.Fprintf(e.stderr, "des-hook logs push: skipped %d line(s) that were not whole events (a write cut short)\n", res.Skipped)
	}
	var ce *decisionlog.CollectorError
	switch {
	case errors.As(err, &ce):
		fmt.Fprintf(e.stdout, "pushed %d decision(s) in %d upload(s) to %s %s\n", res.Events, res.Chunks, cfg.DecisionLogURL, rec.credentials())
		fmt.Fprintf(e.stderr, "des-hook logs push: %v; %d decision(s) left for the next push\n", err, res.Pending)
		if ce.Status == http.StatusUnauthorized || ce.Status == http.StatusForbidden {
			fmt.Fprintf(e.stderr, "des-hook logs push: the collector refused the token: check the variable %s (setting decision_log_token_env)\n", cfg.DecisionLogTokenEnv)
		}
		return 1
	case err != nil:
		fmt.Fprintf(e.stderr, "des-hook logs push: %v\n", err)
		return exitUsage
	}
	if res.Events == 0 {
		fmt.Fprintf(e.stdout, "no decisions to push to %s\n", cfg.DecisionLogURL)
		reportLastPush(e, root, cfg, token != "")
		return exitOK
	}
	fmt.Fprintf(e.stdout, "pushed %d decision(s) in %d upload(s) to %s %s\n", res.Events, res.Chunks, cfg.DecisionLogURL, rec.credentials())
	return exitOK
}

// reportLastPush says, when a push finds nothing to send, where the kept
// decisions went: the last push to the same collector recorded on this
// machine, by whom, when and with which credentials. When the warm server
// pushed them without the token this command has, it says where to set
// the token for the background push.
func reportLastPush(e env, root string, cfg des.Config, tokenHere bool) {
	last, ok := lastLogPush(readLogPushes(root, e.lookupEnv), cfg.DecisionLogURL)
	if !ok {
		return
	}
	fmt.Fprintf(e.stdout, "the last push to it: %s\n", last.describe(time.Now()))
	if last.By == pushedByServer && !last.TokenSet && tokenHere {
		fmt.Fprintf(e.stdout, "the collector accepted them without a token; for the background push to send one, set $%s in the environment Claude Code starts with (export it in the shell that starts claude, then restart Claude Code), not only in this terminal\n", cfg.DecisionLogTokenEnv)
	}
}

// logPusher is the pusher of a project's decision logs to its collector,
// for `des-hook logs push` and the warm server's background push.
func logPusher(root string, cfg des.Config, lookupEnv func(string) (string, bool)) decisionlog.Pusher {
	token, _ := lookupEnv(cfg.DecisionLogTokenEnv)
	return decisionlog.Pusher{
		Dir:    filepath.Join(root, des.DecisionsDir),
		Root:   root,
		URL:    cfg.DecisionLogURL,
		Token:  token,
		Client: &http.Client{Timeout: 30 * time.Second},
		Mask:   cfg.DecisionLogPushMask,
	}
}
