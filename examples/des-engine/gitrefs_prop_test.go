package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/internal/statedir"
	"github.com/deterministic-exec/des/internal/testenv"
)

// A property of des's git guards: whatever sequence of git commands an
// agent runs through Claude Code (PreToolUse, the command, PostToolUse;
// branch, commit with and without hooks, commit-tree and update-ref,
// checkout, stash, reset, tag), no branch or tag ever points at a commit
// holding an unfinished step, and an honest commit of a finished step
// still lands. Seeds are fixed by default (2, and 16 with
// DES_TEST_LONG=1); DES_GITREFS_SEED=N replays one.
func TestGitRefsProperty(t *testing.T) {
	t.Parallel()
	seeds := []uint64{1, 2}
	if testenv.IsLong() {
		for s := uint64(3); s <= 16; s++ {
			seeds = append(seeds, s)
		}
	}
	if v := os.Getenv("DES_GITREFS_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("DES_GITREFS_SEED=%q: %v", v, err)
		}
		seeds = []uint64{n}
	}
	unfinished := finishedStep(t, "IN_PROGRESS")
	finished := finishedStep(t, "EXECUTED")
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, 0x5eed))
			root := refProject(t)
			branches := []string{"master"}
			commitTree := "C=$(git commit-tree $(git write-tree) -p HEAD -m ct)"
			// The contents of the step the work tree held when a git
			// command ran: what des must never lose. (A content the author
			// overwrote with their own next write is theirs to drop.)
			wrote := map[string]bool{finished: true}
			ops := []func() string{
				func() string { writeFile(t, root, stepPath, unfinished); return "write unfinished" },
				func() string { writeFile(t, root, stepPath, finished); return "write finished" },
				func() string { return "git add -A && git commit -qm c" },
				func() string { return "git add -A && git commit -qn -m n" },
				func() string { return "git -c core.hooksPath=/dev/null commit -qam off" },
				func() string {
					return "git add -A && " + commitTree + " && git update-ref refs/heads/" + pick(rng, branches) + " $C"
				},
				func() string { return "git add -A && " + commitTree + " && git reset -q --soft $C" },
				func() string {
					b := "b" + strconv.Itoa(rng.IntN(4))
					if !contains(branches, b) {
						branches = append(branches, b)
					}
					return "git checkout -q -B " + b
				},
				func() string { return "git checkout -q " + pick(rng, branches) },
				func() string { return "git stash -q" },
				func() string { return "git stash pop -q" },
				func() string { return "git update-ref refs/heads/" + pick(rng, branches) + " $(git stash create)" },
				func() string {
					return "git tag -f t" + strconv.Itoa(rng.IntN(3)) + " $(git stash create || git rev-parse HEAD)"
				},
				func() string { return "git reset -q --hard " + pick(rng, branches) },
			}
			var log []string
			for i := 0; i < 30; i++ {
				op := ops[rng.IntN(len(ops))]()
				log = append(log, op)
				if !strings.HasPrefix(op, "write ") {
					if data, err := os.ReadFile(filepath.Join(root, stepPath)); err == nil {
						wrote[string(data)] = true
					}
					agentBash(t, root, root, op)
				}
				if bad := landedUnfinished(t, root, unfinished); len(bad) > 0 {
					t.Fatalf("seed %d: after\n  %s\n%v hold the unfinished step (DES_GITREFS_SEED=%d replays it)", seed, strings.Join(log, "\n  "), bad, seed)
				}
			}
			// Nothing is lost: every content the step held is on disk, in
			// git's object store, or among des's kept copies.
			for content := range wrote {
				if onDisk := fileText(t, root, stepPath) == content; onDisk {
					continue
				}
				blob := strings.TrimSpace(runGitStdin(t, root, content, "hash-object", "--stdin"))
				if _, code := gitRun(t, root, "cat-file", "-e", blob); code == 0 {
					continue
				}
				sum := sha256.Sum256([]byte(content))
				kept := filepath.Join(statedir.For(root, envMap(envToMap(cleanEnviron())).lookup), "integrity", "kept", hex.EncodeToString(sum[:]))
				if _, err := os.Stat(kept); err == nil {
					continue
				}
				t.Errorf("seed %d: a content of the step is lost (not on disk, in git or kept) after\n  %s", seed, strings.Join(log, "\n  "))
			}
			// An honest commit of a finished step still lands.
			runAgentBash(t, root, "git checkout -q -B honest master")
			writeFile(t, root, stepPath, finished)
			writeFile(t, root, "honest.txt", strconv.Itoa(int(seed)))
			if out, code := runAgentBash(t, root, "git add -A && git commit -qm honest"); code != 0 {
				t.Fatalf("seed %d: an honest commit was refused after\n  %s\n%s", seed, strings.Join(log, "\n  "), out)
			}
		})
	}
}

func pick(rng *rand.Rand, xs []string) string { return xs[rng.IntN(len(xs))] }

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// runGitStdin runs git in dir with stdin, returning its output.
func runGitStdin(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = cleanEnviron()
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return string(out)
}
