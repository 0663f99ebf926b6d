package integrity

import (
	"os"
	"path/filepath"

	"github.com/deterministic-exec/des/internal/statedir"
)

// ForProject returns the checker of the project at root as des's hook and
// command line both build it: the state directory, the user's files that
// can switch des off and the home directory all read from lookupEnv (the
// hook's environment, which may not be this process's). o's Logger, Cache,
// Client, Procs, OwnBinaries and Now are kept; its other fields are set
// here. It is nil when root is not a directory (an event from elsewhere).
// Building it touches nothing on disk.
func ForProject(root string, lookupEnv func(string) (string, bool), o Options) *Checker {
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return nil
	}
	home, _ := lookupEnv("HOME")
	o.Root, o.StateDir, o.UserFiles, o.Home = root, statedir.For(root, lookupEnv), UserFiles(lookupEnv), home
	return New(o)
}

// UserFiles are the files outside the project that can switch des off for
// it: the user's Claude Code settings (disableAllHooks) and git's global
// config (core.hooksPath).
func UserFiles(lookupEnv func(string) (string, bool)) map[string]string {
	out := map[string]string{}
	home, _ := lookupEnv("HOME")
	claudeDir, _ := lookupEnv("CLAUDE_CONFIG_DIR")
	if claudeDir == "" && filepath.IsAbs(home) {
		claudeDir = filepath.Join(home, ".claude")
	}
	if filepath.IsAbs(claudeDir) {
		out[filepath.Join(claudeDir, "settings.json")] = KindClaudeSettings
	}
	if filepath.IsAbs(home) {
		out[filepath.Join(home, ".gitconfig")] = KindGitConfig
	}
	xdg, _ := lookupEnv("XDG_CONFIG_HOME")
	if !filepath.IsAbs(xdg) && filepath.IsAbs(home) {
		xdg = filepath.Join(home, ".config")
	}
	if filepath.IsAbs(xdg) {
		out[filepath.Join(xdg, "git", "config")] = KindGitConfig
	}
	return out
}
