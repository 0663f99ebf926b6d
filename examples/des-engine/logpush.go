package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/internal/decisionlog"
)

// logPushDelay is how often the warm server pushes a project's decision
// logs: OPA's own decision-log plugin uploads at most this often by default
// (max_delay_seconds 600 is its ceiling; 5 minutes keeps a fleet view fresh
// without an upload per event).
const logPushDelay = 5 * time.Minute

// logPushEnv, in a request's environment, sets that delay in seconds
// (a positive whole number), for a project that wants its fleet view
// fresher, or a test.
const logPushEnv = "DES_SERVER_LOG_PUSH_SECONDS"

// logPushDelayFrom is logPushEnv when valid, else logPushDelay.
func logPushDelayFrom(lookupEnv func(string) (string, bool)) time.Duration {
	if raw, ok := lookupEnv(logPushEnv); ok {
		if n, err := strconv.Atoi(strings.TrimSpace(raw)); err == nil && n > 0 {
			return time.Duration(n) * time.Second
		}
	}
	return logPushDelay
}

// logPusherBG pushes the decision logs of the projects the warm server
// decides for, when decision_log is on and decision_log_url set: after a
// request, in a goroutine of its own, at most once every logPushDelay per
// project, never on a request's path. A push that fails leaves the rest
// for the next (the push state remembers what the collector accepted), and
// `des-hook logs push` pushes at any time.
type logPusherBG struct {
	logger *slog.Logger
	jobs   *perRoot
}

func newLogPusherBG(ctx context.Context, logger *slog.Logger) *logPusherBG {
	return &logPusherBG{logger: logger, jobs: newPerRoot(ctx)}
}

func (p *logPusherBG) check(root string, cfg des.Config, lookupEnv func(string) (string, bool)) {
	if p == nil || cfg.DecisionLog != des.DecisionLogOn || cfg.DecisionLogURL == "" {
		return
	}
	p.jobs.run(root, pushTimeout, func(ctx context.Context) time.Time {
		// The delay runs from the push's start, as the old schedule did.
		next := time.Now().Add(logPushDelayFrom(lookupEnv))
		res, err := logPusher(root, cfg, lookupEnv).Push(ctx)
		if res.Events > 0 {
			token, _ := lookupEnv(cfg.DecisionLogTokenEnv)
			rec := logPushRecord{At: time.Now(), By: pushedByServer, PID: os.Getpid(), URL: cfg.DecisionLogURL, Events: res.Events, Uploads: res.Chunks, TokenEnv: cfg.DecisionLogTokenEnv, TokenSet: token != ""}
			if err := recordLogPush(ctx, root, lookupEnv, rec); err != nil {
				p.logger.Warn("des-hook serve: decision log push record", "root", root, "err", err)
			}
		}
		var ce *decisionlog.CollectorError
		switch {
		case errors.As(err, &ce):
			p.logger.Warn("des-hook serve: decision log push", "root", root, "url", cfg.DecisionLogURL, "pushed", res.Events, "pending", res.Pending, "err", err)
		case err != nil:
			p.logger.Warn("des-hook serve: decision log push", "root", root, "err", err)
		case res.Events > 0:
			p.logger.Info("des-hook serve: decision log push", "root", root, "url", cfg.DecisionLogURL, "pushed", res.Events, "uploads", res.Chunks)
		}
		return next
	})
}
