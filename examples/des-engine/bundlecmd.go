package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/deterministic-exec/des"
)

const bundleDoc = `Fetches the organisation's policy bundles (setting bundle_urls) into .des/bundles,
each with the ETag of the copy kept there (a server answering 304 keeps it), and
verifies each one's signature (.signatures.json) with bundle_public_key or
bundle_jwks before it replaces the kept copy. A bundle refused (unsigned, signed by
another key, changed after signing, too large, not a bundle, or claiming roots
des owns) leaves the kept copy in use. Prints each bundle: URL, revision, and
"updated", "not modified" or the error. --json prints the same as a JSON object.
Then it loads the project's policies with the bundles kept, as the hook will.
Exit 0 when every bundle is current and the policies load, 1 when one could not
be fetched or was refused, or the policies do not load with them (overlapping
roots, a team data file that disagrees with a bundle's), 2 when the command
could not run (bad settings, an unreadable key).`

func runBundle(ctx context.Context, e env, args []string) int {
	if len(args) == 0 || args[0] != "pull" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			fmt.Fprintf(e.stderr, "usage: des-hook bundle pull [--json]\n\n%s\n", bundleDoc)
			return exitOK
		}
		fmt.Fprintf(e.stderr, "usage: des-hook bundle pull [--json]\n\n%s\n", bundleDoc)
		return exitUsage
	}
	fs := newFlagSet(e, "bundle pull", "[--json]", bundleDoc)
	asJSON := fs.Bool("json", false, "print the outcome as JSON")
	if code, done := parseFlags(fs, args[1:], 0); done {
		return code
	}
	root := commandRoot(ctx, e.lookupEnv)
	cfg, err := des.LoadConfig(root, e.lookupEnv)
	if err != nil {
		fmt.Fprintf(e.stderr, "des-hook bundle pull: %v\n", err)
		return exitUsage
	}
	res, err := des.PullBundles(ctx, root, cfg, e.lookupEnv, nil)
	if err != nil {
		fmt.Fprintf(e.stderr, "des-hook bundle pull: %v\n", err)
		return exitUsage
	}
	code := exitOK
	for _, r := range res {
		if r.Outcome == des.BundleFailed {
			code = exitFail
		}
	}
	// Every bundle may verify and the policies still not load together (two
	// bundles' roots overlap, a team data file disagrees with a bundle's):
	// then every decision des is in charge of is DES-INTERNAL, so the pull
	// says so now.
	var loadErr string
	if len(res) > 0 {
		if _, err := des.New(ctx, des.WithRoot(root), des.WithEnv(e.lookupEnv)); err != nil {
			loadErr = err.Error()
			code = exitFail
		}
	}
	if *asJSON {
		if res == nil {
			res = []des.BundlePull{}
		}
		if c := writeJSON(e, "bundle pull", struct {
			Bundles   []des.BundlePull `json:"bundles"`
			LoadError string           `json:"load_error,omitempty"`
		}{res, loadErr}); c != exitOK {
			return c
		}
		return code
	}
	if len(res) == 0 {
		fmt.Fprintln(e.stdout, "no bundles to pull: the setting bundle_urls names none")
		return exitOK
	}
	for _, r := range res {
		what := r.Outcome
		if r.Outcome == des.BundleFailed {
			what = "error: " + r.Error
			if r.Revision != "" {
				what += fmt.Sprintf(" (still in use: revision %s, fetched %s)", r.Revision, r.FetchedAt.UTC().Format(time.RFC3339))
			}
		}
		fmt.Fprintf(e.stdout, "%s  revision %s  %s\n", r.URL, orNone(r.Revision), what)
	}
	if loadErr != "" {
		fmt.Fprintf(e.stderr, "des-hook bundle pull: the policies do not load with the bundles kept, so des decides nothing it is in charge of (DES-INTERNAL): %s\n", loadErr)
	}
	return code
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// policyStatus is where decisions are made and the organisation's bundles,
// for status and version.
type policyStatus struct {
	DecisionPoint string             `json:"decision_point"` // "embedded" or the opa_url
	Bundles       []des.BundleStatus `json:"bundles"`
	// NotDeciding are the local policy directories whose rules decide
	// nothing because opa_url is set.
	NotDeciding []string `json:"policy_dirs_not_deciding,omitempty"`
}

func policyStatusOf(ctx context.Context, root string, cfg des.Config, lookupEnv func(string) (string, bool)) policyStatus {
	b := des.BundleStatuses(ctx, root, cfg, lookupEnv, time.Now())
	if b == nil {
		b = []des.BundleStatus{}
	}
	return policyStatus{DecisionPoint: des.DecisionPointOf(cfg), Bundles: b, NotDeciding: des.PolicyDirsNotDeciding(root, cfg)}
}

// notDeciding says that the local policy directories dirs decide nothing
// while the OPA server at url decides: a team that edits them would
// otherwise believe its rules are enforced. "" for no directory.
func notDeciding(url string, dirs []string) string {
	if len(dirs) == 0 {
		return ""
	}
	return fmt.Sprintf("local policies not deciding: %s: the hook enforces the policies loaded into the OPA server at %s, not these; "+
		"load them there to enforce them (des-hook test still runs them, for authoring)", strings.Join(dirs, ", "), url)
}

// decisionsLine says where decisions are made.
func decisionsLine(point string) string {
	if point == des.Embedded {
		return "decisions: " + point
	}
	return "decisions: " + point + " (the OPA server of opa_url decides every gate)"
}

// printPolicyStatus writes "decisions: ..." and a line per bundle.
func printPolicyStatus(w io.Writer, ps policyStatus) error {
	fmt.Fprintln(w, decisionsLine(ps.DecisionPoint))
	if note := notDeciding(ps.DecisionPoint, ps.NotDeciding); note != "" {
		fmt.Fprintln(w, note)
	}
	if len(ps.Bundles) == 0 {
		fmt.Fprintln(w, "bundles: none")
		return nil
	}
	fmt.Fprintf(w, "bundles: %d\n", len(ps.Bundles))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  URL\tREVISION\tFETCHED\tVERIFIED BY\tSTATE")
	for _, b := range ps.Bundles {
		fetched, state := "never", "active"
		if !b.FetchedAt.IsZero() {
			fetched = b.FetchedAt.UTC().Format(time.RFC3339)
		}
		switch {
		case b.Problem != "":
			state = "NOT IN USE: " + strings.Join(strings.Fields(b.Problem), " ")
		case ps.DecisionPoint != des.Embedded:
			// The server's policies decide; the kept bundle lends des's
			// Go side its data tables only.
			state = "kept, not deciding: decisions on opa_url"
		case b.Stale:
			state = "active, due for refresh"
		}
		if b.LastError != "" {
			state += fmt.Sprintf("; last pull failed %s: %s", b.FailedAt.UTC().Format(time.RFC3339), strings.Join(strings.Fields(b.LastError), " "))
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", b.URL, orNone(b.Revision), fetched, orNone(b.Key), state)
	}
	return tw.Flush()
}
