package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/internal/decisionlog"
	"github.com/deterministic-exec/des/internal/fileio"
	"github.com/deterministic-exec/des/internal/hooklog"
	"github.com/deterministic-exec/des/internal/report"
	"github.com/deterministic-exec/des/internal/statedir"
	"github.com/deterministic-exec/des/policy"
)

// maxReportDecisions bounds the decision log events a report reads for
// messages.
const maxReportDecisions = 200_000

func runReport(ctx context.Context, e env, args []string) int {
	flags := newFlagSet(e, "report", "[--from T] [--to T] [--format html|json] [--out FILE]",
		"Writes the project's recorded history as one HTML page (no network, nothing loaded from\n"+
			"outside): the audit trail's verification at the top; a timeline with one lane per\n"+
			"session and subagent; nWave steps with their phases and Gate 1, 2 and 3 verdicts; iSDLC\n"+
			"phases with their gates, escalations and test iterations; task-graph waves; every deny\n"+
			"and warning by code; integrity restorations; every event, filterable by session, step,\n"+
			"phase, code and kind (the filters are kept in the page's address). --format json writes\n"+
			"the same content for other tools. Times: RFC 3339, a date (UTC), or a duration ago.")
	from := flags.String("from", "", "only events at or after this time")
	to := flags.String("to", "", "only events before this time")
	format := flags.String("format", "html", "html or json")
	out := flags.String("out", "", "write to FILE (atomically) instead of stdout")
	if code, done := parseFlags(flags, args, 0); done {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(e.stderr, "des-hook report: "+format+"\n", a...)
		return exitUsage
	}
	if *format != "html" && *format != "json" {
		return fail("--format %q: write html or json", *format)
	}
	o := report.Options{Now: time.Now()}
	var err error
	if o.From, o.To, err = timeRange(*from, *to, o.Now); err != nil {
		return fail("%v", err)
	}
	root := commandRoot(ctx, e.lookupEnv)
	o.Project = filepath.Base(root)
	cfg, err := des.LoadConfig(root, e.lookupEnv)
	if err != nil {
		return fail("%v", err)
	}
	dir := auditDir(root, cfg)
	o.Trail = trailStatus(ctx, e, root, dir, projectRelative(root))
	// The policies give the codes' titles and the phases' order; a report
	// is still worth writing without them (policies that do not compile).
	o.Titles, o.Severity = map[string]string{}, map[string]string{}
	if eng, err := des.New(ctx, des.WithRoot(root), des.WithEnv(e.lookupEnv), des.WithLazyPolicies(), des.WithLogger(hooklog.New(e.stderr, e.lookupEnv))); err == nil {
		if cat, err := eng.Catalogue(ctx); err == nil {
			for _, r := range cat {
				o.Titles[r.Code], o.Severity[r.Code] = r.Title, string(r.Severity)
			}
		}
		if pe, err := eng.Policy(ctx); err == nil {
			o.Phases = nwavePhases(pe)
		}
	} else {
		fmt.Fprintf(e.stderr, "des-hook report: the policies could not be loaded (%v): codes are shown without their titles\n", err)
	}
	log, err := audit.Open(dir, audit.WithRoot(root), audit.WithAttestations(statedir.Attestations(statedir.For(root, e.lookupEnv)), false))
	if err != nil {
		return fail("%v", err)
	}
	entries, err := log.Read(ctx, audit.Query{})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		// What could be read is shown, with the reason it stops there.
		o.Trail.Notes = append(o.Trail.Notes, "the trail could be read only up to here: "+err.Error())
	}
	// What each gate said, from the decision log (the trail keeps codes).
	// The log is bounded (decision_log_max_bytes); so is what is kept here.
	for rec, err := range decisionlog.Events(filepath.Join(root, des.DecisionsDir)) {
		if len(o.Decisions) == maxReportDecisions {
			break
		}
		if err == nil && (o.From.IsZero() || !rec.Timestamp.Before(o.From.Add(-time.Minute))) && (o.To.IsZero() || rec.Timestamp.Before(o.To)) {
			rec.Input = nil // not needed: the messages are in the result
			o.Decisions = append(o.Decisions, rec.Event)
		}
	}
	rep := report.Build(entries, o)
	var buf bytes.Buffer
	if *format == "json" {
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = rep.WriteHTML(&buf)
	}
	if err != nil {
		return fail("%v", err)
	}
	if *out == "" {
		if _, err := e.stdout.Write(buf.Bytes()); err != nil {
			return fail("%v", err)
		}
		return exitOK
	}
	// Within the directory named, never through a link at the name: a
	// link an agent left at report.html would have the page written over
	// whatever it points to.
	outDir, err := os.OpenRoot(filepath.Dir(*out))
	if err != nil {
		return fail("--out: %v", err)
	}
	defer outDir.Close()
	if err := fileio.WriteAtomicAt(outDir, filepath.Base(*out), buf.Bytes()); err != nil {
		return fail("--out %s: %v", *out, err)
	}
	fmt.Fprintf(e.stdout, "des-hook report: %d events written to %s\n", len(rep.Events), *out)
	return exitOK
}

// trailStatus is `des-hook audit verify` on the project's trail, as the
// report's first line.
func trailStatus(ctx context.Context, e env, root, dir string, show func(string) string) report.Trail {
	checks, problems := projectTrailChecks(ctx, e, root, show)
	rep, err := audit.Verify(ctx, dir, append(checks, audit.WithWitness(statedir.AuditWitness(e.lookupEnv)), audit.WithRoot(root))...)
	t := report.Trail{}
	for _, p := range problems {
		t.Notes = append(t.Notes, "not checked against "+p)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		t.Status, t.Summary = report.TrailUnchecked, "no audit trail at "+show(dir)
	case err != nil:
		t.Status, t.Summary = report.TrailUnchecked, "the audit trail could not be checked: "+err.Error()
	case !rep.Intact():
		b := rep.Break
		where := show(b.File)
		if b.Line > 0 {
			where = fmt.Sprintf("%s:%d", where, b.Line)
		}
		t.Status, t.Summary = report.TrailBroken, fmt.Sprintf("audit trail broken: %s: %s: %s", where, b.Kind, b.Msg)
		t.Notes = append(t.Notes, "what follows is what the trail holds now, and may not be what des recorded")
	default:
		lines := intactLines(rep)
		t.Status, t.Summary, t.Notes = report.TrailIntact, lines[0], append(lines[1:], t.Notes...)
	}
	return t
}

// nwavePhases is data.des.steps.canonical_phases, the nWave phases in
// order (a team's data may change them).
func nwavePhases(pe *policy.Engine) []string {
	v, ok := pe.Data("des.steps.canonical_phases")
	if !ok {
		return nil
	}
	list, _ := v.([]any)
	var out []string
	for _, p := range list {
		if s, ok := p.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
