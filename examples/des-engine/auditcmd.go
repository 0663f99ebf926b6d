package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/audit"
	"github.com/deterministic-exec/des/internal/statedir"
)

// exitBroken is the exit status of `des-hook audit verify` on a broken trail.
const exitBroken = 1

const auditVerifyDoc = "Checks the hash chain of the audit trail: every day file and archive, in order,\n" +
	"and the head record. Prints \"audit trail intact: N lines in F files\", or the first\n" +
	"broken place as FILE:LINE: KIND: what was found (an edited, removed, inserted,\n" +
	"reordered, torn or unparsable line, a missing day file, or a cut end).\n\n" +
	"The trail is DIR, else the configured audit directory (DES_AUDIT_DIR) of the\n" +
	"project root (CLAUDE_PROJECT_DIR, else the git top level, else the current\n" +
	"directory). Exit status: 0 intact, 1 broken, 2 the check could not run (bad\n" +
	"flag or setting, no such directory, unreadable file).\n\n" +
	"The trail's head is also witnessed outside it, in the per-user state directory\n" +
	"(DES_STATE_DIR, else XDG_STATE_HOME/des, else ~/.local/state/des): a trail\n" +
	"deleted, cut at its end or rewritten from its first line is broken even when its\n" +
	"chain is valid. A trail with no witness (a new machine, a copy, a trail from\n" +
	"before witnesses) is checked on its chain (and the anchors below) and reported\n" +
	"\"not witnessed\".\n" +
	"Without --dir, the trail must also hold every head recorded outside it: in the\n" +
	"des_audit_head of the project's decision log (.des/decisions) and in the git notes\n" +
	"des writes on each commit (" + auditNotesRef + "); a trail that no longer holds one\n" +
	"was deleted, cut or rewritten (an anchor break), witness or no witness.\n" +
	"--adopt witnesses the current end of an\n" +
	"intact trail (a new machine, a moved project, a trail from before witnesses,\n" +
	"or after you removed or rewrote it yourself); the heads recorded outside the trail\n" +
	"before it are no longer checked. It is refused while an agent's tool\n" +
	"call is running (from an agent's Bash it would witness what the agent wrote)."

// runAudit dispatches `des-hook audit SUBCOMMAND`; verify is the only one.
func runAudit(ctx context.Context, e env, args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "verify":
			return runAuditVerify(ctx, e, args[1:])
		case "help", "-h", "-help", "--help":
			fmt.Fprintf(e.stdout, "usage: des-hook audit verify [--dir DIR] [--adopt]\n\n%s\n", auditVerifyDoc)
			return exitOK
		}
		fmt.Fprintf(e.stderr, "des-hook audit: unknown subcommand %q\n", args[0])
	}
	fmt.Fprintln(e.stderr, "usage: des-hook audit verify [--dir DIR] [--adopt]")
	return exitUsage
}

func runAuditVerify(ctx context.Context, e env, args []string) int {
	flags := newFlagSet(e, "audit verify", "[--dir DIR] [--adopt]", auditVerifyDoc)
	dir := flags.String("dir", "", "the audit directory to check (default: the configured one)")
	adopt := flags.Bool("adopt", false, "witness the current end of the trail, when its chain is intact")
	if code, done := parseFlags(flags, args, 0); done {
		return code
	}
	root, show := "", func(p string) string { return p }
	if *dir == "" {
		root = commandRoot(ctx, e.lookupEnv)
		cfg, err := des.LoadConfig(root, e.lookupEnv)
		if err != nil {
			fmt.Fprintf(e.stderr, "des-hook audit verify: %v\n", err)
			return exitUsage
		}
		*dir = auditDir(root, cfg)
		show = projectRelative(root)
	}
	witness := audit.WithWitness(statedir.AuditWitness(e.lookupEnv))
	verify := audit.Verify
	if *adopt {
		// Adopting re-witnesses whatever the trail holds now: run from an
		// agent's Bash call, it would make a trail the agent rewrote look
		// intact. The agent's own call is always recorded as running (in
		// the same state directory as the witness, whatever root or
		// directory the command names), so a person runs it between calls.
		// Adopting from inside an agent's call would witness what the
		// agent wrote.
		if refuseAgentCall(e, "des-hook audit verify --adopt", "", time.Now()) {
			return exitUsage
		}
		verify = audit.AdoptWitness
	}
	var checks []audit.Option
	if root != "" && !*adopt {
		var problems []string
		checks, problems = projectTrailChecks(ctx, e, root, show)
		for _, p := range problems {
			fmt.Fprintf(e.stderr, "des-hook audit verify: not checked against %s\n", p)
		}
	}
	rep, err := verify(ctx, *dir, append(checks, witness, audit.WithRoot(root))...) // root "" (--dir): none
	switch {
	case errors.Is(err, audit.ErrNotIntact):
		b := rep.Break
		fmt.Fprintf(e.stdout, "audit trail broken, not adopted: %s: %s: %s\n", show(b.File), b.Kind, b.Msg)
		return exitBroken
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(e.stderr, "des-hook audit verify: no audit trail at %s: no such directory\n", show(*dir))
		return exitUsage
	case err != nil:
		fmt.Fprintf(e.stderr, "des-hook audit verify: %v\n", err)
		return exitUsage
	case !rep.Intact():
		b := rep.Break
		where := show(b.File)
		if b.Line > 0 {
			where = fmt.Sprintf("%s:%d", where, b.Line)
		}
		fmt.Fprintf(e.stdout, "audit trail broken: %s: %s: %s\n", where, b.Kind, b.Msg)
		switch b.Kind {
		case audit.BreakWitness:
			fmt.Fprintln(e.stdout, "If you removed or rewrote the trail yourself, or it was written on another machine or before des kept witnesses, check it by other means and run `des-hook audit verify --adopt` to witness its current end.")
		case audit.BreakAnchor:
			fmt.Fprintln(e.stdout, "The head recorded there is the trail as des wrote it; compare with the copies pushed off this machine (the collector's decision log, the remote's "+auditNotesRef+"). If you removed or rewrote the trail yourself, check it by other means and run `des-hook audit verify --adopt`: heads recorded before the adoption are no longer checked.")
		}
		return exitBroken
	}
	if *adopt && rep.Witness.Found {
		fmt.Fprintln(e.stdout, intactLines(rep)[0])
		fmt.Fprintf(e.stdout, "witnessed: seq %d, in %s\n", rep.Witness.Seq, rep.Witness.Path)
		return exitOK
	}
	for _, l := range intactLines(rep) {
		fmt.Fprintln(e.stdout, l)
	}
	return exitOK
}

// auditDir is the project's audit directory, absolute.
func auditDir(root string, cfg des.Config) string {
	if filepath.IsAbs(cfg.AuditDir) {
		return cfg.AuditDir
	}
	return filepath.Join(root, cfg.AuditDir)
}

// projectRelative shows a path as a reader of the project knows it:
// relative to root when inside it.
func projectRelative(root string) func(string) string {
	return func(p string) string {
		if rel, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
		return p
	}
}

// projectTrailChecks are the checks of a project's trail beyond its chain:
// the project's attestations say whether des ever witnessed this trail (a
// witness that is gone then is a finding, not a new trail), and the heads
// recorded outside the trail and the state directory, in the decision log
// and in git notes, are anchors. problems are anchors that could not be read.
func projectTrailChecks(ctx context.Context, e env, root string, show func(string) string) ([]audit.Option, []string) {
	attested := audit.WithAttestations(statedir.Attestations(statedir.For(root, e.lookupEnv)), false)
	anchors, problems := auditAnchors(ctx, root, show)
	return []audit.Option{attested, audit.WithAnchors(anchors)}, problems
}

// intactLines says what `audit verify` says of an intact trail.
func intactLines(rep audit.Report) []string {
	first := fmt.Sprintf("audit trail intact: %s in %s", plural(rep.Lines, "line"), plural(rep.Files, "file"))
	if rep.Unchained > 0 {
		first += fmt.Sprintf(" (the first %s predate the hash chain; only the last of them is covered)", plural(rep.Unchained, "line"))
	}
	out := []string{first}
	if a := rep.Anchors; a.Checked > 0 {
		out = append(out, fmt.Sprintf("anchored: the trail holds the %s recorded in the decision log and git notes (up to seq %d)", plural(a.Checked, "head"), a.Seq))
	}
	switch w := rep.Witness; {
	case !w.Found && rep.LastSeq == 0:
		out = append(out, fmt.Sprintf("not witnessed: the trail has no chained line yet; its head will be witnessed in %s from the first append", w.Path))
	case !w.Found && rep.Anchors.Checked > 0:
		out = append(out, fmt.Sprintf("not witnessed: no witness at %s, so the chain was checked against the heads recorded outside the trail only; lines after seq %d are not pinned. If this trail is known good, `des-hook audit verify --adopt` witnesses its end", w.Path, rep.Anchors.Seq))
	case !w.Found:
		out = append(out, fmt.Sprintf("not witnessed: no witness at %s, so only the chain was checked; a trail cut or rewritten after its witness was removed would look the same. If this trail is known good (a new machine, a copy, a trail from before witnesses), `des-hook audit verify --adopt` witnesses its end", w.Path))
	case w.Behind > 0:
		out = append(out, fmt.Sprintf("witnessed up to seq %d; the %s after it were written since (an append interrupted before its witness update, or by a writer without the witness) and are chained but not witnessed", w.Seq, plural(int(w.Behind), "line")))
	}
	return out
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
