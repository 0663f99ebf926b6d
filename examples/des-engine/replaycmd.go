package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/internal/decisionlog"
	"github.com/deterministic-exec/des/internal/hooklog"
	"github.com/deterministic-exec/des/internal/replay"
	"github.com/deterministic-exec/des/policy"
)

// listFlag is a flag given any number of times, or once with commas.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l = append(*l, v)
		}
	}
	return nil
}

// replayShown bounds the decisions each list of the text output shows one
// by one.
const replayShown = 20

// listShown writes the first replayShown of n lines, then how many more
// there are.
func listShown(w io.Writer, n int, line func(i int)) {
	for i := range min(n, replayShown) {
		line(i)
	}
	if n > replayShown {
		fmt.Fprintf(w, "  ... and %d more (--json lists them all)\n", n-replayShown)
	}
}

func runReplay(ctx context.Context, e env, args []string) int {
	fs := newFlagSet(e, "replay", "[--policies DIR]... [--bundle FILE]... [--from T] [--to T] [--gate G] [--code C] [--json] [--fail-on-change]",
		"Decides the decisions kept in .des/decisions again, each on its recorded input at its\n"+
			"recorded time, and lists those that would come out otherwise (newly denied, no\n"+
			"longer denied, codes added or removed), grouped by gate and code. des records\n"+
			"nothing: no decision log line, no audit entry, no state (an OPA server of opa_url\n"+
			"may log the requests in its own decision log).\n\n"+
			"The policies are the project's (built-in, policy_dirs, the organisation's bundles),\n"+
			"decided where the settings say (in process, or the OPA server of opa_url). --policies\n"+
			"replaces the project's policy directories with candidate ones, --bundle the\n"+
			"organisation's bundles with candidate bundle files; either decides in process.\n"+
			"A decision whose input was masked where the policies read is listed as masked,\n"+
			"not decided. Times: RFC 3339, a date (UTC), or a duration ago (36h, 7d).\n"+
			"Exit status: 0, or 1 with --fail-on-change when a decision would change; 2 when\n"+
			"the replay could not run.")
	var dirs, bundles, gates, codes listFlag
	fs.Var(&dirs, "policies", "a candidate policy directory, instead of policy_dirs (repeat for more)")
	fs.Var(&bundles, "bundle", "a candidate bundle (.tar.gz or directory), instead of the organisation's (repeat for more)")
	fs.Var(&gates, "gate", "only decisions of this gate (repeat, or commas)")
	fs.Var(&codes, "code", "only decisions that yielded this code, before or after (repeat, or commas)")
	from := fs.String("from", "", "only decisions at or after this time")
	to := fs.String("to", "", "only decisions before this time")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	failOnChange := fs.Bool("fail-on-change", false, "exit 1 when a decision would come out otherwise")
	examples := fs.Int("examples", 3, "decision ids shown per gate and code")
	if code, done := parseFlags(fs, args, 0); done {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "des-hook replay: "+format+"\n", a...)
		return exitUsage
	}
	o := replay.Options{Gates: gates, Codes: codes, Examples: *examples}
	var err error
	if o.From, o.To, err = timeRange(*from, *to, time.Now()); err != nil {
		return fail("%v", err)
	}
	for _, g := range gates {
		if !slices.Contains(policy.Gates(), policy.Gate(g)) {
			return fail("--gate %q: not a gate; the gates are %v", g, policy.Gates())
		}
	}
	root := commandRoot(ctx, e.lookupEnv)
	cfg, err := des.LoadConfig(root, e.lookupEnv)
	if err != nil {
		return fail("%v", err)
	}
	opts := []des.Option{des.WithRoot(root), des.WithEnv(e.lookupEnv), des.WithLogger(hooklog.New(e.stderr, e.lookupEnv))}
	candidate := len(dirs) > 0 || len(bundles) > 0
	if candidate {
		cfg.OPAURL = "" // the candidate is here, not on the server
		if len(dirs) > 0 {
			cfg.PolicyDirs = nil
			opts = append(opts, des.WithPolicyDirs(absAll(dirs)...))
		}
		if len(bundles) > 0 {
			cfg.BundleURLs = nil
			opts = append(opts, des.WithBundles(absAll(bundles)...))
		}
		opts = append(opts, des.WithConfig(cfg))
	}
	eng, err := des.New(ctx, opts...)
	if err != nil {
		return fail("%v", err)
	}
	o.Decider = eng
	pe, err := eng.Policy(ctx)
	if err != nil {
		return fail("%v", err)
	}
	o.InputPaths = pe.InputPaths
	dir := filepath.Join(root, des.DecisionsDir)
	rep, err := replay.Run(ctx, decisionlog.Events(dir), o)
	if err != nil {
		if errors.Is(err, replay.ErrDecide) {
			return fail("%v\nnothing was replayed to the end; fix the policies (des-hook test) or the decision point (des-hook doctor) and run it again", err)
		}
		return fail("%v", err)
	}
	where := "in process"
	if c := eng.Config(); c.OPAURL != "" {
		where = "on the OPA server at " + c.OPAURL
	}
	if *asJSON {
		out := struct {
			DecisionPoint string   `json:"decision_point"`
			Policies      []string `json:"policies,omitempty"`
			Bundles       []string `json:"bundles,omitempty"`
			*replay.Report
		}{eng.DecisionPoint(), dirs, bundles, rep}
		if code := writeJSON(e, "replay", out); code != exitOK {
			return code
		}
	} else {
		writeReplayText(e, rep, where, dirs, bundles, dir, cfg)
	}
	if *failOnChange && len(rep.Changed) > 0 {
		return exitChanged // as integrity check's: something differs
	}
	return exitOK
}

func writeReplayText(e env, rep *replay.Report, where string, dirs, bundles []string, dir string, cfg des.Config) {
	w := e.stdout
	with := "the project's policies"
	if len(dirs) > 0 || len(bundles) > 0 {
		with = "the candidate " + strings.Join(append(append([]string{}, dirs...), bundles...), ", ")
	}
	total := rep.Replayed + len(rep.Masked) + len(rep.Skipped)
	if total == 0 {
		fmt.Fprintf(w, "no recorded decisions in %s to replay", dir)
		if cfg.DecisionLog != des.DecisionLogOn {
			fmt.Fprint(w, " (decision_log is off: set it to \"on\" in .des/config.json to keep them)")
		}
		fmt.Fprintln(w)
		return
	}
	kinds := map[string]int{}
	for _, c := range rep.Changed {
		kinds[c.Kind]++
	}
	fmt.Fprintf(w, "%d decisions decided again %s with %s: %d unchanged, %d changed (%d newly denied, %d no longer denied, %d codes changed)",
		rep.Replayed, where, with, rep.Unchanged, len(rep.Changed), kinds[replay.KindNewlyDenied], kinds[replay.KindNoLongerDenied], kinds[replay.KindCodesChanged])
	fmt.Fprintf(w, "; %d masked, %d skipped", len(rep.Masked), len(rep.Skipped))
	if rep.Failed > 0 {
		fmt.Fprintf(w, " (%d the policies could not decide)", rep.Failed)
	}
	fmt.Fprintln(w)
	if len(rep.Groups) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "GATE\tCODE\tCHANGE\tDECISIONS\tFIRST")
		for _, g := range rep.Groups {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", g.Gate, g.Code, g.Change, g.Count, strings.Join(g.Examples, " "))
		}
		tw.Flush()
	}
	if len(rep.Changed) > 0 {
		fmt.Fprintln(w, "\nchanged decisions:")
		listShown(w, len(rep.Changed), func(i int) {
			c := rep.Changed[i]
			fmt.Fprintf(w, "  %s  %s  %s  %s:%s%s\n", c.Time.UTC().Format(time.RFC3339), c.Gate, c.DecisionID, c.Kind,
				codeDiff("deny", c.Before.Deny, c.After.Deny), codeDiff("warn", c.Before.Warn, c.After.Warn))
		})
	}
	if len(rep.Masked) > 0 {
		fmt.Fprintln(w, "\nmasked (its input was erased where the policies read; not decided again):")
		listShown(w, len(rep.Masked), func(i int) {
			m := rep.Masked[i]
			fmt.Fprintf(w, "  %s  %s  %s  erased %s, read as %s\n", m.Time.UTC().Format(time.RFC3339), m.Gate, m.DecisionID, strings.Join(m.Erased, " "), strings.Join(m.Read, " "))
		})
		fmt.Fprintln(w, "  (decision_log_mask erases them when decisions are kept: take a pointer out of it to replay such decisions)")
	}
	if len(rep.Skipped) > 0 {
		fmt.Fprintln(w, "\nskipped:")
		listShown(w, len(rep.Skipped), func(i int) { fmt.Fprintf(w, "  %s  %s\n", rep.Skipped[i].Place, rep.Skipped[i].Reason) })
	}
}

// codeDiff is " deny +A -B" for the codes added and removed, or "".
func codeDiff(sev string, before, after []string) string {
	var b strings.Builder
	for _, c := range after {
		if !slices.Contains(before, c) {
			b.WriteString(" +" + c)
		}
	}
	for _, c := range before {
		if !slices.Contains(after, c) {
			b.WriteString(" -" + c)
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return " " + sev + b.String()
}

// timeRange reads --from and --to (flagTime), the first before the second
// when both are given.
func timeRange(from, to string, now time.Time) (time.Time, time.Time, error) {
	f, err := flagTime(from, now)
	if err != nil {
		return f, f, fmt.Errorf("--from: %w", err)
	}
	t, err := flagTime(to, now)
	if err != nil {
		return f, t, fmt.Errorf("--to: %w", err)
	}
	if !f.IsZero() && !t.IsZero() && !f.Before(t) {
		return f, t, fmt.Errorf("--from %s is not before --to %s", from, to)
	}
	return f, t, nil
}

// flagTime reads a time: RFC 3339, a date (midnight UTC), or a duration
// ago (a Go duration, or whole days: 7d). "" is no bound.
func flagTime(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		if n, err := strconv.Atoi(days); err == nil && n >= 0 {
			return now.AddDate(0, 0, -n), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time: write 2026-11-22T09:00:00Z, 2026-11-22, 36h or 7d", s)
}

func absAll(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		if a, err := filepath.Abs(p); err == nil {
			p = a
		}
		out[i] = p
	}
	return out
}
