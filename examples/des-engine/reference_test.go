package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/deterministic-exec/des/audit"
)

// referenceDoc is docs/reference.md, seen from this package's directory.
const referenceDoc = "../../docs/reference.md"

// markdownTable returns the rows of the first table under the heading
// (a line equal to heading), each row's cells trimmed, header and rule
// left out. Code spans keep their backquotes; "\|" is a literal bar.
func markdownTable(t *testing.T, doc, heading string) [][]string {
	t.Helper()
	lines := strings.Split(doc, "\n")
	start := slices.Index(lines, heading)
	if start < 0 {
		t.Fatalf("%s has no heading %q", referenceDoc, heading)
	}
	var rows [][]string
	inTable := false
	for _, l := range lines[start+1:] {
		if strings.HasPrefix(l, "## ") {
			break
		}
		if !strings.HasPrefix(l, "|") {
			if inTable {
				break
			}
			continue
		}
		if !inTable { // the header row; the rule follows
			inTable = true
			continue
		}
		if strings.HasPrefix(l, "|---") {
			continue
		}
		cells := strings.Split(strings.ReplaceAll(strings.Trim(l, "|"), `\|`, "\x00"), "|")
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(strings.TrimSpace(c), "\x00", "|")
		}
		rows = append(rows, cells)
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no table under %q", referenceDoc, heading)
	}
	return rows
}

// gatesOf maps each Rego package to the gates whose entry package reads
// it, from the built-in rego/des/gates/*.rego.
func gatesOf(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob("../../rego/des/gates/*.rego")
	if err != nil || len(files) == 0 {
		t.Fatalf("no gate packages (%v)", err)
	}
	ref := regexp.MustCompile(`data\.(des(?:\.[a-z0-9_]+)+)`)
	reads := map[string][]string{} // gate -> data paths it reads
	for _, f := range files {
		if strings.HasSuffix(f, "_test.rego") {
			continue
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		gate := strings.TrimSuffix(filepath.Base(f), ".rego")
		for _, m := range ref.FindAllStringSubmatch(string(raw), -1) {
			reads[gate] = append(reads[gate], m[1])
		}
	}
	return reads
}

// inGate reports whether gate reads package pkg.
func inGate(reads map[string][]string, gate, pkg string) bool {
	for _, p := range reads[gate] {
		if p == pkg || strings.HasPrefix(p, pkg+".") {
			return true
		}
	}
	return false
}

// The code table of docs/reference.md is the catalogue of the built-in
// policies: the same codes, packages and severities as `des-hook policies
// --json` in a project with no team policy, and each row's gates read its
// package.
func TestReferenceCodesMatchCatalogue(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	res := runBinCLI(t, root, "policies", "--json")
	if res.code != 0 {
		t.Fatalf("policies --json: exit %d\n%s", res.code, res.stderr)
	}
	var cat []struct{ Code, Severity, Package string }
	if err := json.Unmarshal([]byte(res.stdout), &cat); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(referenceDoc)
	if err != nil {
		t.Fatal(err)
	}
	rows := markdownTable(t, string(raw), "## Violation codes")
	reads := gatesOf(t)

	type key struct{ code, pkg string }
	documented := map[key]string{}
	for _, r := range rows {
		if len(r) != 5 {
			t.Errorf("code row with %d cells, want 5 (code, severity, package, gate, when): %v", len(r), r)
			continue
		}
		code, sev, pkg, gates, when := r[0], r[1], strings.Trim(r[2], "`"), r[3], r[4]
		if when == "" {
			t.Errorf("%s (%s): no \"when\"", code, pkg)
		}
		if pkg == "(Go)" {
			if code != "DES-INTERNAL" {
				t.Errorf("%s is documented as produced by Go; only DES-INTERNAL is", code)
			}
			continue
		}
		k := key{code, pkg}
		if _, dup := documented[k]; dup {
			t.Errorf("%s (%s) is documented twice", code, pkg)
		}
		documented[k] = sev
		for _, g := range strings.Split(gates, ",") {
			g = strings.TrimSpace(g)
			if i := strings.Index(g, " ("); i >= 0 {
				g = g[:i] // "tool_use (PostToolUse)"
			}
			if !inGate(reads, g, pkg) {
				t.Errorf("%s: the row says gate %q, but rego/des/gates/%s.rego does not read %s", code, g, g, pkg)
			}
		}
	}
	seen := map[key]bool{}
	for _, c := range cat {
		k := key{c.Code, c.Package}
		seen[k] = true
		sev, ok := documented[k]
		switch {
		case !ok:
			t.Errorf("%s (%s, %s) is in the catalogue but not in %s; add a row", c.Code, c.Package, c.Severity, referenceDoc)
		case sev != c.Severity:
			t.Errorf("%s (%s): %s says %s, the policy says %s", c.Code, c.Package, referenceDoc, sev, c.Severity)
		}
	}
	for k := range documented {
		if !seen[k] {
			t.Errorf("%s (%s) is documented in %s but no built-in rule yields it", k.code, k.pkg, referenceDoc)
		}
	}
}

// The audit event table of docs/reference.md lists every event type with
// exactly the fields its schema requires, and only fields the schema names.
func TestReferenceAuditEventsMatchSchemas(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(referenceDoc)
	if err != nil {
		t.Fatal(err)
	}
	rows := markdownTable(t, string(raw), "## Audit trail")
	fields := func(cell string) []string {
		var out []string
		for _, f := range strings.Split(cell, ",") {
			if f = strings.Trim(strings.TrimSpace(f), "`"); f != "" && f != "—" {
				out = append(out, f)
			}
		}
		slices.Sort(out)
		return out
	}
	var documented []string
	for _, r := range rows {
		if len(r) != 4 {
			t.Errorf("event row with %d cells, want 4: %v", len(r), r)
			continue
		}
		event := strings.Trim(r[0], "`")
		documented = append(documented, event)
		var schema struct {
			Required   []string                   `json:"required"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(audit.Schema(audit.EventType(event)), &schema); err != nil {
			t.Errorf("%s: no schema (%v)", event, err)
			continue
		}
		slices.Sort(schema.Required)
		if got := fields(r[2]); !slices.Equal(got, schema.Required) {
			t.Errorf("%s: required fields documented %v, the schema requires %v", event, got, schema.Required)
		}
		for _, f := range fields(r[3]) {
			if _, ok := schema.Properties[f]; !ok {
				t.Errorf("%s: documents field %q, which its schema does not name", event, f)
			}
		}
	}
	var want []string
	for _, e := range audit.EventTypes() {
		want = append(want, string(e))
	}
	if !slices.Equal(documented, want) {
		t.Errorf("events documented:\n%v\nevent types, in order:\n%v", documented, want)
	}
}
