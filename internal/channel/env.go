package channel

import "strings"

// Forwarded environment: what the engine reads, or passes to the programs it
// runs (git above all), from the caller's environment. The server's own
// environment is not the caller's, so the request carries these:
//
//   - every DES_* (des's settings) and CLAUDE_* (Claude Code's, e.g. the
//     project directory);
//   - every GIT_* (des-hook precommit runs inside git, where GIT_DIR,
//     GIT_INDEX_FILE and the like name what is being committed);
//   - every ISDLC_* (ISDLC_PROJECT chooses the iSDLC project of a monorepo);
//   - every XDG_* and LC_*, and HOME, TMPDIR, PATH, LANG, TZ, USER, LOGNAME,
//     SHELL (where files live and how the programs git and des run behave);
//   - OLDPWD (the Bash guard expands ~- and $OLDPWD in a command from it).
//
// Anything else (tokens, credentials the agent's shell holds) stays out,
// but for the variables des's *_token_env settings name, which the hook
// client adds itself (they hold the tokens des sends).
var (
	forwardPrefixes = []string{"DES_", "CLAUDE_", "GIT_", "ISDLC_", "XDG_", "LC_"}
	forwardNames    = []string{"HOME", "TMPDIR", "PATH", "LANG", "TZ", "USER", "LOGNAME", "SHELL", "OLDPWD"}
)

// Forwarded reports whether the variable named key travels with a request.
func Forwarded(key string) bool {
	for _, p := range forwardPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	for _, n := range forwardNames {
		if key == n {
			return true
		}
	}
	return false
}

// ForwardEnv keeps the KEY=VALUE entries of environ that travel with a request.
func ForwardEnv(environ []string) []string {
	var out []string
	for _, kv := range environ {
		k, _, ok := strings.Cut(kv, "=")
		if ok && Forwarded(k) {
			out = append(out, kv)
		}
	}
	return out
}

// What a client hands to the server it starts, besides the lock descriptor
// (LockFD): the runtime directory it computed, so that a server started with
// the minimal environment listens where the client looks.
const (
	EnvServerDir    = "DES_SERVER_DIR"     // the runtime directory
	EnvServerLockFD = "DES_SERVER_LOCK_FD" // "3" when the start lock is inherited
)
