package decisionlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deterministic-exec/des/internal/testenv"
	"github.com/google/go-cmp/cmp"
)

func doc(t testing.TB, v any) *any {
	t.Helper()
	d, err := Document(v)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func sampleEvent(t testing.TB, input, result any) Event {
	t.Helper()
	id, err := NewDecisionID()
	if err != nil {
		t.Fatal(err)
	}
	return Event{
		Labels:      map[string]string{"id": "00000000-0000-4000-8000-000000000000", "version": "1.0.0", "app": "des"},
		DecisionID:  id,
		Bundles:     map[string]BundleInfo{"des": {Revision: "des-builtin"}},
		Path:        "des/gates/tool_use",
		Input:       doc(t, input),
		Result:      doc(t, result),
		RequestedBy: "des",
		Timestamp:   time.Date(2026, 11, 25, 18, 0, 0, 123456789, time.UTC),
		Metrics:     map[string]any{"timer_rego_query_eval_ns": 1200},
	}
}

func TestDecisionIDIsUUIDv4(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 100 {
		id, err := NewDecisionID()
		if err != nil {
			t.Fatal(err)
		}
		if !isUUIDv4(id) || seen[id] {
			t.Fatalf("id %q: not a fresh UUIDv4", id)
		}
		seen[id] = true
	}
}

func TestMaskErasesAsOPADoes(t *testing.T) {
	t.Parallel()
	ev := sampleEvent(t,
		map[string]any{
			"call":  map[string]any{"prompt": "secret plan", "subagent_type": "coder"},
			"list":  []any{"a", "b", "c"},
			"a/b":   "slash key",
			"steps": []any{map[string]any{"document": "x", "path": "p"}},
		},
		map[string]any{"deny": []any{map[string]any{"code": "X", "msg": "m"}}, "info": map[string]any{"k": 1}})
	Mask(&ev, []string{"/input/call/prompt", "/input/missing", "/input/call/prompt/deeper", "/input/list/1", "/input/a%2Fb", "/input/steps/0/document", "/input/list/9", "/result/info"})
	want := []string{"/input/call/prompt", "/input/list/1", "/input/a%2Fb", "/input/steps/0/document", "/result/info"}
	if diff := cmp.Diff(want, ev.Erased); diff != "" {
		t.Errorf("erased (-want +got):\n%s", diff)
	}
	got, _ := json.Marshal(ev.Input)
	if wantIn := `{"call":{"subagent_type":"coder"},"list":["a","c"],"steps":[{"path":"p"}]}`; string(got) != wantIn {
		t.Errorf("input = %s, want %s", got, wantIn)
	}
	res, _ := json.Marshal(ev.Result)
	if string(res) != `{"deny":[{"code":"X","msg":"m"}]}` {
		t.Errorf("result = %s", res)
	}
	// A bare /input erases it all.
	Mask(&ev, []string{"/input"})
	if ev.Input != nil || ev.Erased[len(ev.Erased)-1] != "/input" {
		t.Errorf("after /input: input %v, erased %v", ev.Input, ev.Erased)
	}
}

// An event over the bound loses its input, then its result, and says so.
func TestEventSizeBound(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", MaxEventBytes)
	for _, c := range []struct {
		name          string
		input, result any
		erased        []string
	}{
		{"small", map[string]any{"a": 1}, map[string]any{"deny": []any{}}, nil},
		{"big input", map[string]any{"a": big}, map[string]any{"deny": []any{}}, []string{"/input"}},
		{"big both", map[string]any{"a": big}, map[string]any{"deny": []any{big}}, []string{"/input", "/result"}},
		{"big result", map[string]any{"a": 1}, map[string]any{"deny": []any{big}}, []string{"/input", "/result"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ev := sampleEvent(t, c.input, c.result)
			line, err := encode(ev, MaxEventBytes)
			if err != nil {
				t.Fatal(err)
			}
			if len(line) > MaxEventBytes {
				t.Errorf("line of %d bytes, over %d", len(line), MaxEventBytes)
			}
			var got Event
			if err := json.Unmarshal(line, &got); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Erased, c.erased) {
				t.Errorf("erased = %v, want %v", got.Erased, c.erased)
			}
			if (got.Input == nil) != slices.Contains(c.erased, "/input") || (got.Result == nil) != slices.Contains(c.erased, "/result") {
				t.Errorf("input %v result %v after erasing %v", got.Input != nil, got.Result != nil, got.Erased)
			}
		})
	}
}

func readEvents(t *testing.T, dir string) (events []Event, files []string) {
	t.Helper()
	names, err := segmentNames(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range names {
		files = append(files, s.name())
		f, err := os.Open(filepath.Join(dir, s.name()))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var ev Event
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Fatalf("%s: torn or bad line %.80q: %v", s.name(), sc.Text(), err)
			}
			events = append(events, ev)
		}
		f.Close()
	}
	return events, files
}

func dirSize(t *testing.T, dir string) int64 {
	names, err := segmentNames(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, s := range names {
		fi, err := os.Stat(filepath.Join(dir, s.name()))
		if err != nil {
			t.Fatal(err)
		}
		n += fi.Size()
	}
	return n
}

// The kept files stay within the bound; the oldest go first; files are
// named by the events' UTC day; the directory ignores itself in git.
func TestKeptFilesBound(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "decisions")
	const maxBytes = MinMaxBytes
	l := Open(dir, Options{Mask: []string{"/input/call/prompt"}, MaxBytes: maxBytes})
	start := time.Date(2026, 11, 20, 23, 0, 0, 0, time.UTC)
	pad := strings.Repeat("p", 1500)
	const n = 200
	for i := range n {
		ev := sampleEvent(t, map[string]any{"i": i, "pad": pad, "call": map[string]any{"prompt": "secret"}}, map[string]any{"deny": []any{}})
		ev.Timestamp = start.Add(time.Duration(i) * 30 * time.Minute)
		if err := l.Append(ev); err != nil {
			t.Fatal(err)
		}
		if size := dirSize(t, dir); size > maxBytes+MaxEventBytes {
			t.Fatalf("after event %d: %d bytes kept, bound %d", i, size, maxBytes)
		}
	}
	events, files := readEvents(t, dir)
	if len(events) == 0 || len(events) >= n {
		t.Fatalf("%d events kept of %d: the bound dropped none or all", len(events), n)
	}
	var last int
	for i, ev := range events {
		in := (*ev.Input).(map[string]any)
		k, _ := strconv.Atoi(fmt.Sprint(in["i"]))
		if i > 0 && k != last+1 {
			t.Errorf("event %d follows %d: a gap or disorder in the kept events", k, last)
		}
		last = k
		if _, ok := in["call"].(map[string]any)["prompt"]; ok || !slices.Equal(ev.Erased, []string{"/input/call/prompt"}) {
			t.Errorf("event %d: prompt not masked (erased %v)", k, ev.Erased)
		}
	}
	if last != n-1 {
		t.Errorf("newest kept event is %d, want %d", last, n-1)
	}
	wantLast := start.Add((n - 1) * 30 * time.Minute).Format("2006-01-02")
	if !strings.HasPrefix(files[len(files)-1], wantLast) {
		t.Errorf("files %v: the newest is not of %s", files, wantLast)
	}
	for _, f := range files {
		if !regexp.MustCompile(`^\d{4}-\d\d-\d\d(\.[1-9]\d*)?\.jsonl$`).MatchString(f) {
			t.Errorf("file name %q", f)
		}
	}
	ignore, err := os.ReadFile(filepath.Join(dir, ".gitignore"))
	if err != nil || !bytes.Contains(ignore, []byte("\n*\n")) {
		t.Errorf(".gitignore = %q, %v; want one ignoring everything", ignore, err)
	}
}

// Many processes appending at once: every line whole, none lost. Lines
// are larger than a pipe's atomic write, so interleaving would show.
func TestManyProcessesAppend(t *testing.T) {
	t.Parallel()
	if dir := os.Getenv("DECISIONLOG_TEST_APPEND_DIR"); dir != "" {
		l := Open(dir, Options{MaxBytes: 1 << 30})
		who := os.Getenv("DECISIONLOG_TEST_APPEND_WHO")
		for i := range 50 {
			ev := sampleEvent(t, map[string]any{"who": who, "i": i, "pad": strings.Repeat(who, 9000)}, map[string]any{"deny": []any{}})
			if err := l.Append(ev); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	dir := filepath.Join(t.TempDir(), "decisions")
	const procs = 8
	var wg sync.WaitGroup
	for p := range procs {
		wg.Go(func() {
			cmd := exec.Command(os.Args[0], "-test.run=^TestManyProcessesAppend$")
			cmd.Env = append(os.Environ(), "DECISIONLOG_TEST_APPEND_DIR="+dir, "DECISIONLOG_TEST_APPEND_WHO="+string(rune('a'+p)))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("process %d: %v\n%s", p, err, out)
			}
		})
	}
	wg.Wait()
	events, _ := readEvents(t, dir)
	if len(events) != procs*50 {
		t.Errorf("%d events, want %d", len(events), procs*50)
	}
	ids := map[string]bool{}
	for _, ev := range events {
		ids[ev.DecisionID] = true
	}
	if len(ids) != len(events) {
		t.Errorf("%d distinct decision ids for %d events", len(ids), len(events))
	}
}

func TestInstallationIDIsStable(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "state", "installation-id")
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			id, err := InstallationID(file)
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] || !isUUIDv4(id) {
			t.Fatalf("ids %v: not one UUID", ids)
		}
	}
	if again, err := InstallationID(file); err != nil || again != ids[0] {
		t.Errorf("again: %q, %v; want %q", again, err, ids[0])
	}
	os.WriteFile(file, []byte("not an id\n"), 0o600)
	if _, err := InstallationID(file); err == nil || !strings.Contains(err.Error(), "delete the file") {
		t.Errorf("a damaged id: err = %v, want one saying to delete it", err)
	}
}

// Document copies: masking the copy leaves the caller's value alone, and
// values other than plain maps and slices read as encoding/json writes them.
func TestDocumentIsACopy(t *testing.T) {
	t.Parallel()
	type facts struct {
		Name string `json:"name"`
	}
	in := map[string]any{"call": map[string]any{"prompt": "p"}, "list": []any{"a", "b"}, "tags": []string{"x"}, "f": facts{"n"}, "n": uint8(3)}
	ev := Event{Input: doc(t, in)}
	Mask(&ev, []string{"/input/call/prompt", "/input/list/0", "/input/tags/0", "/input/f/name"})
	if len(ev.Erased) != 4 {
		t.Errorf("erased %v, want all four", ev.Erased)
	}
	if in["call"].(map[string]any)["prompt"] != "p" || len(in["list"].([]any)) != 2 || len(in["tags"].([]string)) != 1 || in["f"].(facts).Name != "n" {
		t.Errorf("the caller's value changed: %v", in)
	}
	got, _ := json.Marshal(ev.Input)
	if string(got) != `{"call":{},"f":{},"list":["b"],"n":3,"tags":[]}` {
		t.Errorf("masked copy %s", got)
	}
}

func TestIsUUIDv4(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"0b5e7c1a-3f2d-4a8b-9c1d-2e3f4a5b6c7d":  true,
		"0b5e7c1a-3f2d-5a8b-9c1d-2e3f4a5b6c7d":  false, // version 5
		"0b5e7c1a-3f2d-4a8b-7c1d-2e3f4a5b6c7d":  false, // variant
		"0B5E7C1A-3F2D-4A8B-9C1D-2E3F4A5B6C7D":  false, // upper case
		"0b5e7c1a-3f2d-4a8b-9c1d-2e3f4a5b6c7":   false,
		"0b5e7c1a-3f2d-4a8b-9c1d-2e3f4a5b6c7dd": false,
		"0b5e7c1a33f2d-4a8b-9c1d-2e3f4a5b6c7d":  false,
		"0b5e7c1a-3f2d-4a8b-9c1d-2e3f4a5b6c7g":  false,
	} {
		if got := isUUIDv4(s); got != want {
			t.Errorf("isUUIDv4(%q) = %v, want %v", s, got, want)
		}
	}
}

// A log directory replaced by a link is not written through.
func TestAppendRefusesALinkedDirectory(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	elsewhere := t.TempDir()
	// A file pruning would remove, were the link followed.
	os.WriteFile(filepath.Join(elsewhere, "2020-01-01.jsonl"), []byte("{}\n"), 0o644)
	dir := filepath.Join(root, "decisions")
	if err := os.Symlink(elsewhere, dir); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	l := Open(dir, Options{MaxBytes: MinMaxBytes})
	err := l.Append(Event{DecisionID: "0b5e7c1a-3f2d-4a8b-9c1d-2e3f4a5b6c7d", Path: "des/gates/tool_use", Timestamp: time.Now()})
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Fatalf("Append through a linked directory: %v", err)
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 1 {
		t.Errorf("files written through the link: %v", ents)
	}
}

// A link at a parent of the log directory (.des) is refused too when the log
// is opened from the project root.
func TestOpenInRefusesALinkedParent(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(root, ".des")); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	l := OpenIn(root, ".des/decisions", Options{MaxBytes: MinMaxBytes})
	err := l.Append(Event{DecisionID: "0b5e7c1a-3f2d-4a8b-9c1d-2e3f4a5b6c7d", Path: "des/gates/tool_use", Timestamp: time.Now()})
	if err == nil || !strings.Contains(err.Error(), "remove it") {
		t.Errorf("Append through a linked parent: %v", err)
	}
	if ents, _ := os.ReadDir(elsewhere); len(ents) != 0 {
		t.Errorf("files written through the link: %v", ents)
	}
	// Without the link, the log starts as Open's does.
	os.Remove(filepath.Join(root, ".des"))
	if err := l.Append(Event{DecisionID: "0b5e7c1a-3f2d-4a8b-9c1d-2e3f4a5b6c7d", Path: "des/gates/tool_use", Timestamp: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if names, _ := filepath.Glob(filepath.Join(root, ".des/decisions/*.jsonl")); len(names) != 1 {
		t.Errorf("log files: %v", names)
	}
	if _, err := os.Stat(filepath.Join(root, ".des/decisions/.gitignore")); err != nil {
		t.Error(err)
	}
}

// A sandboxed command may write the log directory (a sandboxed git commit
// appends to it), so it can swap a log file for a link between des's look
// and its open, over and over: no event ever lands in the link's target (a
// line appended to ~/.bashrc runs the $(...) an agent put in a path).
func TestAppendNeverFollowsASwappedLink(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "bashrc")
	if err := os.WriteFile(outside, []byte("# mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "decisions")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	name := filepath.Join(dir, now.UTC().Format(dayLayout)+fileExt)
	link, plain := filepath.Join(dir, "link.tmp"), filepath.Join(dir, "plain.tmp")
	stop := testenv.Meanwhile(t, func() {
		os.WriteFile(plain, nil, 0o644)
		os.Rename(plain, name) // a regular file for the look
		if os.Symlink(outside, link) == nil {
			os.Rename(link, name) // a link for the open
		}
	})
	l := Open(dir, Options{MaxBytes: 1 << 30})
	deadline := time.Now().Add(testenv.Pick(200*time.Millisecond, time.Second))
	for i := 0; time.Now().Before(deadline); i++ {
		l.Append(Event{DecisionID: "0b5e7c1a-3f2d-4a8b-9c1d-2e3f4a5b6c7d", Path: "des/gates/tool_use", Timestamp: now})
		if b, _ := os.ReadFile(outside); string(b) != "# mine\n" {
			stop()
			t.Fatalf("after %d appends, an event was written through the link: %q", i+1, b)
		}
	}
	stop()
}

// A named pipe where today's file goes (a sandboxed command can make one)
// never blocks the event: opened for writing with no reader, it would wait
// forever, and the hook with it.
func TestAppendNeverWaitsOnAPipe(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "decisions")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := mkfifo(filepath.Join(dir, now.UTC().Format(dayLayout)+fileExt)); err != nil {
		t.Skip("no named pipes here:", err)
	}
	l := Open(dir, Options{MaxBytes: MinMaxBytes})
	done := make(chan error, 1)
	go func() {
		done <- l.Append(Event{DecisionID: "0b5e7c1a-3f2d-4a8b-9c1d-2e3f4a5b6c7d", Path: "des/gates/tool_use", Timestamp: now})
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") && !strings.Contains(err.Error(), "no such device") {
			t.Errorf("Append to a named pipe: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Append to a named pipe still waits after 5s")
	}
}

// The log's .gitignore is written when des makes the directory; a
// sandboxed command that removes the directory can race to put a link
// there first: des never writes through it (it overwrote the link's target,
// ~/.bashrc say, with "*", which runs the first file name of the shell's
// directory).
func TestEnsureDirNeverWritesThroughALink(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "bashrc")
	if err := os.WriteFile(outside, []byte("# mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "decisions")
	ignore := filepath.Join(dir, ".gitignore")
	defer testenv.Meanwhile(t, func() { os.Symlink(outside, ignore) })()
	now := time.Now()
	deadline := time.Now().Add(testenv.Pick(200*time.Millisecond, time.Second))
	for i := 0; time.Now().Before(deadline); i++ {
		os.RemoveAll(dir)
		Open(dir, Options{MaxBytes: MinMaxBytes}).Append(Event{DecisionID: "0b5e7c1a-3f2d-4a8b-9c1d-2e3f4a5b6c7d", Path: "des/gates/tool_use", Timestamp: now})
		if b, _ := os.ReadFile(outside); string(b) != "# mine\n" {
			t.Fatalf("after %d new directories, the link's target was written: %q", i+1, b)
		}
	}
}

// The log directory swapped for a link to another directory after
// Append's look: pruning never removes that directory's files.
func TestPruneNeverRemovesThroughASwappedLink(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	elsewhere := t.TempDir()
	big := make([]byte, 100<<10)
	for _, n := range []string{"2020-01-01.jsonl", "2020-01-02.jsonl"} {
		if err := os.WriteFile(filepath.Join(elsewhere, n), big, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(root, "decisions")
	real, link := filepath.Join(root, "real"), filepath.Join(root, "link")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	stop := testenv.Meanwhile(t, func() {
		if os.Rename(dir, real) == nil {
			os.Symlink(elsewhere, dir)
			os.Remove(dir)
			os.Rename(real, dir)
		}
	})
	defer func() {
		stop()
		os.Remove(dir) // the link, if it is there
		os.Rename(real, dir)
	}()
	now := time.Now()
	deadline := time.Now().Add(testenv.Pick(300*time.Millisecond, 3*time.Second))
	for i := 0; time.Now().Before(deadline); i++ {
		Open(dir, Options{MaxBytes: MinMaxBytes}).Append(Event{DecisionID: "0b5e7c1a-3f2d-4a8b-9c1d-2e3f4a5b6c7d", Path: "des/gates/tool_use", Timestamp: now})
		if ents, _ := os.ReadDir(elsewhere); len(ents) != 2 {
			t.Fatalf("after %d appends, files of the link's target were removed or added: %v", i+1, ents)
		}
	}
}
