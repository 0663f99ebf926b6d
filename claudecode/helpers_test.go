package claudecode

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/deterministic-exec/des/internal/hooklog"
	"github.com/deterministic-exec/des/internal/testenv"
)

// runHook runs the command hook on stdin with the routes given, logging to
// stderr as des-engine does. It returns the hook's exit status: always 0.
func runHook(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, lookupEnv func(string) (string, bool), routes routeTable) int {
	h := New(WithEnv(lookupEnv), WithLogger(hooklog.New(stderr, lookupEnv)))
	h.routes = routes
	h.Run(ctx, stdin, stdout)
	return 0
}

// newHookEnv is one event's view of a Handler with the environment and
// logger given.
func newHookEnv(root, event string, lookupEnv func(string) (string, bool), logger *slog.Logger, _ io.Writer) *hookEnv {
	return New(WithEnv(lookupEnv), WithLogger(logger)).env(root, event)
}

// render writes r as the command hook does for an event named event.
func render(w io.Writer, event string, r response) error {
	out, err := outputOf(event, r)
	if err != nil {
		return err
	}
	_, err = out.WriteTo(w)
	return err
}

// writeFile writes content at rel below root, making the directories.
func writeFile(t testing.TB, root, rel, content string) { testenv.WriteFile(t, root, rel, content) }
