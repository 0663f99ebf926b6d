package des

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/deterministic-exec/des/policy"
)

// cacheEnv is a fixed environment whose state directory is the test's own.
func cacheEnv(t *testing.T, extra map[string]string) func(string) (string, bool) {
	t.Helper()
	m := map[string]string{"DES_STATE_DIR": t.TempDir()}
	for k, v := range extra {
		m[k] = v
	}
	return env(m)
}

func cachedEngine(t *testing.T, c *PolicyCache, root string, lookup func(string) (string, bool), opts ...Option) *Engine {
	t.Helper()
	e, err := New(t.Context(), append([]Option{WithRoot(root), WithEnv(lookup), WithPolicyCache(c)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func policyOf(t *testing.T, e *Engine) *policy.Engine {
	t.Helper()
	pe, err := e.Policy(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return pe
}

func wantStats(t *testing.T, c *PolicyCache, want PolicyCacheStats) {
	t.Helper()
	if got := c.Stats(); got != want {
		t.Errorf("stats = %+v, want %+v", got, want)
	}
}

// teamPolicy writes a tool_use rule that denies every write with code.
func teamPolicy(t *testing.T, root, file, code string) string {
	t.Helper()
	dir := filepath.Join(root, ".des", "policies")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, file)
	src := fmt.Sprintf("package des.gates.tool_use\n\ndeny contains {\"code\": %q, \"msg\": \"team rule\"} if {\n\tsome w in input.writes\n\tw.path == \"team.txt\"\n}\n", code)
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func teamCodes(t *testing.T, e *Engine) []string {
	t.Helper()
	d, err := e.Evaluate(t.Context(), policy.ToolUse, map[string]any{"writes": []any{map[string]any{"path": "team.txt", "tool": "Write"}}})
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, v := range d.Deny {
		codes = append(codes, v.Code)
	}
	return codes
}

func TestPolicyCacheSameSourcesCompileOnce(t *testing.T) {
	t.Parallel()
	c := NewPolicyCache(8)
	lookup := cacheEnv(t, nil)
	a, b := t.TempDir(), t.TempDir()
	ea := cachedEngine(t, c, a, lookup)
	wantStats(t, c, PolicyCacheStats{Compiles: 1, Len: 1})
	ea2 := cachedEngine(t, c, a, lookup)
	wantStats(t, c, PolicyCacheStats{Hits: 1, Compiles: 1, Len: 1})
	if policyOf(t, ea) != policyOf(t, ea2) {
		t.Error("same project, same sources: two policy engines")
	}
	// Another project: its state directory differs (data.des.config), the
	// sources do not. Its engine shares the compiled policies.
	eb := cachedEngine(t, c, b, lookup)
	wantStats(t, c, PolicyCacheStats{Hits: 1, Compiles: 1, Derived: 1, Len: 2})
	if policyOf(t, eb) == policyOf(t, ea) {
		t.Error("two projects share one policy engine, and so one state_dir")
	}
	sa, _ := policyOf(t, ea).Data("des.config.state_dir")
	sb, _ := policyOf(t, eb).Data("des.config.state_dir")
	if sa == sb || sa != filepath.ToSlash(ea.StateDir()) || sb != filepath.ToSlash(eb.StateDir()) {
		t.Errorf("state_dir: %v and %v, want %s and %s", sa, sb, ea.StateDir(), eb.StateDir())
	}
	// The per-request parts are each Engine's own.
	if ea.Root() == eb.Root() || ea.Audit() == eb.Audit() || ea.Audit() == ea2.Audit() {
		t.Error("root or audit trail shared between Engines")
	}
}

func TestPolicyCacheChangedFileRecompiles(t *testing.T) {
	t.Parallel()
	c := NewPolicyCache(8)
	lookup := cacheEnv(t, nil)
	root := t.TempDir()
	p := teamPolicy(t, root, "team.rego", "TEAM-A")
	e := cachedEngine(t, c, root, lookup)
	if got := teamCodes(t, e); !reflect.DeepEqual(got, []string{"TEAM-A"}) {
		t.Fatalf("codes = %v", got)
	}
	// Same size, new content, modification time moved on.
	fi, _ := os.Stat(p)
	teamPolicy(t, root, "team.rego", "TEAM-B")
	if err := os.Chtimes(p, fi.ModTime().Add(time.Second), fi.ModTime().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	e = cachedEngine(t, c, root, lookup)
	wantStats(t, c, PolicyCacheStats{Compiles: 2, Len: 2})
	if got := teamCodes(t, e); !reflect.DeepEqual(got, []string{"TEAM-B"}) {
		t.Errorf("after the change: codes = %v, want [TEAM-B]", got)
	}
	// Same size, modification time put back (as cp -p or touch -r would):
	// the change time still moves.
	fi, _ = os.Stat(p)
	teamPolicy(t, root, "team.rego", "TEAM-D")
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	e = cachedEngine(t, c, root, lookup)
	wantStats(t, c, PolicyCacheStats{Compiles: 3, Len: 3})
	if got := teamCodes(t, e); !reflect.DeepEqual(got, []string{"TEAM-D"}) {
		t.Errorf("after a change that kept the modification time: codes = %v, want [TEAM-D]", got)
	}
	teamPolicy(t, root, "team.rego", "TEAM-B")
	// A new file.
	teamPolicy(t, root, "more.rego", "TEAM-C")
	e = cachedEngine(t, c, root, lookup)
	wantStats(t, c, PolicyCacheStats{Compiles: 4, Len: 4})
	if got := teamCodes(t, e); !reflect.DeepEqual(got, []string{"TEAM-B", "TEAM-C"}) {
		t.Errorf("after a new file: codes = %v, want [TEAM-B TEAM-C]", got)
	}
	// A removed file.
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	e = cachedEngine(t, c, root, lookup)
	wantStats(t, c, PolicyCacheStats{Compiles: 5, Len: 5})
	if got := teamCodes(t, e); !reflect.DeepEqual(got, []string{"TEAM-C"}) {
		t.Errorf("after a removal: codes = %v, want [TEAM-C]", got)
	}
}

func TestPolicyCacheCheckoutsShareTeamPolicies(t *testing.T) {
	t.Parallel()
	c := NewPolicyCache(8)
	lookup := cacheEnv(t, nil)
	a, b, other := t.TempDir(), t.TempDir(), t.TempDir()
	teamPolicy(t, a, "team.rego", "TEAM-A")
	teamPolicy(t, b, "team.rego", "TEAM-A")
	teamPolicy(t, other, "team.rego", "TEAM-O")
	ea := cachedEngine(t, c, a, lookup)
	eb := cachedEngine(t, c, b, lookup)
	// Two checkouts, the same policies under the same names: one compilation.
	wantStats(t, c, PolicyCacheStats{Compiles: 1, Derived: 1, Len: 2})
	for _, e := range []*Engine{ea, eb} {
		if got := teamCodes(t, e); !reflect.DeepEqual(got, []string{"TEAM-A"}) {
			t.Errorf("%s: codes = %v, want [TEAM-A]", e.Root(), got)
		}
		cat, err := e.Catalogue(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, r := range cat {
			if r.Code == "TEAM-A" {
				found = true
				if want := filepath.Join(".des", "policies", "team.rego") + ":3"; r.Location != want {
					t.Errorf("%s: TEAM-A at %q, want %q", e.Root(), r.Location, want)
				}
			}
		}
		if !found {
			t.Errorf("%s: TEAM-A is not in the catalogue", e.Root())
		}
	}
	// An editor's swap file beside the policy is no policy: nothing to compile.
	if err := os.WriteFile(filepath.Join(b, ".des", "policies", ".team.rego.swp"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	cachedEngine(t, c, b, lookup)
	wantStats(t, c, PolicyCacheStats{Hits: 1, Compiles: 1, Derived: 1, Len: 2})
	// Other content under the same name compiles on its own.
	eo := cachedEngine(t, c, other, lookup)
	wantStats(t, c, PolicyCacheStats{Hits: 1, Compiles: 2, Derived: 1, Len: 3})
	if got := teamCodes(t, eo); !reflect.DeepEqual(got, []string{"TEAM-O"}) {
		t.Errorf("codes = %v, want [TEAM-O]", got)
	}
	// Directories outside the project go by their absolute path: the same
	// content in two of them is two compilations, each naming its own.
	x, y := t.TempDir(), t.TempDir()
	teamPolicy(t, x, "team.rego", "TEAM-X")
	teamPolicy(t, y, "team.rego", "TEAM-X")
	for _, d := range []string{x, y} {
		cachedEngine(t, c, a, lookup, WithPolicyDirs(filepath.Join(d, ".des", "policies")))
	}
	wantStats(t, c, PolicyCacheStats{Hits: 1, Compiles: 4, Derived: 1, Len: 5})
}

func TestPolicyCacheChangedSetting(t *testing.T) {
	t.Parallel()
	c := NewPolicyCache(8)
	root := t.TempDir()
	state := t.TempDir()
	e1 := cachedEngine(t, c, root, env(map[string]string{"DES_STATE_DIR": state}))
	e2 := cachedEngine(t, c, root, env(map[string]string{"DES_STATE_DIR": state, "DES_STALE_THRESHOLD_MINUTES": "7"}))
	wantStats(t, c, PolicyCacheStats{Compiles: 1, Derived: 1, Len: 2})
	v1, _ := policyOf(t, e1).Data("des.config.stale_threshold_minutes")
	v2, _ := policyOf(t, e2).Data("des.config.stale_threshold_minutes")
	if fmt.Sprint(v2) != "7" || fmt.Sprint(v1) == "7" {
		t.Errorf("stale_threshold_minutes = %v then %v, want the default then 7", v1, v2)
	}
	// The settings file too.
	writeConfig(t, root, `{"stale_threshold_minutes": 9}`)
	e3 := cachedEngine(t, c, root, env(map[string]string{"DES_STATE_DIR": state}))
	if v, _ := policyOf(t, e3).Data("des.config.stale_threshold_minutes"); fmt.Sprint(v) != "9" {
		t.Errorf("after the settings file changed: %v, want 9", v)
	}
	wantStats(t, c, PolicyCacheStats{Compiles: 1, Derived: 2, Len: 3})
}

func TestPolicyCacheBound(t *testing.T) {
	t.Parallel()
	c := NewPolicyCache(2)
	lookup := cacheEnv(t, nil)
	roots := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	for _, r := range roots {
		cachedEngine(t, c, r, lookup)
	}
	wantStats(t, c, PolicyCacheStats{Compiles: 1, Derived: 2, Evicted: 1, Len: 2})
	cachedEngine(t, c, roots[2], lookup) // most recent: kept
	cachedEngine(t, c, roots[0], lookup) // least recent: dropped, built again from a kept entry
	wantStats(t, c, PolicyCacheStats{Hits: 1, Compiles: 1, Derived: 3, Evicted: 2, Len: 2})
}

func TestPolicyCacheConcurrent(t *testing.T) {
	t.Parallel()
	c := NewPolicyCache(8)
	lookup := cacheEnv(t, nil)
	var roots []string
	for range 5 {
		roots = append(roots, t.TempDir())
	}
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for i := range 50 {
		wg.Go(func() {
			e, err := New(t.Context(), WithRoot(roots[i%5]), WithEnv(lookup), WithPolicyCache(c))
			if err == nil {
				_, err = e.Evaluate(t.Context(), policy.ToolUse, map[string]any{"writes": []any{map[string]any{"path": ".des/config.json", "tool": "Write"}}})
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	wantStats(t, c, PolicyCacheStats{Hits: 45, Compiles: 1, Derived: 4, Len: 5})
}

func TestPolicyCacheDecisionsAsUncached(t *testing.T) {
	t.Parallel()
	lookup := cacheEnv(t, nil)
	root := t.TempDir()
	teamPolicy(t, root, "team.rego", "TEAM-A")
	plain, err := New(t.Context(), WithRoot(root), WithEnv(lookup))
	if err != nil {
		t.Fatal(err)
	}
	c := NewPolicyCache(4)
	cachedEngine(t, c, t.TempDir(), lookup) // a project without team policies first
	cached := cachedEngine(t, c, root, lookup, WithLazyPolicies())
	inputs := map[policy.Gate]any{
		policy.ToolUse: map[string]any{"writes": []any{
			map[string]any{"path": "team.txt", "tool": "Write"},
			map[string]any{"path": ".des/policies/x.rego", "tool": "Edit"},
			map[string]any{"path": filepath.ToSlash(plain.StateDir()) + "/x", "tool": "Write"},
		}},
		policy.PreInvocation: map[string]any{"prompt": "no markers"},
		policy.PreCommit:     map[string]any{},
		policy.DocumentWrite: map[string]any{"path": "steps/01-01.json"},
	}
	for g, in := range inputs {
		want, werr := plain.Evaluate(t.Context(), g, in)
		got, gerr := cached.Evaluate(t.Context(), g, in)
		if fmt.Sprint(werr) != fmt.Sprint(gerr) || !reflect.DeepEqual(want, got) {
			t.Errorf("gate %s: cached %+v, %v; uncached %+v, %v", g, got, gerr, want, werr)
		}
	}
	if d, _ := cached.Evaluate(t.Context(), policy.ToolUse, inputs[policy.ToolUse]); len(d.Deny) < 3 {
		t.Errorf("tool_use denied %d writes, want 3 (team rule, policy dir, state dir)", len(d.Deny))
	}
}

func TestPolicyCacheCompileErrorEachTime(t *testing.T) {
	t.Parallel()
	c := NewPolicyCache(4)
	lookup := cacheEnv(t, nil)
	root := t.TempDir()
	dir := filepath.Join(root, ".des", "policies")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bad.rego"), []byte("package des.gates.pre_commit\n\ndeny contains x if {\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(".des", "policies", "bad.rego")
	for i := range 3 {
		_, err := New(t.Context(), WithRoot(root), WithEnv(lookup), WithPolicyCache(c))
		var pe policy.Errors
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), bad+":4:") {
			t.Fatalf("call %d: err = %v, want policy.Errors at %s:4", i, err, bad)
		}
	}
	wantStats(t, c, PolicyCacheStats{Hits: 2, Compiles: 1, Len: 1})
	// Fixed, it compiles again.
	teamPolicy(t, root, "bad.rego", "FIXED")
	cachedEngine(t, c, root, lookup)
	wantStats(t, c, PolicyCacheStats{Hits: 2, Compiles: 2, Len: 2})
}

func TestPolicyCacheBundlesAndFileSystems(t *testing.T) {
	t.Parallel()
	c := NewPolicyCache(8)
	lookup := cacheEnv(t, nil)
	root := t.TempDir()
	src, err := os.ReadFile("policy/testdata/team-bundle.tar.gz")
	if err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(t.TempDir(), "team.tar.gz")
	if err := os.WriteFile(bundle, src, 0o644); err != nil {
		t.Fatal(err)
	}
	rule := func(code string) fstest.MapFS {
		return fstest.MapFS{"team.rego": {Data: fmt.Appendf(nil, "package des.gates.tool_use\n\ndeny contains {\"code\": %q, \"msg\": \"fs rule\"} if {\n\tsome w in input.writes\n\tw.path == \"team.txt\"\n}\n", code)}}
	}
	build := func(fsys fstest.MapFS) *Engine {
		return cachedEngine(t, c, root, lookup, WithBundles(bundle), WithPolicyFS("embedded", fsys))
	}
	build(rule("FS-A"))
	build(rule("FS-A")) // the same content in another file system value
	wantStats(t, c, PolicyCacheStats{Hits: 1, Compiles: 1, Len: 1})
	if got := teamCodes(t, build(rule("FS-B"))); !reflect.DeepEqual(got, []string{"FS-B"}) {
		t.Errorf("file system changed: codes = %v, want [FS-B]", got)
	}
	wantStats(t, c, PolicyCacheStats{Hits: 1, Compiles: 2, Len: 2})
	// The bundle replaced by another file (a new inode).
	tmp := bundle + ".new"
	if err := os.WriteFile(tmp, src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, bundle); err != nil {
		t.Fatal(err)
	}
	build(rule("FS-B"))
	wantStats(t, c, PolicyCacheStats{Hits: 1, Compiles: 3, Len: 3})
}
