package testrun

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func rec(cmd, result string) Record {
	r := NewRecord(cmd, Match{Runner: "go test", Argv: []string{"go", "test"}}, intp(0), false, "ok  \tm\t0.1s")
	r.Result, r.Time, r.Event = result, time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC), "PostToolUse"
	return r
}

func attested(t *testing.T, s Store) ([]string, Report) {
	t.Helper()
	seen, rep, err := s.Read()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, x := range seen {
		if x.Attested {
			out = append(out, x.Command+":"+x.Result)
		}
	}
	return out, rep
}

func TestStoreAttests(t *testing.T) {
	ctx := context.Background()
	s := Store{Dir: filepath.Join(t.TempDir(), "testruns")}
	if got, rep := attested(t, s); len(got) != 0 || rep.Lines != 0 {
		t.Fatalf("empty store: %v %+v", got, rep)
	}
	for _, r := range []Record{rec("go test ./a", Failed), rec("go test ./b", Passed)} {
		if err := s.Append(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	got, rep := attested(t, s)
	if len(got) != 2 || rep.Attested != 2 || rep.NotAttested != 0 || rep.Breaks != 0 {
		t.Fatalf("%v %+v", got, rep)
	}
	if fi, err := os.Stat(filepath.Join(s.Dir, fileKey)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key: %v %v", fi, err)
	}

	path := filepath.Join(s.Dir, fileRuns)
	data, _ := os.ReadFile(path)
	lines := bytes.SplitAfter(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))

	// A forged line: a passing run, chained on des's last line, with a
	// mac made without the key.
	var last line
	_ = json.Unmarshal(lines[1], &last)
	forged, _ := json.Marshal(rec("go test ./...", Passed))
	fl, _ := json.Marshal(line{MAC: mac(make([]byte, keySize), last.MAC, forged), Prev: last.MAC, Run: forged})
	// A line des wrote, replayed: the failure made to count twice.
	appendFile(t, path, append(append(fl, '\n'), lines[0]...))
	if err := s.Append(ctx, rec("go test ./c", Passed)); err != nil {
		t.Fatal(err)
	}
	got, rep = attested(t, s)
	if want := []string{"go test ./a:failed", "go test ./b:passed", "go test ./c:passed"}; !equal(got, want) || rep.NotAttested != 2 || rep.Breaks != 0 {
		t.Fatalf("after forgery: %v %+v; want %v", got, rep, want)
	}

	// A line removed: the others still count, the gap is reported.
	data, _ = os.ReadFile(path)
	lines = bytes.SplitAfter(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	if err := os.WriteFile(path, bytes.Join([][]byte{lines[0], lines[2], lines[3], lines[4]}, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	got, rep = attested(t, s)
	if want := []string{"go test ./a:failed", "go test ./c:passed"}; !equal(got, want) || rep.Breaks != 1 {
		t.Fatalf("after a removal: %v %+v", got, rep)
	}

	// Without its key nothing attests; a new key does not make old lines.
	if err := os.Remove(filepath.Join(s.Dir, fileKey)); err != nil {
		t.Fatal(err)
	}
	if got, _ := attested(t, s); len(got) != 0 {
		t.Fatalf("no key: %v", got)
	}
}

func TestStoreBounded(t *testing.T) {
	ctx := context.Background()
	s := Store{Dir: t.TempDir(), MaxBytes: 2000}
	for i := range 30 {
		if err := s.Append(ctx, rec("go test ./"+string(rune('a'+i%26)), Passed)); err != nil {
			t.Fatal(err)
		}
	}
	var total int64
	for _, n := range []string{fileRuns, fileOld} {
		fi, err := os.Stat(filepath.Join(s.Dir, n))
		if err != nil {
			t.Fatal(err)
		}
		total += fi.Size()
	}
	if total > 2*s.MaxBytes {
		t.Errorf("kept %d bytes; bound %d", total, 2*s.MaxBytes)
	}
	got, rep := attested(t, s)
	if len(got) == 0 || rep.NotAttested != 0 || rep.Breaks != 0 {
		t.Errorf("after rotation: %d attested, %+v", len(got), rep)
	}
}

func appendFile(t *testing.T, path string, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A runs file grown past the bound (lines appended by someone else) is
// read from its end: the runs des wrote there still count.
func TestStoreReadsAnOversizeFileFromItsEnd(t *testing.T) {
	ctx := context.Background()
	s := Store{Dir: t.TempDir(), MaxBytes: 4096}
	appendFile := func(data []byte) {
		f, err := os.OpenFile(filepath.Join(s.Dir, fileRuns), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Append(ctx, rec("go test ./a", Failed)); err != nil {
		t.Fatal(err)
	}
	appendFile(bytes.Repeat([]byte("x"), 100<<10))
	appendFile([]byte("\n"))
	// Written straight after the padding, as a concurrent des would.
	key, _ := s.key(false)
	head, _ := os.ReadFile(filepath.Join(s.Dir, fileHead))
	run, _ := json.Marshal(rec("go test ./b", Passed))
	l, _ := json.Marshal(line{MAC: mac(key, string(bytes.TrimSpace(head)), run), Prev: string(bytes.TrimSpace(head)), Run: run})
	appendFile(append(l, '\n'))
	got, rep := attested(t, s)
	if want := []string{"go test ./b:passed"}; !equal(got, want) || rep.NotAttested == 0 {
		t.Fatalf("%v %+v", got, rep)
	}
}

func TestPending(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	now := time.Now()
	if err := s.Begin("toolu_1", "go test ./...", Pending{At: now}); err != nil {
		t.Fatal(err)
	}
	if err := s.Begin("../x", "go test", Pending{At: now}); err == nil {
		t.Error("an id that is a path was taken")
	}
	if _, ok := s.Peek("toolu_1", "go test ./... ; echo"); ok {
		t.Error("another command matched")
	}
	if _, ok := s.Peek("toolu_2", "go test ./..."); ok {
		t.Error("another id matched")
	}
	if _, ok := s.Peek("toolu_1", "go test ./..."); !ok {
		t.Fatal("the call des saw start is not pending")
	}
	if !s.Take("toolu_1") || s.Take("toolu_1") {
		t.Error("a call's run is taken once")
	}
	if _, ok := s.Peek("toolu_1", "go test ./..."); ok {
		t.Error("still pending after Take")
	}
	// A day-old record is dropped by the next Begin.
	if err := s.Begin("toolu_old", "go test", Pending{At: now}); err != nil {
		t.Fatal(err)
	}
	old := now.Add(-25 * time.Hour)
	if err := os.Chtimes(filepath.Join(s.Dir, "pending", "toolu_old.json"), old, old); err != nil {
		t.Fatal(err)
	}
	if err := s.Begin("toolu_3", "go test", Pending{At: now}); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Peek("toolu_old", "go test"); ok {
		t.Error("a day-old pending record was kept")
	}
}
