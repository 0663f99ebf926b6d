package claudecode

import (
	"context"
	"encoding/json"
	"path/filepath"
	"time"

	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/internal/statedir"
)

// sessionsFile, in the project's state directory, records the last
// Claude Code session des saw start: `des-hook doctor` reads it to say
// whether Claude Code runs des at all (settings present, but no event
// since ...).
const sessionsFile = "claude-sessions.json"

// SessionSeen is what des keeps of the last SessionStart event of a
// project: whether Claude Code runs des at all, for a checker such as
// des-hook doctor.
type SessionSeen struct {
	At        time.Time `json:"at"`
	SessionID string    `json:"session_id"`
	Source    string    `json:"source,omitempty"` // startup, resume, clear, compact
	Model     string    `json:"model,omitempty"`
}

// sessionStart records the session (SessionStart). It never has an
// opinion and never fails closed: a session starting is nothing to judge.
func sessionStart(_ context.Context, h *hookEnv, ev *Event) response {
	dir, err := statedir.Ensure(h.root, h.lookupEnv)
	if err != nil {
		h.logger.Warn("hook: the session is not recorded", "err", err)
		return noOpinion()
	}
	data, _ := json.Marshal(SessionSeen{At: time.Now().UTC(), SessionID: ev.SessionID, Source: ev.Source, Model: ev.Model})
	if err := fileio.WriteAtomic(filepath.Join(dir, sessionsFile), append(data, '\n')); err != nil {
		h.logger.Warn("hook: the session is not recorded", "err", err)
	}
	return noOpinion()
}

// LastSession returns the last session des saw start in the project at
// root; ok is false when it saw none.
func LastSession(root string, lookupEnv func(string) (string, bool)) (SessionSeen, bool) {
	var s SessionSeen
	data, err := fileio.ReadBounded(filepath.Join(statedir.For(root, lookupEnv), sessionsFile), 64<<10)
	if err != nil || json.Unmarshal(data, &s) != nil || s.At.IsZero() {
		return SessionSeen{}, false
	}
	return s, true
}
