// Package hooklog builds the logger of des's hook and command line: text
// to stderr, which Claude Code shows in its debug output, at the level
// DES_LOG_LEVEL names.
package hooklog

import (
	"io"
	"log/slog"
	"strings"
)

// LevelEnv names the log level: debug, info, warn or error (default warn).
const LevelEnv = "DES_LOG_LEVEL"

// New returns a logger writing text to w at the level of DES_LOG_LEVEL. A
// level it cannot read is logged and replaced by warn: a typo must not
// silence the hook.
func New(w io.Writer, lookupEnv func(string) (string, bool)) *slog.Logger {
	level := slog.LevelWarn
	raw, set := lookupEnv(LevelEnv)
	var bad bool
	if set && strings.TrimSpace(raw) != "" {
		if err := level.UnmarshalText([]byte(strings.TrimSpace(raw))); err != nil {
			level, bad = slog.LevelWarn, true
		}
	}
	logger := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
	if bad {
		logger.Warn(LevelEnv+" is not a log level (debug, info, warn, error); using warn", "value", raw)
	}
	return logger
}
