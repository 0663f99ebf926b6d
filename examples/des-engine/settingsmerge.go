package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/deterministic-exec/des/internal/program"
)

// desPart is what des puts into one Claude Code settings file.
type desPart struct {
	// hooks is the hooks object des installs, one group per event in
	// des's order; nil when des's hooks belong in the other file.
	hooks *jsonObject
	// statusLine is des's status line; nil when it belongs elsewhere.
	statusLine json.RawMessage
	// deny and denyWrite are permissions.deny and
	// sandbox.filesystem.denyWrite entries.
	deny, denyWrite []string
	// sandbox: sandbox.enabled and allowUnsandboxedCommands go here.
	sandbox bool
	// keepHooks leaves the file's hooks and statusLine as they are: the
	// team's portable des-hook entries this machine cannot run as written.
	keepHooks bool
}

// fileRecord is what des added to one settings file: the entries a later
// run may remove when des no longer emits them. An entry that was there
// before des wrote it is the user's and never recorded.
type fileRecord struct {
	Deny      []string `json:"deny,omitempty"`
	DenyWrite []string `json:"denyWrite,omitempty"`
}

// settingsChange is one line of what --write changed in a file.
type settingsChange struct {
	verb  string // added, replaced, removed
	key   string // hooks.PreToolUse, permissions.deny, ...
	value string
}

func (c settingsChange) String() string {
	return fmt.Sprintf("%-8s %s: %s", c.verb, c.key, c.value)
}

// desOwner tells des's entries from the user's in a settings file.
type desOwner struct {
	// command is the hook command des writes now; recorded are the
	// commands an earlier --write wrote (hooks and status line).
	command  string
	recorded []string
	// runsThis reports whether a command's program is this des-hook.
	runsThis func(word string) bool
	// matchers are des's matcher per event ("" for events without one).
	matchers map[string]string
	// keepStatus: a statusLine of the user's own exists in one of the
	// files; des then installs none and leaves both files' statusLine be.
	keepStatus bool
}

// desProgramName is a program's base name without .exe, lower case for
// Windows file systems.
func desProgramName(word string) string {
	base := word
	if i := strings.LastIndexAny(word, `/\`); i >= 0 {
		base = word[i+1:]
	}
	return strings.TrimSuffix(strings.ToLower(base), ".exe")
}

// isHook reports whether a hook command in event's group with matcher is
// des's own. des's hook entries are the bare program, no arguments: the
// command des writes now or wrote before, a program that is this des-hook,
// one named des-hook or des-engine (an older install elsewhere: an
// upgrade replaces it), or one named hook (what `go build ./examples/hook`
// names the client) only in a group with des's exact matcher for the
// event, so that a user's own script called hook stays.
func (o *desOwner) isHook(event, matcher, command string) bool {
	if command == o.command || slices.Contains(o.recorded, command) {
		return true
	}
	words, ok := program.ShellWords(command)
	if !ok || len(words) != 1 {
		return false
	}
	if o.runsThis != nil && o.runsThis(words[0]) {
		return true
	}
	switch desProgramName(words[0]) {
	case "des-hook", "des-engine":
		return true
	case "hook":
		m, ok := o.matchers[event]
		return ok && m == matcher
	}
	return false
}

// isStatus reports whether a statusLine command is des's: the program as
// isHook takes it (hook included: the subcommand makes it specific) and
// the one argument statusline.
func (o *desOwner) isStatus(command string) bool {
	if slices.Contains(o.recorded, command) || command == o.command+" statusline" {
		return true
	}
	words, ok := program.ShellWords(command)
	if !ok || len(words) != 2 || words[1] != "statusline" {
		return false
	}
	if o.runsThis != nil && o.runsThis(words[0]) {
		return true
	}
	switch desProgramName(words[0]) {
	case "des-hook", "des-engine", "hook":
		return true
	}
	return false
}

// statusCommand is the command of a statusLine value, "" when it has none.
func statusCommand(raw json.RawMessage) string {
	var s struct {
		Command string `json:"command"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s.Command
}

// mergeResult is mergeSettings' answer for one file.
type mergeResult struct {
	out     []byte // the new file; nil when nothing changed
	changes []settingsChange
	notes   []string
	record  fileRecord
}

// mergeSettings merges want into a settings file's content (nil: no file):
// des's hook entries (own.isHook) are taken out wherever they are and
// want's put in their place, or appended; des's statusLine is set unless
// the user has one; the deny lists keep every entry and order, lose the
// entries prev says des added and des no longer emits, and gain the
// missing ones at their end; sandbox.enabled and allowUnsandboxedCommands
// are set when absent, a user's value kept. Every other key is untouched,
// and the keys keep their order. Nothing changed gives a nil out.
func mergeSettings(old []byte, want desPart, prev fileRecord, own *desOwner) (mergeResult, error) {
	var r mergeResult
	doc, err := parseJSONObject(old)
	if err != nil {
		return r, fmt.Errorf("not a JSON object des can merge into: %w", err)
	}
	if !want.keepHooks {
		if r.changes, err = mergeHooks(doc, want.hooks, own); err != nil {
			return r, err
		}
		ch, err := mergeStatusLine(doc, want.statusLine, own)
		if err != nil {
			return r, err
		}
		r.changes = append(r.changes, ch...)
	}
	ch, added, err := mergeList(doc, want.deny, prev.Deny, "permissions", "deny")
	if err != nil {
		return r, err
	}
	r.changes, r.record.Deny = append(r.changes, ch...), added
	// The switches before the list, as des prints them.
	if want.sandbox {
		for _, s := range []struct {
			key  string
			want bool
			why  string
		}{
			{"enabled", true, "sandboxed Bash and its denyWrite list are off"},
			{"allowUnsandboxedCommands", false, "a Bash call may ask to run outside the sandbox, past denyWrite"},
		} {
			raw, ok, err := getPath(doc, "sandbox", s.key)
			if err != nil {
				return r, err
			}
			switch {
			case !ok:
				if err := setPath(doc, encodeJSON(s.want), "sandbox", s.key); err != nil {
					return r, err
				}
				r.changes = append(r.changes, settingsChange{"added", "sandbox." + s.key, fmt.Sprint(s.want)})
			case !sameJSON(raw, encodeJSON(s.want)):
				r.notes = append(r.notes, fmt.Sprintf("kept your sandbox.%s: %s (des sets %v; with yours %s)", s.key, raw, s.want, s.why))
			}
		}
	}
	ch, added, err = mergeList(doc, want.denyWrite, prev.DenyWrite, "sandbox", "filesystem", "denyWrite")
	if err != nil {
		return r, err
	}
	r.changes, r.record.DenyWrite = append(r.changes, ch...), added
	if len(r.changes) > 0 {
		if r.out, err = doc.render(); err != nil {
			return r, err
		}
	}
	return r, nil
}

// mergeHooks takes des's hook entries out of every event of doc's hooks
// and puts want's groups in: where des's old group stood, else at the end.
// An event whose des group is already exactly want's is left as written.
func mergeHooks(doc *jsonObject, want *jsonObject, own *desOwner) ([]settingsChange, error) {
	raw, exists, err := getPath(doc, "hooks")
	if err != nil {
		return nil, err
	}
	hooks := &jsonObject{}
	if exists {
		if hooks, err = parseJSONObject(raw); err != nil {
			return nil, fmt.Errorf("hooks is not a JSON object: %w", err)
		}
	}
	if want == nil {
		want = &jsonObject{}
	}
	var changes []settingsChange
	seen := map[string]bool{}
	var emptied []string
	for i := range hooks.members {
		event := hooks.members[i].key
		seen[event] = true
		w, wanted := want.get(event)
		var wantGroup json.RawMessage
		if wanted {
			var gs []json.RawMessage
			if err := json.Unmarshal(w, &gs); err != nil || len(gs) != 1 {
				return nil, fmt.Errorf("des's hooks.%s: want one group", event)
			}
			wantGroup = gs[0]
		}
		var groups []json.RawMessage
		if isNull(hooks.members[i].val) {
			groups = nil
		} else if err := json.Unmarshal(hooks.members[i].val, &groups); err != nil {
			return nil, fmt.Errorf("hooks.%s is not an array", event)
		}
		kept, removedGroups, removedCmds, insertAt, partial := takeOutDES(event, groups, own)
		if len(removedCmds) == 0 && !wanted {
			continue
		}
		if wanted && !partial && len(removedGroups) == 1 && sameJSON(removedGroups[0], wantGroup) {
			continue // already des's entry as des writes it
		}
		newCmd := ""
		if wanted {
			if insertAt < 0 {
				insertAt = len(kept)
			}
			kept = slices.Insert(kept, insertAt, wantGroup)
			newCmd = groupCommand(wantGroup)
		}
		switch {
		case wanted && len(removedCmds) == 0:
			changes = append(changes, settingsChange{"added", "hooks." + event, newCmd})
		case wanted:
			changes = append(changes, settingsChange{"replaced", "hooks." + event, strings.Join(removedCmds, ", ") + " -> " + newCmd})
		default:
			changes = append(changes, settingsChange{"removed", "hooks." + event, strings.Join(removedCmds, ", ")})
		}
		if len(kept) == 0 {
			emptied = append(emptied, event)
			continue
		}
		hooks.members[i].val = encodeRawArray(kept)
	}
	for _, e := range emptied {
		hooks.remove(e)
	}
	for _, m := range want.members {
		if seen[m.key] {
			continue
		}
		hooks.set(m.key, m.val)
		var gs []json.RawMessage
		_ = json.Unmarshal(m.val, &gs)
		cmd := ""
		if len(gs) > 0 {
			cmd = groupCommand(gs[0])
		}
		changes = append(changes, settingsChange{"added", "hooks." + m.key, cmd})
	}
	if len(changes) == 0 {
		return nil, nil
	}
	if len(hooks.members) == 0 {
		doc.remove("hooks")
	} else if err := setPath(doc, hooks.marshal(), "hooks"); err != nil {
		return nil, err
	}
	return changes, nil
}

// takeOutDES removes des's hook entries from an event's groups. A group
// that held only des's entries goes (insertAt is where the first such group
// stood among those kept); one that also held the user's keeps theirs
// (partial). Groups des cannot read are the user's and stay as written.
func takeOutDES(event string, groups []json.RawMessage, own *desOwner) (kept, removedGroups []json.RawMessage, removedCmds []string, insertAt int, partial bool) {
	insertAt = -1
	for _, g := range groups {
		obj, err := parseJSONObject(g)
		if err != nil {
			kept = append(kept, g)
			continue
		}
		var matcher string
		if m, ok := obj.get("matcher"); ok {
			_ = json.Unmarshal(m, &matcher)
		}
		var hs []json.RawMessage
		if h, ok := obj.get("hooks"); !ok || json.Unmarshal(h, &hs) != nil {
			kept = append(kept, g)
			continue
		}
		var rest []json.RawMessage
		for _, h := range hs {
			var hc struct {
				Command string `json:"command"`
			}
			if json.Unmarshal(h, &hc) == nil && hc.Command != "" && own.isHook(event, matcher, hc.Command) {
				removedCmds = append(removedCmds, hc.Command)
				continue
			}
			rest = append(rest, h)
		}
		switch {
		case len(rest) == len(hs):
			kept = append(kept, g)
		case len(rest) == 0:
			if insertAt < 0 {
				insertAt = len(kept)
			}
			removedGroups = append(removedGroups, g)
		default:
			partial = true
			obj.set("hooks", encodeRawArray(rest))
			kept = append(kept, obj.marshal())
		}
	}
	return kept, removedGroups, removedCmds, insertAt, partial
}

// groupCommand is the first hook command of a group, for the report.
func groupCommand(group json.RawMessage) string {
	var g struct {
		Hooks []struct {
			Command string `json:"command"`
		} `json:"hooks"`
	}
	if json.Unmarshal(group, &g) != nil || len(g.Hooks) == 0 {
		return ""
	}
	return g.Hooks[0].Command
}

func encodeRawArray(items []json.RawMessage) json.RawMessage {
	if items == nil {
		items = []json.RawMessage{}
	}
	return encodeJSON(items)
}

// mergeStatusLine sets des's statusLine (want, nil when it belongs in the
// other file), replaces an earlier one of des's, and removes des's from
// the file that should not hold it; a user's own is never touched.
func mergeStatusLine(doc *jsonObject, want json.RawMessage, own *desOwner) ([]settingsChange, error) {
	if own.keepStatus {
		return nil, nil
	}
	raw, exists, err := getPath(doc, "statusLine")
	if err != nil {
		return nil, err
	}
	cur := ""
	if exists {
		cur = statusCommand(raw)
	}
	switch {
	case exists && !own.isStatus(cur):
		return nil, nil // the user's (keepStatus should have said so)
	case want == nil && exists:
		doc.remove("statusLine")
		return []settingsChange{{"removed", "statusLine", cur}}, nil
	case want == nil:
		return nil, nil
	case !exists:
		doc.set("statusLine", want)
		return []settingsChange{{"added", "statusLine", statusCommand(want)}}, nil
	case sameJSON(raw, want):
		return nil, nil
	}
	doc.set("statusLine", want)
	return []settingsChange{{"replaced", "statusLine", cur + " -> " + statusCommand(want)}}, nil
}

// mergeList merges des's entries into the string array at path: the
// user's entries stay in their order, the entries prev says des added and
// des no longer emits go, the missing ones of want are appended. added is
// the new record: des's entries now in the array that des put there.
func mergeList(doc *jsonObject, want, prev []string, path ...string) (changes []settingsChange, added []string, err error) {
	key := strings.Join(path, ".")
	raw, exists, err := getPath(doc, path...)
	if err != nil {
		return nil, nil, err
	}
	var items []json.RawMessage
	if exists {
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, nil, fmt.Errorf("%s is not an array", key)
		}
	}
	var out []json.RawMessage
	present := map[string]bool{}
	for _, it := range items {
		var s string
		if json.Unmarshal(it, &s) == nil {
			if slices.Contains(prev, s) && !slices.Contains(want, s) {
				changes = append(changes, settingsChange{"removed", key, s})
				continue
			}
			present[s] = true
		}
		out = append(out, it)
	}
	for _, w := range want {
		switch {
		case !present[w]:
			out = append(out, encodeJSON(w))
			present[w] = true
			changes = append(changes, settingsChange{"added", key, w})
			added = append(added, w)
		case slices.Contains(prev, w):
			added = append(added, w)
		}
	}
	if len(changes) == 0 {
		return nil, added, nil
	}
	if len(out) == 0 {
		// Only des's entries were there: the key goes, and objects it
		// leaves empty.
		return changes, added, removePath(doc, path...)
	}
	return changes, added, setPath(doc, encodeRawArray(out), path...)
}
