// Package audit writes and reads the DES audit trail (contract §7): an
// append-only JSON Lines log, one file per UTC day, named
// "audit-YYYY-MM-DD.log" inside one directory.
//
// # Line format
//
// Each line is one [Entry], encoded as a single JSON object followed by "\n".
// Keys come in a fixed order: "timestamp" (RFC 3339 with nanoseconds as
// needed, always UTC, [time.RFC3339Nano]), "event", then the entry's own
// fields sorted by key. Field values are encoded with [encoding/json] without
// HTML escaping, so a shell command such as "a && b" stays readable. The keys
// "timestamp", "event", "seq" and "prev" are reserved: "seq" and "prev" are
// kept for the tamper-evident hash chain. An encoded line, newline included,
// may be at most 1 MiB ([MaxLineSize]); a larger entry is rejected with
// [ErrEntryTooLarge] so that every append stays one modest write call, which
// the kernel applies atomically to an O_APPEND file in practice.
//
// When reading back, numbers are returned as [encoding/json.Number] (exact,
// no float64 rounding), objects as map[string]any and arrays as []any. The
// reserved "seq" and "prev" keys are not returned in [Entry.Fields].
//
// # Appending
//
// [Log.Append] is safe for concurrent use by many goroutines and many
// processes. Each call:
//
//  1. checks its context and the entries (a non-empty event, no reserved
//     field), so an invalid call creates nothing;
//  2. takes an in-process lock and then an exclusive file lock on
//     "<dir>/.lock" (flock on Unix, LockFileEx on Windows), polling with a
//     short sleep until the context is done, so a stuck peer cannot hang the
//     caller; the directory (0o755) and lock file are created if missing;
//  3. stamps entries whose Time is zero with the Log's clock, encodes them
//     all, and writes nothing if any entry fails to encode or is too large;
//  4. writes each line with one write call to the day file of the entry's UTC
//     date, opened O_APPEND|O_CREATE|O_WRONLY with mode 0o644, optionally
//     followed by an fsync ([WithFsync]);
//  5. releases the locks.
//
// Once writing has started the context is no longer consulted: a batch is
// not abandoned halfway because a deadline passed. If a write itself fails,
// the lines already written stay and the error says so.
//
// Because every append already holds an exclusive lock across processes, a
// hash chain can later read the last line and number the next one inside
// the same critical section.
package audit
