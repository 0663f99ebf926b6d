package ccsettings

import (
	"os"
	"path/filepath"
	"testing"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadLayersInOrder(t *testing.T) {
	home, root, managed := t.TempDir(), t.TempDir(), t.TempDir()
	write(t, filepath.Join(home, ".claude", "settings.json"), `{"model": "user", "sandbox": {"enabled": false}}`)
	write(t, filepath.Join(root, ".claude", "settings.json"), `{"model": "project", "sandbox": {"enabled": true},
		"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "des-hook", "timeout": 30, "onFailure": "block"}]}]}}`)
	write(t, filepath.Join(root, ".claude", "settings.local.json"), `not json`)
	write(t, filepath.Join(managed, "managed-settings.json"), `{"allowManagedHooksOnly": false}`)
	write(t, filepath.Join(managed, "managed-settings.d", "20-b.json"), `{"disableAllHooks": true}`)
	write(t, filepath.Join(managed, "managed-settings.d", "10-a.json"), `{"model": "managed"}`)
	env := func(k string) (string, bool) { return map[string]string{"HOME": home}[k], k == "HOME" }
	layers := Load(Options{Root: root, LookupEnv: env, ManagedDir: managed})
	var got []string
	for _, l := range layers {
		got = append(got, l.Scope+":"+filepath.Base(l.Path))
	}
	want := []string{"user:settings.json", "project:settings.json", "local:settings.local.json", "managed:managed-settings.json", "managed:10-a.json", "managed:20-b.json"}
	if len(got) != len(want) {
		t.Fatalf("layers %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("layers %v, want %v", got, want)
		}
	}
	if layers[2].Err == nil || !layers[2].Exists || layers[2].Doc != nil {
		t.Errorf("a file that is not JSON: %+v", layers[2])
	}
	if v, l := Lookup(layers, "model"); v != "managed" || l.Scope != ScopeManaged {
		t.Errorf("model = %v from %v; the managed settings win", v, l)
	}
	if v, l := Lookup(layers, "sandbox", "enabled"); v != true || l.Scope != ScopeProject {
		t.Errorf("sandbox.enabled = %v from %v; the project's", v, l)
	}
	if l := True(layers, "disableAllHooks"); l == nil || filepath.Base(l.Path) != "20-b.json" {
		t.Errorf("disableAllHooks found in %v; want the drop-in", l)
	}
	if l := True(layers, "allowManagedHooksOnly"); l != nil {
		t.Errorf("allowManagedHooksOnly false read as true in %s", l.Path)
	}
	hooks := Hooks(layers)
	if len(hooks) != 1 || hooks[0].Event != "PreToolUse" || hooks[0].Matcher != "Bash" || hooks[0].Command != "des-hook" || hooks[0].OnFailure != "block" || hooks[0].Timeout != 30 || hooks[0].Layer.Scope != ScopeProject {
		t.Errorf("hooks = %+v", hooks)
	}
}

func TestConfigDirAndPlatforms(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "settings.json"), `{"disableAllHooks": true}`)
	env := func(k string) (string, bool) {
		v, ok := map[string]string{"HOME": "/nonexistent", "CLAUDE_CONFIG_DIR": dir}[k]
		return v, ok
	}
	layers := Load(Options{LookupEnv: env, ManagedDir: t.TempDir()})
	if l := True(layers, "disableAllHooks"); l == nil || l.Scope != ScopeUser {
		t.Errorf("CLAUDE_CONFIG_DIR's settings not read: %+v", layers)
	}
	for goos, want := range map[string]string{"linux": "/etc/claude-code", "darwin": "/Library/Application Support/ClaudeCode", "windows": `C:\Program Files\ClaudeCode`} {
		if got := ManagedDirs(goos)[0]; got != want {
			t.Errorf("ManagedDirs(%s) = %s, want %s", goos, got, want)
		}
	}
}
