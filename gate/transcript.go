package gate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/deterministic-exec/des/internal/fileio"
)

// Bounds on reading a subagent transcript. The first user line is the
// prompt, which the hook already accepts up to 8 MiB on stdin.
const (
	maxTranscriptLine  = 8 << 20
	maxTranscriptLines = 16 // lines looked at for the first user message
)

// errTranscriptNotReady is why a read is retried: the file is missing, empty
// or its first line is not complete yet (Claude Code may not have flushed it
// when SubagentStop arrives).
var errTranscriptNotReady = errors.New("not written yet")

// errTranscriptMissing is wrapped when there is no transcript file at all.
var errTranscriptMissing = errors.New("no such file")

// transcriptPrompt returns the prompt a subagent was started with: the
// message content of the transcript's first user line, a string or (in some
// versions) an array of content blocks whose text blocks are joined.
func transcriptPrompt(path string) (string, error) {
	f, _, err := fileio.OpenRegular(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%w: %w", errTranscriptNotReady, errTranscriptMissing)
	}
	if err != nil {
		return "", err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	for n := 1; n <= maxTranscriptLines; n++ {
		line, err := readLine(r)
		if errors.Is(err, io.EOF) {
			if n == 1 {
				return "", fmt.Errorf("%w: the file is empty or its first line is incomplete", errTranscriptNotReady)
			}
			return "", fmt.Errorf("no user message in its first %d lines", n-1)
		}
		if err != nil {
			return "", fmt.Errorf("line %d: %w", n, err)
		}
		var l struct {
			Type    string `json:"type"`
			Message *struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		}
		if err := json.Unmarshal(line, &l); err != nil {
			return "", fmt.Errorf("line %d is not JSON: %w", n, err)
		}
		if l.Message == nil || (l.Type != "user" && l.Message.Role != "user") {
			continue // a meta, progress or system line before the prompt
		}
		return contentText(l.Message.Content)
	}
	return "", fmt.Errorf("no user message in its first %d lines", maxTranscriptLines)
}

// readLine returns the next complete line without its newline, io.EOF when
// there is none (a last line without newline is still being written).
func readLine(r *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(buf)+len(chunk) > maxTranscriptLine {
			return nil, fmt.Errorf("longer than %d bytes", maxTranscriptLine)
		}
		buf = append(buf, chunk...)
		switch {
		case err == nil:
			return bytes.TrimRight(buf, "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return nil, io.EOF
		default:
			return nil, err
		}
	}
}

func contentText(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", errors.New("message.content is neither a string nor an array of content blocks")
	}
	var texts []string
	for _, b := range blocks {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, "\n"), nil
}

// readTranscriptPrompt reads the prompt, retrying while the file is not
// ready, for at most wait in all.
func readTranscriptPrompt(ctx context.Context, path string, wait time.Duration) (string, error) {
	const pause = 20 * time.Millisecond
	deadline := time.Now().Add(wait)
	for {
		prompt, err := transcriptPrompt(path)
		if !errors.Is(err, errTranscriptNotReady) || !time.Now().Add(pause).Before(deadline) {
			return prompt, err
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(pause):
		}
	}
}

// metaToolUseID reads the tool_use_id of the call that started the agent
// from the agent-<id>.meta.json file newer Claude Code versions write beside
// its transcript; "" when there is none, or when it is not a regular file
// of at most 1 MiB.
func metaToolUseID(transcript string) string {
	meta := strings.TrimSuffix(transcript, filepath.Ext(transcript)) + ".meta.json"
	data, err := fileio.ReadBounded(meta, 1<<20)
	if err != nil {
		return ""
	}
	var m struct {
		ToolUseID string `json:"toolUseId"`
	}
	if json.Unmarshal(data, &m) != nil || !safeID(m.ToolUseID) {
		return ""
	}
	return m.ToolUseID
}

// inside reports whether path, with links resolved, is inside one of dirs
// (also resolved). Empty dirs are skipped. Of a path that does not exist yet,
// the deepest existing ancestor is resolved.
func inside(path string, dirs ...string) bool {
	real := resolveExisting(path)
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if _, ok := within(resolveExisting(d), real); ok {
			return true
		}
	}
	return false
}

// resolveExisting resolves the links of the longest existing prefix of path
// and appends the rest as written.
func resolveExisting(path string) string {
	path = filepath.Clean(path)
	rest := ""
	for p := path; ; p = filepath.Dir(p) {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		if filepath.Dir(p) == p {
			return path
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
}

// ClaudeDirs returns the user's Claude directory, where Claude Code keeps
// transcripts: $CLAUDE_CONFIG_DIR, else ~/.claude ($HOME, else
// %USERPROFILE%); nil when the environment names no home.
func ClaudeDirs(lookup func(string) (string, bool)) []string {
	if d, ok := lookup("CLAUDE_CONFIG_DIR"); ok && d != "" {
		return []string{d}
	}
	for _, k := range []string{"HOME", "USERPROFILE"} {
		if h, ok := lookup(k); ok && h != "" {
			return []string{filepath.Join(h, ".claude")}
		}
	}
	return nil
}
