package modelserver

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// post sends one Messages request and returns the SSE events' data, in
// order, by event name.
func post(t *testing.T, s *Server, body string) (names []string, data []map[string]any) {
	t.Helper()
	resp, err := http.Post(s.URL+"/v1/messages", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			names = append(names, strings.TrimPrefix(line, "event: "))
		case strings.HasPrefix(line, "data: "):
			var m map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &m); err != nil {
				t.Fatalf("data %q: %v", line, err)
			}
			data = append(data, m)
		}
	}
	return names, data
}

func TestStreamsAToolCallThenText(t *testing.T) {
	s := Start(t, func(r *Request) (Reply, bool) {
		if r.Turn() == 0 {
			return Reply{Tools: []ToolCall{{ID: "toolu_1", Name: "Bash", Input: map[string]any{"command": "ls"}}}}, true
		}
		return Say("seen: " + r.ToolResults()[0].ResultText()), true
	})
	names, data := post(t, s, `{"model":"m","stream":true,"messages":[{"role":"user","content":"go"}]}`)
	want := []string{"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("events %v; want %v", names, want)
	}
	if b := data[1]["content_block"].(map[string]any); b["type"] != "tool_use" || b["name"] != "Bash" || b["id"] != "toolu_1" {
		t.Errorf("content_block_start %v", b)
	}
	if d := data[2]["delta"].(map[string]any); d["partial_json"] != `{"command":"ls"}` {
		t.Errorf("delta %v", d)
	}
	if d := data[4]["delta"].(map[string]any); d["stop_reason"] != "tool_use" {
		t.Errorf("message_delta %v", d)
	}

	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"go"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"a.txt"}]}]}]}`
	_, data = post(t, s, body)
	if d := data[2]["delta"].(map[string]any); d["text"] != "seen: a.txt" {
		t.Errorf("text delta %v", d)
	}
	if d := data[4]["delta"].(map[string]any); d["stop_reason"] != "end_turn" {
		t.Errorf("message_delta %v", d)
	}
	if got, ok := s.ToolResultFor("toolu_1"); !ok || got.ResultText() != "a.txt" {
		t.Errorf("ToolResultFor: %+v %v", got, ok)
	}
	if n := len(s.Requests()); n != 2 {
		t.Errorf("%d requests kept; want 2", n)
	}
}

func TestNonStreamingAndLater(t *testing.T) {
	calls := 0
	s := Start(t, func(r *Request) (Reply, bool) {
		return Reply{Later: func() Reply { calls++; return Say("late") }}, true
	})
	resp, err := http.Post(s.URL+"/v1/messages", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"x"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	content := m["content"].([]any)
	if calls != 1 || content[0].(map[string]any)["text"] != "late" || m["stop_reason"] != "end_turn" {
		t.Errorf("message %v, Later called %d times", m, calls)
	}
}
