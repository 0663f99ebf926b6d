// Package modelserver is a scripted Anthropic Messages API on the loopback
// interface, for tests that drive the real Claude Code client tool call by
// tool call. The client sends its whole conversation with every request, so
// a script needs no state of its own: it looks at the request (which agent
// is asking, what the last tool result said, how many turns came before) and
// returns the next assistant turn. Every request is kept, so a test can
// assert on exactly what the model was told.
package modelserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// A Request is one POST /v1/messages, decoded.
type Request struct {
	Model    string          `json:"model"`
	System   json.RawMessage `json:"system"`
	Messages []Message       `json:"messages"`
	Tools    []Tool          `json:"tools"`
	Stream   bool            `json:"stream"`
	// Raw is the body as received.
	Raw []byte `json:"-"`
}

// A Message is one turn of the conversation the client sent.
type Message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// A Tool is one tool the client offers the model.
type Tool struct {
	Name string `json:"name"`
}

// A Block is one content block of a message.
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

// Blocks returns the message's content as blocks (a plain string becomes
// one text block).
func (m Message) Blocks() []Block {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []Block{{Type: "text", Text: s}}
	}
	var bs []Block
	_ = json.Unmarshal(m.Content, &bs)
	return bs
}

// Text returns the message's text: its text blocks and the text of its tool
// results, joined by newlines.
func (m Message) Text() string {
	var parts []string
	for _, b := range m.Blocks() {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "tool_result":
			parts = append(parts, b.ResultText())
		}
	}
	return strings.Join(parts, "\n")
}

// ResultText returns a tool_result block's content as text.
func (b Block) ResultText() string {
	var s string
	if json.Unmarshal(b.Content, &s) == nil {
		return s
	}
	var inner []Block
	_ = json.Unmarshal(b.Content, &inner)
	var parts []string
	for _, ib := range inner {
		if ib.Type == "text" {
			parts = append(parts, ib.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// SystemText returns the system prompt as text.
func (r *Request) SystemText() string {
	var s string
	if json.Unmarshal(r.System, &s) == nil {
		return s
	}
	var bs []Block
	_ = json.Unmarshal(r.System, &bs)
	var parts []string
	for _, b := range bs {
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "\n")
}

// FirstUserText returns the text of the conversation's first user message:
// the prompt a session or a subagent was started with.
func (r *Request) FirstUserText() string {
	for _, m := range r.Messages {
		if m.Role == "user" {
			return m.Text()
		}
	}
	return ""
}

// Turn returns how many assistant turns came before this request: 0 for
// the first request of a conversation.
func (r *Request) Turn() int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

// ToolResults returns the tool_result blocks of the last user message: what
// the client told the model about the tool calls of the previous turn.
func (r *Request) ToolResults() []Block {
	if len(r.Messages) == 0 {
		return nil
	}
	last := r.Messages[len(r.Messages)-1]
	if last.Role != "user" {
		return nil
	}
	var out []Block
	for _, b := range last.Blocks() {
		if b.Type == "tool_result" {
			out = append(out, b)
		}
	}
	return out
}

// OffersTool reports whether the request offers the model the named tool.
func (r *Request) OffersTool(name string) bool {
	for _, t := range r.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// A Reply is the assistant turn the server streams back: text, tool calls
// or both. A Reply with tool calls stops with "tool_use", one without with
// "end_turn".
type Reply struct {
	Text  string
	Tools []ToolCall
	// Later, when set, builds the reply when the request comes (from
	// what is on disk by then); Text and Tools are then ignored.
	Later func() Reply
}

// A ToolCall is one tool_use block.
type ToolCall struct {
	ID    string // generated when empty
	Name  string
	Input any
}

// Say is a Reply of text only.
func Say(text string) Reply { return Reply{Text: text} }

// Call is a Reply with one tool call.
func Call(name string, input any) Reply {
	return Reply{Tools: []ToolCall{{Name: name, Input: input}}}
}

// A Script chooses the reply to a request. ok false means the script has
// nothing to say to this request (an auxiliary request of the client's: a
// title, a summary); the server then answers with a short text.
type Script func(r *Request) (reply Reply, ok bool)

// Server is a running scripted model server.
type Server struct {
	*httptest.Server
	script Script

	mu       sync.Mutex
	requests []*Request
	ids      int
}

// Start starts a server on the loopback interface that answers with script,
// and stops it when the test ends.
func Start(t testing.TB, script Script) *Server {
	t.Helper()
	s := &Server{script: script}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Requests returns the message requests received so far.
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

// ToolResultFor returns the tool_result the client sent for the tool call
// with the given id, and whether one was sent.
func (s *Server) ToolResultFor(id string) (Block, bool) {
	for _, r := range s.Requests() {
		for _, m := range r.Messages {
			for _, b := range m.Blocks() {
				if b.Type == "tool_result" && b.ToolUseID == id {
					return b, true
				}
			}
		}
	}
	return Block{}, false
}

func (s *Server) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	path := req.URL.Path
	switch {
	case strings.HasSuffix(path, "/count_tokens"):
		writeJSON(w, map[string]any{"input_tokens": 100})
		return
	case strings.HasSuffix(path, "/v1/messages"):
	default:
		// Anything else the client asks (feature flags, account
		// checks) gets an empty object; the client copes with that.
		writeJSON(w, map[string]any{})
		return
	}
	r := &Request{Raw: body}
	if err := json.Unmarshal(body, r); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, r)
	s.mu.Unlock()
	reply, ok := s.script(r)
	if !ok {
		reply = Say("ok")
	}
	if reply.Later != nil {
		reply = reply.Later()
	}
	s.mu.Lock()
	for i := range reply.Tools {
		if reply.Tools[i].ID == "" {
			s.ids++
			reply.Tools[i].ID = fmt.Sprintf("toolu_des%06d", s.ids)
		}
	}
	s.ids++
	msgID := fmt.Sprintf("msg_des%06d", s.ids)
	s.mu.Unlock()
	if r.Stream {
		s.stream(w, r, msgID, reply)
		return
	}
	writeJSON(w, message(r, msgID, reply))
}

func stopReason(reply Reply) string {
	if len(reply.Tools) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

func message(r *Request, id string, reply Reply) map[string]any {
	var content []any
	if reply.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": reply.Text})
	}
	for _, tc := range reply.Tools {
		content = append(content, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": tc.Input})
	}
	if content == nil {
		content = []any{}
	}
	return map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": r.Model,
		"content": content, "stop_reason": stopReason(reply), "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 100, "output_tokens": 10},
	}
}

func (s *Server) stream(w http.ResponseWriter, r *Request, id string, reply Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	send := func(event string, data any) {
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": r.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 100, "output_tokens": 1},
	}})
	index := 0
	if reply.Text != "" {
		send("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "text", "text": ""}})
		send("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
			"delta": map[string]any{"type": "text_delta", "text": reply.Text}})
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for _, tc := range reply.Tools {
		input, _ := json.Marshal(tc.Input)
		send("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": map[string]any{}}})
		send("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stopReason(reply), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 10}})
	send("message_stop", map[string]any{"type": "message_stop"})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
