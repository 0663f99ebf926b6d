package main

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/internal/statedir"
	"github.com/deterministic-exec/des/internal/testenv"
)

// The property: honest work never meets DES-INTEGRITY and loses nothing.
// Random sequences of what a developer and an agent do with git (branch,
// commit, checkout, stash, stash pop, reset --hard to a commit that exists,
// an update of the step through the write guard) run as Bash tool calls
// through the built hook; after each, no DES-INTEGRITY, and at the end every
// content the step file held that git or des replaced (not one its author
// overwrote with the next Write) is on disk, in a commit git can still
// reach (branches, the stash, the reflogs), or among des's kept contents.
func TestE2EGitSyncProperty(t *testing.T) {
	t.Parallel()
	seeds, steps := 2, 8
	if testenv.IsLong() {
		seeds, steps = 12, 20
	}
	for seed := range seeds {
		t.Run("seed"+strconv.Itoa(seed), func(t *testing.T) {
			t.Parallel()
			gitSyncSequence(t, uint64(seed), steps)
		})
	}
}

func gitSyncSequence(t *testing.T, seed uint64, steps int) {
	root := gsProject(t)
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	branches := []string{"main", "feat"}
	seen := map[string]bool{}
	var log []string
	observe := func() {
		if data, err := os.ReadFile(filepath.Join(root, effStep)); err == nil {
			seen[string(data)] = true
		}
	}
	observe()
	call := func(n int, command string) {
		t.Helper()
		id := fmt.Sprintf("toolu_%d", n)
		_, post := bashToolCall(t, root, id, command)
		log = append(log, command)
		if post.Decision != "" || strings.Contains(post.Reason+post.Specific.AdditionalContext, "DES-INTEGRITY") {
			t.Fatalf("seed %d: honest work was reported after %q:\n%s\nsequence:\n%s", seed, command, post.Reason, strings.Join(log, "\n"))
		}
	}
	for n := range steps {
		switch op := rng.IntN(7); op {
		case 0: // the agent updates the step through the write guard
			content := gsStepOf(fmt.Sprintf("seed %d write %d", seed, n))
			// The author replaces their own content: that one is theirs to
			// drop, not git's or des's.
			if data, err := os.ReadFile(filepath.Join(root, effStep)); err == nil {
				delete(seen, string(data))
			}
			allowedWrite(t, root, effStep, content)
			log = append(log, "Write "+effStep)
			seen[content] = true
		case 1:
			b := fmt.Sprintf("b%d", n)
			call(n, "git branch "+b)
			branches = append(branches, b)
		case 2:
			call(n, "git commit -qam 'work "+strconv.Itoa(n)+"' --no-verify")
		case 3: // refused by git when local changes would be overwritten
			call(n, "git checkout -q "+branches[rng.IntN(len(branches))])
		case 4:
			call(n, "git stash -q")
		case 5: // popped where it was made: a pop that conflicts is not honest work's
			base, code := gitRun(t, root, "rev-parse", "-q", "--verify", "stash@{0}^1")
			if code != 0 || strings.TrimSpace(base) != headOf(t, root, "HEAD") {
				continue
			}
			call(n, "git stash pop -q")
		case 6:
			commits := strings.Fields(git(t, root, "rev-list", "--all"))
			call(n, "git reset -q --hard "+commits[rng.IntN(len(commits))])
		}
		observe()
	}

	// Nothing lost.
	reachable := map[string]bool{}
	for _, line := range strings.Split(git(t, root, "rev-list", "--all", "--reflog", "--objects"), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			reachable[f[0]] = true
		}
	}
	kept := map[string]bool{}
	stateDir := statedir.For(root, func(k string) (string, bool) {
		if k == "DES_STATE_DIR" {
			return testStateDir, true
		}
		return "", false
	})
	if data, err := os.ReadFile(filepath.Join(stateDir, "integrity", "kept", "index.json")); err == nil {
		var list []struct {
			SHA256 string `json:"sha256"`
		}
		if err := json.Unmarshal(data, &list); err != nil {
			t.Fatal(err)
		}
		for _, k := range list {
			kept[k.SHA256] = true
		}
	}
	disk, _ := os.ReadFile(filepath.Join(root, effStep))
	for content := range seen {
		h := sha1.Sum([]byte("blob " + strconv.Itoa(len(content)) + "\x00" + content))
		s := sha256.Sum256([]byte(content))
		if content != string(disk) && !reachable[hex.EncodeToString(h[:])] && !kept[hex.EncodeToString(s[:])] {
			t.Errorf("seed %d: the step content %q is lost: not on disk, in no commit git reaches, not kept\nsequence:\n%s", seed, content, strings.Join(log, "\n"))
		}
	}
}
