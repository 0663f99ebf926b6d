package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
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
	if v, _ := e.lookupEnv(cfg.DecisionLogTokenEnv); v == "" {
		fmt.Fprintf(e.stderr, "des-hook logs push: $%s (setting decision_log_token_env) is not set: pushing without a bearer token\n", cfg.DecisionLogTokenEnv)
	}
	ctx, cancel := context.WithTimeout(ctx, pushTimeout)
	defer cancel()
	res, err := logPusher(root, cfg, e.lookupEnv).Push(ctx)
	if res.Skipped > 0 {
		fmt.Fprintf(e.stderr, "des-hook logs push: skipped %d line(s) that were not whole events (a write cut short)\n", res.Skipped)
	}
	var ce *decisionlog.CollectorError
	switch {
	case errors.As(err, &ce):
		fmt.Fprintf(e.stdout, "pushed %d decision(s) in %d upload(s) to %s\n", res.Events, res.Chunks, cfg.DecisionLogURL)
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
		return exitOK
	}
	fmt.Fprintf(e.stdout, "pushed %d decision(s) in %d upload(s) to %s\n", res.Events, res.Chunks, cfg.DecisionLogURL)
	return exitOK
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
	}
}
