package claudecode

import (
	"strings"
	"testing"
)

// A malformed event says where it breaks, for whoever reads the hook's log.
func TestDecodeEventErrorSaysWhere(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"{\"hook_event_name\":\n  \"Stop\",\n  \"tool_input\": {\"a\":}}": "malformed JSON event: line 3, column 22: invalid character '}'",
		`{"hook_event_name":"Stop"}  {}`:                                  "malformed JSON event: line 1, column 29: data after the event object",
		"{\"hook_event_name\":\"PreToolUse\"":                             "malformed JSON event: line 1, column 32: unexpected end of JSON input",
	} {
		_, _, err := decodeEvent([]byte(in))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("decodeEvent(%q) = %v, want an error starting %q", in, err, want)
		}
	}
}
