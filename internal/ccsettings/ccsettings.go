// Package ccsettings reads Claude Code's settings the way Claude Code
// finds them, layer by layer, so that des can say whether Claude Code will
// run its hooks: the managed (policy) settings an administrator deploys,
// the user's, the project's shared and local files. It reads; it never
// writes.
//
// Where the files are (Claude Code's settings reference): managed settings
// in /etc/claude-code on Linux and WSL, /Library/Application
// Support/ClaudeCode on macOS, C:\Program Files\ClaudeCode (older
// versions: C:\ProgramData\ClaudeCode) on Windows, each as
// managed-settings.json plus managed-settings.d/*.json merged in name
// order; the user's in ~/.claude (CLAUDE_CONFIG_DIR when set); the
// project's in .claude/settings.json and .claude/settings.local.json.
// Settings pushed by MDM profiles (a macOS plist, the Windows registry) are
// not files and are not read here.
package ccsettings

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"

	"github.com/deterministic-exec/des/internal/fileio"
)

// Scopes of a settings layer, lowest precedence first.
const (
	ScopeUser    = "user"
	ScopeProject = "project"
	ScopeLocal   = "local"
	ScopeManaged = "managed"
)

// maxSize bounds what is read of one settings file.
const maxSize = 4 << 20

// A Layer is one settings file.
type Layer struct {
	Scope string
	Path  string
	// Doc is the file's JSON object; nil when the file is absent or
	// unreadable.
	Doc map[string]any
	// Exists reports that the file is there.
	Exists bool
	// Err is why an existing file could not be used (not JSON, not an
	// object, unreadable): Claude Code skips such a file.
	Err error
}

// Options say where to look.
type Options struct {
	// Root is the project root.
	Root string
	// LookupEnv reads HOME and CLAUDE_CONFIG_DIR.
	LookupEnv func(string) (string, bool)
	// ManagedDir replaces the platform's managed settings directory (for
	// tests and unusual installs); "" is the platform's.
	ManagedDir string
	// GOOS replaces runtime.GOOS (for tests).
	GOOS string
}

// ManagedDirs are the platform's managed settings directories, in the
// order Claude Code prefers them.
func ManagedDirs(goos string) []string {
	switch goos {
	case "darwin":
		return []string{"/Library/Application Support/ClaudeCode"}
	case "windows":
		return []string{`C:\Program Files\ClaudeCode`, `C:\ProgramData\ClaudeCode`}
	default:
		return []string{"/etc/claude-code"}
	}
}

// Load reads every layer, lowest precedence first: user, project, local,
// then managed (one layer per managed file). Absent files are listed too
// (Exists false), so a report can say where it looked.
func Load(o Options) []Layer {
	env := o.LookupEnv
	if env == nil {
		env = os.LookupEnv
	}
	goos := o.GOOS
	if goos == "" {
		goos = runtime.GOOS
	}
	var layers []Layer
	userDir, _ := env("CLAUDE_CONFIG_DIR")
	if userDir == "" {
		if home, _ := env("HOME"); home != "" {
			userDir = filepath.Join(home, ".claude")
		}
	}
	if userDir != "" {
		layers = append(layers, read(ScopeUser, filepath.Join(userDir, "settings.json")))
	}
	if o.Root != "" {
		layers = append(layers,
			read(ScopeProject, filepath.Join(o.Root, ".claude", "settings.json")),
			read(ScopeLocal, filepath.Join(o.Root, ".claude", "settings.local.json")))
	}
	dirs := ManagedDirs(goos)
	if o.ManagedDir != "" {
		dirs = []string{o.ManagedDir}
	}
	for _, d := range dirs {
		managed := managedLayers(d)
		layers = append(layers, managed...)
		if slices.ContainsFunc(managed, func(l Layer) bool { return l.Exists }) {
			break // the first directory that has a policy is the policy
		}
	}
	return layers
}

// managedLayers are managed-settings.json and the drop-ins of
// managed-settings.d in name order (the later a drop-in, the higher).
func managedLayers(dir string) []Layer {
	out := []Layer{read(ScopeManaged, filepath.Join(dir, "managed-settings.json"))}
	entries, err := os.ReadDir(filepath.Join(dir, "managed-settings.d"))
	if err != nil {
		return out
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && filepath.Ext(e.Name()) == ".json" {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		out = append(out, read(ScopeManaged, filepath.Join(dir, "managed-settings.d", n)))
	}
	return out
}

func read(scope, path string) Layer {
	l := Layer{Scope: scope, Path: path}
	data, err := fileio.ReadBounded(path, maxSize)
	if errors.Is(err, fs.ErrNotExist) {
		return l
	}
	l.Exists = true
	if err != nil {
		l.Err = err
		return l
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		l.Err = fmt.Errorf("not valid JSON: %w", err)
		return l
	}
	if doc == nil {
		l.Err = errors.New("not a JSON object")
		return l
	}
	l.Doc = doc
	return l
}

// A Hook is one command hook entry of one layer.
type Hook struct {
	Layer     *Layer
	Event     string
	Matcher   string
	Command   string
	Timeout   float64
	OnFailure string
}

// Hooks lists every command hook of the layers, in layer order.
func Hooks(layers []Layer) []Hook {
	var out []Hook
	for i := range layers {
		l := &layers[i]
		events, _ := l.Doc["hooks"].(map[string]any)
		names := make([]string, 0, len(events))
		for e := range events {
			names = append(names, e)
		}
		sort.Strings(names)
		for _, event := range names {
			groups, _ := events[event].([]any)
			for _, g := range groups {
				gm, _ := g.(map[string]any)
				matcher, _ := gm["matcher"].(string)
				hs, _ := gm["hooks"].([]any)
				for _, h := range hs {
					hm, _ := h.(map[string]any)
					if t, _ := hm["type"].(string); t != "command" {
						continue
					}
					cmd, _ := hm["command"].(string)
					timeout, _ := hm["timeout"].(float64)
					onFailure, _ := hm["onFailure"].(string)
					out = append(out, Hook{Layer: l, Event: event, Matcher: matcher, Command: cmd, Timeout: timeout, OnFailure: onFailure})
				}
			}
		}
	}
	return out
}

// Lookup is the value at a dotted path (e.g. "sandbox.enabled") as Claude
// Code merges the layers for a scalar: the highest layer that sets it wins.
// It returns the value and the layer that set it, or nil.
func Lookup(layers []Layer, path ...string) (any, *Layer) {
	for i := len(layers) - 1; i >= 0; i-- {
		var v any = layers[i].Doc
		ok := layers[i].Doc != nil
		for _, k := range path {
			m, isMap := v.(map[string]any)
			if !isMap {
				ok = false
				break
			}
			if v, ok = m[k]; !ok {
				break
			}
		}
		if ok {
			return v, &layers[i]
		}
	}
	return nil, nil
}

// True is the first layer, highest precedence first, where the boolean at
// path is true: for switches such as disableAllHooks, where any layer
// saying true counts.
func True(layers []Layer, path ...string) *Layer {
	for i := len(layers) - 1; i >= 0; i-- {
		var v any = layers[i].Doc
		for _, k := range path {
			m, _ := v.(map[string]any)
			v = m[k]
		}
		if b, _ := v.(bool); b {
			return &layers[i]
		}
	}
	return nil
}
