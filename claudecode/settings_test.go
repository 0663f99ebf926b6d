package claudecode

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deterministic-exec/des"
)

// A denyWrite entry whose directory does not exist would keep sandboxed
// Bash from creating that directory (the sandbox pins the first missing
// one): left out, except under .des and .claude. A steps directory that
// holds anything but step files is listed file by file.
func TestSandboxEntriesDoNotBlockHonestWork(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, root, "docs/a/steps/01-01.json", `{"task_id": "01-01", "tdd_cycle": {}}`)
	writeFile(t, root, "docs/b/steps/01-01.json", `{"task_id": "01-01", "tdd_cycle": {}}`)
	writeFile(t, root, "docs/b/steps/README.md", "notes\n")
	p := protectedPaths(des.DefaultConfig(), root, "", "")
	has := func(e string) bool { return slices.Contains(p.denyWrite, e) }
	abs := func(rel string) string { return sandboxPath(filepath.Join(root, rel)) }
	if has("./.isdlc/state.json") {
		t.Errorf("denyWrite lists .isdlc/state.json in a project without .isdlc: sandboxed Bash could not create .isdlc")
	}
	for _, want := range []string{"./.des/config.json", "./.claude/state/active_task_graph.json", abs("docs/a/steps"), abs("docs/b/steps/01-01.json")} {
		if !has(want) {
			t.Errorf("denyWrite lacks %s: %v", want, p.denyWrite)
		}
	}
	if has(abs("docs/b/steps")) {
		t.Errorf("denyWrite lists docs/b/steps, which holds a README too")
	}
	writeFile(t, root, ".isdlc/x", "")
	if p := protectedPaths(des.DefaultConfig(), root, "", ""); !slices.Contains(p.denyWrite, "./.isdlc/state.json") {
		t.Errorf("with .isdlc present, denyWrite lacks .isdlc/state.json: %v", p.denyWrite)
	}
}

// The keys that verify the organisation's bundles are protected in the
// hook (DES-PROTECTED-PATH); Claude Code must be told so too, as it is of
// the policy directories: a sandboxed script that replaces the key would
// have every kept bundle refused, and with it des's decisions.
func TestAttackBundleKeysInClaudeProtections(t *testing.T) {
	t.Parallel()
	cfg := des.DefaultConfig()
	cfg.BundleURLs, cfg.BundlePublicKey, cfg.BundleJWKS, cfg.OPACAFile = []string{"https://b.example/org.tar.gz"}, "keys/acme.pem", "keys/acme.jwks", "certs/opa-ca.pem"
	p := protectedPaths(cfg, "", "", "")
	for _, k := range []string{"keys/acme.pem", "keys/acme.jwks", "certs/opa-ca.pem"} {
		if !slices.Contains(p.denyEdit, settingsPath(k)) || !slices.Contains(p.denyWrite, sandboxPath(k)) {
			t.Errorf("%s: permissions.deny %v, denyWrite %v; want it in both", k, p.denyEdit, p.denyWrite)
		}
	}
	cfg.BundlePublicKey, cfg.BundleJWKS = "", "https://b.example/jwks.json"
	for _, l := range [][]string{protectedPaths(cfg, "", "", "").denyEdit, protectedPaths(cfg, "", "", "").denyWrite} {
		for _, e := range l {
			if strings.Contains(e, "b.example") {
				t.Errorf("a JWKS URL listed as a path: %s", e)
			}
		}
	}
}
