package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/deterministic-exec/des"
	"github.com/deterministic-exec/des/audit"
)

// exitBroken is the exit status of `hook audit verify` on a broken trail.
const exitBroken = 1

const auditVerifyDoc = "Checks the hash chain of the audit trail: every day file and archive, in order,\n" +
	"and the head record. Prints \"audit trail intact: N lines in F files\", or the first\n" +
	"broken place as FILE:LINE: KIND: what was found (an edited, removed, inserted,\n" +
	"reordered, torn or unparsable line, a missing day file, or a cut end).\n\n" +
	"The trail is DIR, else the configured audit directory (DES_AUDIT_DIR) of the\n" +
	"project root (CLAUDE_PROJECT_DIR, else the git top level, else the current\n" +
	"directory). Exit status: 0 intact, 1 broken, 2 the check could not run (bad\n" +
	"flag or setting, no such directory, unreadable file)."

// runAudit dispatches `hook audit SUBCOMMAND`; verify is the only one.
func runAudit(ctx context.Context, e env, args []string) int {
	if len(args) > 0 {
		switch args[0] {
		case "verify":
			return runAuditVerify(ctx, e, args[1:])
		case "help", "-h", "-help", "--help":
			fmt.Fprintf(e.stdout, "usage: hook audit verify [--dir DIR]\n\n%s\n", auditVerifyDoc)
			return exitOK
		}
		fmt.Fprintf(e.stderr, "hook audit: unknown subcommand %q\n", args[0])
	}
	fmt.Fprintln(e.stderr, "usage: hook audit verify [--dir DIR]")
	return exitUsage
}

func runAuditVerify(ctx context.Context, e env, args []string) int {
	flags := newFlagSet(e, "audit verify", "[--dir DIR]", auditVerifyDoc)
	dir := flags.String("dir", "", "the audit directory to check (default: the configured one)")
	if code, done := parseFlags(flags, args, 0); done {
		return code
	}
	root, show := "", func(p string) string { return p }
	if *dir == "" {
		root = commandRoot(ctx, e.lookupEnv)
		cfg, err := des.LoadConfig(root, e.lookupEnv)
		if err != nil {
			fmt.Fprintf(e.stderr, "hook audit verify: %v\n", err)
			return exitUsage
		}
		*dir = cfg.AuditDir
		if !filepath.IsAbs(*dir) {
			*dir = filepath.Join(root, *dir)
		}
		// Paths as a reader of the project knows them.
		show = func(p string) string {
			if rel, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(rel, "..") {
				return rel
			}
			return p
		}
	}
	rep, err := audit.Verify(ctx, *dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(e.stderr, "hook audit verify: no audit trail at %s: no such directory\n", show(*dir))
		return exitUsage
	case err != nil:
		fmt.Fprintf(e.stderr, "hook audit verify: %v\n", err)
		return exitUsage
	case !rep.Intact():
		b := rep.Break
		where := show(b.File)
		if b.Line > 0 {
			where = fmt.Sprintf("%s:%d", where, b.Line)
		}
		fmt.Fprintf(e.stdout, "audit trail broken: %s: %s: %s\n", where, b.Kind, b.Msg)
		return exitBroken
	}
	fmt.Fprintf(e.stdout, "audit trail intact: %s in %s", plural(rep.Lines, "line"), plural(rep.Files, "file"))
	if rep.Unchained > 0 {
		fmt.Fprintf(e.stdout, " (the first %s predate the hash chain; only the last of them is covered)", plural(rep.Unchained, "line"))
	}
	fmt.Fprintln(e.stdout)
	return exitOK
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
