package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README's Gate 2 walk-through, run as written: the step file the
// subagent leaves, the systemMessage the user sees. Lines the README
// shortens ("...") and the transcript path, which is the machine's, are
// the only ones not compared.
func TestReadmeGate2Example(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## Gate 2: when a subagent stops\n")
	if !ok {
		t.Fatal("README has no Gate 2 section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	blocks := regexp.MustCompile("(?s)```(json|text)\n(.*?)```").FindAllStringSubmatch(section, -1)
	if len(blocks) < 2 || blocks[0][1] != "json" || blocks[1][1] != "text" {
		t.Fatalf("README Gate 2 section: want the step file (json) then the systemMessage (text); found %d blocks", len(blocks))
	}
	var left map[string]any
	if err := json.Unmarshal([]byte(blocks[0][2]), &left); err != nil {
		t.Fatalf("README's step file: %v", err)
	}

	root, transcript, env := gate2Project(t)
	// The README's step file, as the subagent wrote it around the guard.
	writeFile(t, root, e2eStep, blocks[0][2])
	out := decodeStop(t, runHookProcess(t, root, env, stopEvent(root, transcript, false)))
	got := strings.Split(out.SystemMessage, "\n")
	i := 0
	for _, want := range strings.Split(strings.TrimRight(blocks[1][2], "\n"), "\n") {
		if want == "- ..." {
			// Shortened: skip to the next line the README shows.
			for i < len(got) && strings.HasPrefix(got[i], "- ") {
				i++
			}
			continue
		}
		if i >= len(got) {
			t.Fatalf("the systemMessage ends before the README's line %q:\n%s", want, out.SystemMessage)
		}
		if strings.HasPrefix(want, "- Read the subagent's transcript ") {
			want = "- Read the subagent's transcript " + transcript + " to see where and why it stopped."
		}
		if got[i] != want {
			t.Errorf("line %d:\n got: %s\nwant: %s", i+1, got[i], want)
		}
		i++
	}
}
