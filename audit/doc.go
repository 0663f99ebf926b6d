// Package audit writes, reads and verifies the DES audit trail
// (docs/reference.md, "Audit trail"): an append-only, hash-chained JSON Lines log, one file per UTC day,
// named "audit-YYYY-MM-DD.log" inside one directory, with older days
// compressed into "archive/audit-YYYY-MM-DD.log.gz".
//
// # Line format
//
// Each line is one [Entry], encoded as a single JSON object followed by "\n".
// Keys come in a fixed order: "timestamp" (RFC 3339 with nanoseconds as
// needed, always UTC, [time.RFC3339Nano]), "event", "seq", "prev", then the
// entry's own fields sorted by key. Field values are encoded with
// [encoding/json] without HTML escaping, so a shell command such as
// "a && b" stays readable. The keys "timestamp", "event", "seq" and "prev"
// are reserved. An encoded line, newline included, may be at most 1 MiB
// ([MaxLineSize]); a larger entry is rejected with [ErrEntryTooLarge] so that
// every append stays one modest write call, which the kernel applies
// atomically to an O_APPEND file in practice.
//
// # Hash chain
//
// "seq" numbers the lines of the whole trail 1, 2, 3, ... across day files
// and archives. "prev" is the lowercase hex SHA-256 of the line before it
// in the trail, as stored: its bytes including the trailing newline (so
// `sed -n 4p audit-2026-03-14.log | sha256sum` prints line 5's "prev"). The
// first line of a trail has a "prev" of 64 zeros. Lines without "seq" and
// "prev", written by a des before the chain, may only open a trail: the
// first chained line then has seq 1 and the hash of the last of them.
//
// The chain runs through the files in trail order: by date, an archive
// before the day file of the same date. So that it can, a line's file is
// never older than the line before it: an entry whose timestamp falls
// before the newest day file (a clock set back, an entry stamped earlier) is
// written to the newest day file. A file may therefore hold lines of earlier
// dates, never of later ones.
//
// After each append, the head record "<dir>/.head" ([HeadFile]) holds the
// seq and hash of the last line written, and the day file it went to with
// that file's size: `{"seq":N,"sha256":"...","file":"audit-...log","size":S}`.
// [Verify] uses it to find lines cut from the end of the trail; Append uses
// it to skip the search for the head of the chain. Whoever can write the
// directory can rewrite it too, so [WithWitness] keeps a witness of the head
// outside the directory, which [Verify] checks the trail against. [Head]
// reads the head for copies kept elsewhere (anchors: des records them in
// its decision log and in git notes), and [WithAnchors] has [Verify] check
// the trail against those too.
//
// # Event schemas
//
// Each event type ([EventTypes]) has a JSON Schema (draft 2020-12), embedded and
// returned by [Schema]: "<EVENT>.schema.json" applies "entry.schema.json"
// (the four keys above) and names the event's required fields and their
// types; other fields are allowed. [Log.Append] checks every entry against
// its schema and refuses the call with [ErrSchema], naming the event and the
// JSON pointer of each failing value, before anything is written. A schema
// compiles on its first use in a process, never at start-up: a hook pays
// only for the event types it writes.
//
// # Appending
//
// [Log.Append] is safe for concurrent use by many goroutines and many
// processes. Each call:
//
//  1. checks its context and the entries (a non-empty event, no reserved
//     field, encodable fields that pass the event's schema), so an invalid
//     call creates nothing;
//  2. takes an in-process lock, opens the directory (from the root of
//     [WithRoot] without following a link at any component, else by its
//     path), and takes an exclusive file lock on "<dir>/.lock" (flock on
//     Unix, LockFileEx on Windows), polling with a short sleep until the
//     context is done, so a stuck peer cannot hang the caller; the
//     directory (0o755) and lock file are created if missing. Every file of
//     steps 4 to 6 is opened inside that directory: a link there cannot lead
//     a write out of it, and the day file and head record must be regular
//     files, not links (a FIFO is refused without waiting on it);
//  3. stamps entries whose Time is zero with the Log's clock;
//  4. finds the head of the chain: from the head record when the file it
//     names still has the recorded size and every entry goes to that file;
//     otherwise (a new day, a crash, no record) from the last line of the
//     newest non-empty day file, read backwards from its end, else of the
//     newest archive. If that line does not parse, the call fails with
//     [ErrMalformedLine] and writes nothing: the chain cannot go on from a
//     line of unknown place, and appending would bury the damage;
//  5. on that slow path only, with a retention set ([WithRetention]),
//     archives up to 4 day files past the retention (see [Log.Archive]);
//  6. numbers and chains the lines, writes each with one write call to its
//     day file, opened O_APPEND|O_CREATE|O_WRONLY with mode 0o644, then
//     rewrites the head record, each optionally followed by an fsync
//     ([WithFsync]); a head record that is not a regular file (a link, a
//     FIFO) is replaced, since it only spares step 4 a read, while a day
//     file that is not fails the call, naming it;
//  7. with a witness ([WithWitness]), moves the witness outside the
//     directory to the new head, when the trail it appended to continues the
//     witnessed line (see witness.go); a trail that does not is appended to,
//     and the witness stays for [Verify] to report;
//  8. releases the locks.
//
// Once writing has started the context is no longer consulted: a batch is
// not abandoned halfway because a deadline passed. If a write itself fails,
// the lines already written stay and the error says so.
//
// # Retention
//
// Day files are never deleted. Past the retention, a day file is compressed
// into "archive/audit-YYYY-MM-DD.log.gz" through a synced temporary file
// renamed into place, and only then removed, all under the lock. Reading and
// verification walk the archives too.
//
// # Reading and verifying
//
// When reading back, numbers are returned as [encoding/json.Number] (exact,
// no float64 rounding), objects as map[string]any and arrays as []any; the
// reserved "seq" fills [Entry.Seq], and "prev" is not returned. [Log.Read]
// selects entries by event type, step file and time, skipping whole files
// and undecoded lines that cannot match. [Verify] walks the whole trail and
// reports the first broken place as a [Break]: file, line and [BreakKind].
package audit
