package datadoc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Decode parses exactly one JSON value as a data document: numbers kept as
// json.Number, so that nothing is rounded on its way to Rego or back to
// disk. A syntax error says where, as "line L, column C".
func Decode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	var se *json.SyntaxError
	switch {
	case err == nil:
		rest := bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n")
		if len(rest) > 0 {
			return nil, fmt.Errorf("%s: data after the JSON value", lineCol(data, len(data)-len(rest)))
		}
		return v, nil
	case errors.As(err, &se):
		// Offset counts the bytes read, the offending one included.
		return nil, fmt.Errorf("%s: %w", lineCol(data, int(se.Offset)-1), err)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return nil, fmt.Errorf("%s: unexpected end of JSON input", lineCol(data, len(data)))
	}
	return nil, err
}

// Position renders the position of data[i] as "line L, column C"
// (1-based; the column counts bytes), for parsers other than Decode that
// know only a byte offset. i is clamped to data.
func Position(data []byte, i int) string { return lineCol(data, i) }

// lineCol renders the position of data[i] as "line L, column C" (1-based;
// the column counts bytes).
func lineCol(data []byte, i int) string {
	i = max(0, min(i, len(data)))
	before := data[:i]
	line := bytes.Count(before, []byte("\n")) + 1
	col := i - bytes.LastIndexByte(before, '\n')
	return fmt.Sprintf("line %d, column %d", line, col)
}

// Kind names the JSON kind of a value Decode returned, for messages ("an
// array", "a number", ...).
func Kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}
