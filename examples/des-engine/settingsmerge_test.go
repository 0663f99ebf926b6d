package main

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/internal/testenv"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/claudecode"
	"github.com/deterministic-exec/des/internal/program"
)

// testParts is des's settings for command, split as --write splits them.
func testParts(t *testing.T, command string, shared bool, deny, denyWrite []string) (desPart, desPart, *desOwner) {
	t.Helper()
	full := claudecode.SettingsFor(command, "", des.Config{}, envMap{}.lookup)
	full.Permissions.Deny = nil
	for _, d := range deny {
		full.Permissions.Deny = append(full.Permissions.Deny, "Edit("+d+")")
	}
	full.Sandbox.Filesystem.DenyWrite = denyWrite
	s, l, err := splitDESParts(full, shared)
	if err != nil {
		t.Fatal(err)
	}
	own := &desOwner{command: command, matchers: map[string]string{}}
	for _, m := range s.hooksOr(l).members {
		var gs []claudecode.HookMatcher
		if err := json.Unmarshal(m.val, &gs); err != nil {
			t.Fatal(err)
		}
		own.matchers[m.key] = gs[0].Matcher
	}
	return s, l, own
}

func mustMerge(t *testing.T, old string, want desPart, prev fileRecord, own *desOwner) mergeResult {
	t.Helper()
	var in []byte
	if old != "" {
		in = []byte(old)
	}
	r, err := mergeSettings(in, want, prev, own)
	if err != nil {
		t.Fatalf("mergeSettings: %v\n%s", err, old)
	}
	return r
}

// hookCommands lists event -> the commands of its hooks, in order.
func hookCommands(t *testing.T, data []byte) map[string][]string {
	t.Helper()
	var s struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	out := map[string][]string{}
	for ev, gs := range s.Hooks {
		for _, g := range gs {
			for _, h := range g.Hooks {
				out[ev] = append(out[ev], h.Command)
			}
		}
	}
	return out
}

func topKeys(t *testing.T, data []byte) []string {
	t.Helper()
	o, err := parseJSONObject(data)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, m := range o.members {
		keys = append(keys, m.key)
	}
	return keys
}

const userSettings = `{
  "model": "opus",
  "permissions": {"allow": ["Bash(npm test)"], "deny": ["Bash(rm -rf:*)"]},
  "hooks": {
    "PostToolUse": [
      {"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "prettier --write \"$FILE\""}]}
    ]
  },
  "env": {"FOO": "bar"}
}`

func TestMergeSettingsKeepsTheUsersAndIsIdempotent(t *testing.T) {
	t.Parallel()
	shared, _, own := testParts(t, "des-hook", true, []string{"/.des/config.json", "//home/u/state/**"}, []string{"/.des/config.json", "//home/u/state"})
	if len(shared.deny) != 1 || shared.deny[0] != "Edit(/.des/config.json)" || len(shared.denyWrite) != 1 {
		t.Fatalf("shared part %+v: want only the project-relative entries", shared)
	}
	r := mustMerge(t, userSettings, shared, fileRecord{}, own)
	if r.out == nil {
		t.Fatal("nothing changed on the first merge")
	}
	if got, want := topKeys(t, r.out), []string{"model", "permissions", "hooks", "env", "statusLine", "sandbox"}; !slices.Equal(got, want) {
		t.Errorf("top-level keys %v, want %v (the user's order, des's new keys after)", got, want)
	}
	var s struct {
		Permissions struct{ Allow, Deny []string }
		Env         map[string]string
		Sandbox     struct {
			Enabled                  *bool
			AllowUnsandboxedCommands *bool
			Filesystem               struct{ DenyWrite []string }
		}
	}
	if err := json.Unmarshal(r.out, &s); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Permissions.Deny, []string{"Bash(rm -rf:*)", "Edit(/.des/config.json)"}) || !slices.Equal(s.Permissions.Allow, []string{"Bash(npm test)"}) {
		t.Errorf("permissions %+v: want the user's deny rule first, des's after, allow untouched", s.Permissions)
	}
	if s.Env["FOO"] != "bar" || s.Sandbox.Enabled == nil || !*s.Sandbox.Enabled || s.Sandbox.AllowUnsandboxedCommands == nil || *s.Sandbox.AllowUnsandboxedCommands {
		t.Errorf("env or sandbox wrong: %+v", s)
	}
	hooks := hookCommands(t, r.out)
	if got := hooks["PostToolUse"]; !slices.Equal(got, []string{`prettier --write "$FILE"`, "des-hook"}) {
		t.Errorf("PostToolUse %v: want the formatter kept, des's after", got)
	}
	if len(hooks) != 8 {
		t.Errorf("events %v: want des's eight", hooks)
	}
	if !slices.Equal(r.record.Deny, []string{"Edit(/.des/config.json)"}) || !slices.Equal(r.record.DenyWrite, []string{"/.des/config.json"}) {
		t.Errorf("record %+v: want what des added", r.record)
	}
	if !strings.Contains(string(r.out), `"prettier --write \"$FILE\""`) {
		t.Errorf("the user's command is not written as it was:\n%s", r.out)
	}

	again := mustMerge(t, string(r.out), shared, r.record, own)
	if again.out != nil || len(again.changes) != 0 {
		t.Errorf("second merge changed %v", again.changes)
	}
	if !slices.Equal(again.record.Deny, r.record.Deny) || !slices.Equal(again.record.DenyWrite, r.record.DenyWrite) {
		t.Errorf("second merge's record %+v, want %+v", again.record, r.record)
	}
}

func TestMergeSettingsUpgradeReplacesDESEntries(t *testing.T) {
	t.Parallel()
	_, oldLocal, oldOwn := testParts(t, "/old/bin/des-hook", false, nil, nil)
	first := mustMerge(t, userSettings, oldLocal, fileRecord{}, oldOwn)
	_, newLocal, own := testParts(t, "/new/bin/des-hook", false, nil, nil)
	r := mustMerge(t, string(first.out), newLocal, first.record, own)
	for ev, cmds := range hookCommands(t, r.out) {
		n := 0
		for _, c := range cmds {
			if strings.Contains(c, "des-hook") {
				n++
				if c != "/new/bin/des-hook" {
					t.Errorf("%s: %s kept", ev, c)
				}
			}
		}
		if n != 1 {
			t.Errorf("%s: %d des entries, want 1: %v", ev, n, cmds)
		}
	}
	// The replaced group stays where the old one was: after the formatter.
	if got := hookCommands(t, r.out)["PostToolUse"]; !slices.Equal(got, []string{`prettier --write "$FILE"`, "/new/bin/des-hook"}) {
		t.Errorf("PostToolUse %v", got)
	}
	for _, c := range r.changes {
		if c.key == "hooks.PreToolUse" && (c.verb != "replaced" || !strings.Contains(c.value, "/old/bin/des-hook -> /new/bin/des-hook")) {
			t.Errorf("change %v: want a replacement", c)
		}
	}
	// Moving the hooks to the other file removes them from this one.
	shared, _, own2 := testParts(t, "des-hook", true, nil, nil)
	_ = shared
	moved := mustMerge(t, string(r.out), desPart{}, r.record, own2)
	if h := hookCommands(t, moved.out); !slices.Equal(h["PostToolUse"], []string{`prettier --write "$FILE"`}) || len(h) != 1 {
		t.Errorf("after the move the file still has des's hooks: %v", h)
	}
}

func TestMergeSettingsWhichHooksAreDES(t *testing.T) {
	t.Parallel()
	_, _, own := testParts(t, "des-hook", true, nil, nil)
	pre := own.matchers["PreToolUse"]
	cases := []struct {
		event, matcher, command string
		want                    bool
	}{
		{"PreToolUse", "Bash", "des-hook", true},
		{"PreToolUse", "Bash", "/opt/old/des-hook", true},
		{"PreToolUse", "Bash", "'/home/me/my tools/des-engine'", true},
		{"PreToolUse", "Bash", `C:\tools\des-hook.exe`, false}, // a backslash escapes in a shell word: not a des path
		{"PreToolUse", pre, "/home/me/bin/hook", true},         // the client as go build names it, in des's group
		{"PreToolUse", "Bash", "/home/me/bin/hook", false},     // a script of the user's called hook
		{"PreToolUse", "Bash", "des-hook --verbose", false},
		{"PreToolUse", "Bash", "des-hook; rm -rf /", false},
		{"PostToolUse", "Write", "prettier --write", false},
		{"PreToolUse", "Bash", "my-des-hook-wrapper", false},
	}
	for _, c := range cases {
		if got := own.isHook(c.event, c.matcher, c.command); got != c.want {
			t.Errorf("isHook(%s, %q, %q) = %v, want %v", c.event, c.matcher, c.command, got, c.want)
		}
	}
	for cmd, want := range map[string]bool{
		"des-hook statusline": true, "/old/hook statusline": true, "my-status": false, "des-hook status": false, "des-hook statusline --x": false,
	} {
		if got := own.isStatus(cmd); got != want {
			t.Errorf("isStatus(%q) = %v, want %v", cmd, got, want)
		}
	}
}

func TestMergeSettingsDESHookInsideAUsersGroup(t *testing.T) {
	t.Parallel()
	shared, _, own := testParts(t, "des-hook", true, nil, nil)
	old := `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
		{"type": "command", "command": "audit-bash"},
		{"type": "command", "command": "/old/des-hook"}]}]}}`
	r := mustMerge(t, old, shared, fileRecord{}, own)
	if got := hookCommands(t, r.out)["PreToolUse"]; !slices.Equal(got, []string{"audit-bash", "des-hook"}) {
		t.Errorf("PreToolUse %v: want the user's hook kept in its group, des's own group after", got)
	}
	if again := mustMerge(t, string(r.out), shared, r.record, own); again.out != nil {
		t.Errorf("second merge changed %v", again.changes)
	}
}

func TestMergeSettingsRemovesOnlyWhatDESAdded(t *testing.T) {
	t.Parallel()
	want := desPart{deny: []string{"Edit(/.des/config.json)"}}
	old := `{"permissions": {"deny": ["Edit(/old-policy/**)", "Edit(/mine/**)", "Edit(/.des/config.json)"]}}`
	// des added /old-policy and .des/config.json before; /mine is the user's.
	prev := fileRecord{Deny: []string{"Edit(/old-policy/**)", "Edit(/.des/config.json)"}}
	r := mustMerge(t, old, want, prev, &desOwner{})
	var s struct{ Permissions struct{ Deny []string } }
	if err := json.Unmarshal(r.out, &s); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Permissions.Deny, []string{"Edit(/mine/**)", "Edit(/.des/config.json)"}) {
		t.Errorf("deny %v", s.Permissions.Deny)
	}
	if !slices.Equal(r.record.Deny, []string{"Edit(/.des/config.json)"}) {
		t.Errorf("record %v", r.record.Deny)
	}
	// An entry the user had before des emitted it is never des's: a
	// later run that stops emitting it keeps it.
	userFirst := mustMerge(t, `{"permissions": {"deny": ["Edit(/.des/config.json)"]}}`, want, fileRecord{}, &desOwner{})
	if userFirst.out != nil || len(userFirst.record.Deny) != 0 {
		t.Errorf("the user's own equal entry: changes %v, record %v", userFirst.changes, userFirst.record)
	}
	later := mustMerge(t, `{"permissions": {"deny": ["Edit(/.des/config.json)"]}}`, desPart{}, userFirst.record, &desOwner{})
	if later.out != nil {
		t.Errorf("removed the user's entry: %v", later.changes)
	}
	// A list that held only des's entries goes, with the objects it
	// leaves empty.
	gone := mustMerge(t, `{"a": 1, "permissions": {"deny": ["Edit(/x)"]}}`, desPart{}, fileRecord{Deny: []string{"Edit(/x)"}}, &desOwner{})
	if got := strings.Join(strings.Fields(string(gone.out)), ""); got != `{"a":1}` {
		t.Errorf("after removing des's only entry: %s", gone.out)
	}
}

func TestMergeSettingsStatusLine(t *testing.T) {
	t.Parallel()
	shared, local, own := testParts(t, "des-hook", true, nil, nil)
	r := mustMerge(t, `{"statusLine": {"type": "command", "command": "/old/des-hook statusline"}}`, shared, fileRecord{}, own)
	if !strings.Contains(string(r.out), `"command": "des-hook statusline"`) {
		t.Errorf("des's old status line not replaced:\n%s", r.out)
	}
	// In the other file des's status line goes.
	if r := mustMerge(t, `{"statusLine": {"type": "command", "command": "/old/des-hook statusline"}}`, local, fileRecord{}, own); strings.Contains(string(r.out), "statusLine") {
		t.Errorf("des's status line kept in the file that should not hold it:\n%s", r.out)
	}
	// A user's own is never touched.
	keep := *own
	keep.keepStatus = true
	if r := mustMerge(t, `{"statusLine": {"type": "command", "command": "my-status"}}`, shared, fileRecord{}, &keep); strings.Contains(string(r.out), "des-hook statusline") {
		t.Errorf("replaced the user's status line:\n%s", r.out)
	}
}

func TestMergeSettingsKeepsUsersSandboxChoice(t *testing.T) {
	t.Parallel()
	r := mustMerge(t, `{"sandbox": {"enabled": false}}`, desPart{sandbox: true}, fileRecord{}, &desOwner{})
	if !strings.Contains(string(r.out), `"enabled": false`) || len(r.notes) != 1 || !strings.Contains(r.notes[0], "sandbox.enabled") {
		t.Errorf("out %s, notes %v: want the user's false kept and said", r.out, r.notes)
	}
}

func TestMergeSettingsRefusesWhatItCannotRead(t *testing.T) {
	t.Parallel()
	for _, old := range []string{`[1]`, `{"a": 1} x`, `{"a": `, `{"hooks": []}`, `{"permissions": {"deny": "x"}}`, `{"hooks": {"PreToolUse": {}}}`} {
		if _, err := mergeSettings([]byte(old), desPart{deny: []string{"Edit(/x)"}, hooks: &jsonObject{}}, fileRecord{}, &desOwner{}); err == nil {
			t.Errorf("mergeSettings(%s): no error", old)
		}
	}
	// An empty file is an empty object.
	if r := mustMerge(t, "\n", desPart{deny: []string{"Edit(/x)"}}, fileRecord{}, &desOwner{}); r.out == nil {
		t.Error("an empty file got nothing")
	}
}

func TestShellWords(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][]string{
		"des-hook":                           {"des-hook"},
		"'/a b/des-hook' statusline":         {"/a b/des-hook", "statusline"},
		`"$CLAUDE_PROJECT_DIR"/bin/des-hook`: {"$CLAUDE_PROJECT_DIR/bin/des-hook"},
		`/a\ b/des-hook`:                     {"/a b/des-hook"},
		"  des-hook   statusline ":           {"des-hook", "statusline"},
		"'/it'\\''s/des-hook'":               {"/it's/des-hook"},
		"des-hook && x":                      nil,
		"$(evil)":                            nil,
		"'unbalanced":                        nil,
		"des-hook > /tmp/out":                nil,
	} {
		got, ok := program.ShellWords(in)
		if want == nil {
			if ok {
				t.Errorf("program.ShellWords(%q) = %q, want not simple", in, got)
			}
			continue
		}
		if !ok || !slices.Equal(got, want) {
			t.Errorf("program.ShellWords(%q) = %q %v, want %q", in, got, ok, want)
		}
	}
}

func TestCommandWordRunsExe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exe := dir + "/real/des-hook"
	if err := os.MkdirAll(dir+"/real", 0o755); err != nil {
		t.Fatal(err)
	}
	testenv.WriteExecutable(t, exe, []byte("#!/bin/sh\n"))
	if err := os.MkdirAll(dir+"/bin", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(exe, dir+"/bin/des-hook"); err != nil {
		t.Skip("no symbolic links:", err)
	}
	env := envMap{"PATH": "relative:" + dir + "/bin", "HOME": dir}
	for word, want := range map[string]bool{
		"des-hook":                       true, // found on PATH, a link to exe
		"~/real/des-hook":                true,
		"$CLAUDE_PROJECT_DIR/des-hook":   true, // root is dir/real
		dir + "/bin/des-hook":            true,
		"other":                          false,
		dir + "/real/missing":            false,
		"${CLAUDE_PROJECT_DIR}/../bin/x": false,
	} {
		if got := program.CommandWordRunsExe(word, exe, dir+"/real", env.lookup); got != want {
			t.Errorf("program.CommandWordRunsExe(%q) = %v, want %v", word, got, want)
		}
	}
}
