package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"time"

	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/internal/filelock"
	"github.com/deterministic-exec/des/internal/statedir"
)

// logPushesFile, in the project's state directory, records the last pushes
// of its decision logs that a collector accepted events from: who pushed
// (the warm server in the background, or `des-hook logs push`), when, how
// many events, to which URL and with which credentials (the name of the
// token's variable and whether it was set; never the token). A push that
// finds nothing to send reads it to say where the events went.
const logPushesFile = "log-pushes.json"

// logPushesKept bounds the record.
const logPushesKept = 20

// Who pushed.
const (
	pushedByServer = "server"    // the warm server's background push
	pushedByCLI    = "logs push" // des-hook logs push
)

// logPushRecord is one push that a collector accepted events from.
type logPushRecord struct {
	At       time.Time `json:"at"`
	By       string    `json:"by"` // pushedByServer or pushedByCLI
	PID      int       `json:"pid"`
	URL      string    `json:"url"`
	Events   int       `json:"events"`
	Uploads  int       `json:"uploads"`
	TokenEnv string    `json:"token_env"` // the variable the token was read from (setting decision_log_token_env)
	TokenSet bool      `json:"token_set"` // whether it held one: false sent no token
}

type logPushes struct {
	Pushes []logPushRecord `json:"pushes"`
}

// readLogPushes is the record of root's pushes, oldest first; none when
// there is no record (or it cannot be read: it only informs).
func readLogPushes(root string, lookupEnv func(string) (string, bool)) []logPushRecord {
	raw, err := fileio.ReadBounded(filepath.Join(statedir.For(root, lookupEnv), logPushesFile), 64<<10)
	if err != nil {
		return nil
	}
	var rec logPushes
	if json.Unmarshal(raw, &rec) != nil {
		return nil
	}
	return rec.Pushes
}

// recordLogPush adds r to root's record, keeping the last logPushesKept.
func recordLogPush(ctx context.Context, root string, lookupEnv func(string) (string, bool), r logPushRecord) error {
	dir, err := statedir.Ensure(root, lookupEnv)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	lock, err := filelock.Acquire(ctx, filepath.Join(dir, logPushesFile+".lock"))
	if err != nil {
		return err
	}
	defer lock.Unlock()
	path := filepath.Join(dir, logPushesFile)
	var rec logPushes
	if raw, err := fileio.ReadBounded(path, 64<<10); err == nil {
		_ = json.Unmarshal(raw, &rec) // a record that does not parse is started again
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	rec.Pushes = append(rec.Pushes, r)
	if n := len(rec.Pushes); n > logPushesKept {
		rec.Pushes = rec.Pushes[n-logPushesKept:]
	}
	raw, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	if err := fileio.WriteAtomic(path, append(raw, '\n')); err != nil {
		return fmt.Errorf("record the decision log push in %s: %w", path, err)
	}
	return nil
}

// lastLogPush is the latest push to url in pushes.
func lastLogPush(pushes []logPushRecord, url string) (logPushRecord, bool) {
	for i := len(pushes) - 1; i >= 0; i-- {
		if pushes[i].URL == url {
			return pushes[i], true
		}
	}
	return logPushRecord{}, false
}

// who says who made the push.
func (r logPushRecord) who() string {
	if r.By == pushedByServer {
		return "the warm decision server (pid " + strconv.Itoa(r.PID) + "), in the background after a hook event"
	}
	return "`des-hook logs push` (pid " + strconv.Itoa(r.PID) + ")"
}

// credentials names where the token came from, never the token.
func (r logPushRecord) credentials() string {
	where := "its environment"
	if r.By == pushedByServer {
		where = "the environment Claude Code ran the hook with"
	}
	if r.TokenSet {
		return "with the bearer token of $" + r.TokenEnv + " (setting decision_log_token_env) from " + where
	}
	return "with no token: $" + r.TokenEnv + " (setting decision_log_token_env) was not set in " + where
}

// describe is one line on what r pushed, when, and with which credentials.
func (r logPushRecord) describe(now time.Time) string {
	ago := now.Sub(r.At).Round(time.Second)
	if ago < 0 {
		ago = 0
	}
	return fmt.Sprintf("%d decision(s) in %d upload(s) at %s (%s ago) by %s, %s",
		r.Events, r.Uploads, r.At.Local().Format(time.RFC3339), ago, r.who(), r.credentials())
}
