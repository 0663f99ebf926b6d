package policy

import (
	"errors"
	"fmt"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/loader"
)

// ErrUnknownGate is returned by Eval for a gate outside [Gates].
var ErrUnknownGate = errors.New("unknown gate")

// ErrMalformedDecision is wrapped by Eval when a gate's deny, warn or
// exception set holds a value of the wrong shape (for instance a deny that is
// a string, or one without a "code").
var ErrMalformedDecision = errors.New("malformed gate decision")

// Error is one problem in a policy source, at a location when one is known.
type Error struct {
	File    string // path of the source file, as given or inside its bundle
	Row     int    // 1-based; 0 when unknown
	Col     int    // 1-based; 0 when unknown
	Code    string // OPA's error code, e.g. "rego_parse_error"
	Message string
}

func (e *Error) Error() string {
	switch {
	case e.File != "" && e.Row > 0:
		return fmt.Sprintf("%s:%d:%d: %s: %s", e.File, e.Row, e.Col, e.Code, e.Message)
	case e.File != "":
		return fmt.Sprintf("%s: %s", e.File, e.Message)
	default:
		return e.Message
	}
}

// Errors lists every problem found while loading or compiling policies.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// toErrors converts what OPA's loader and compiler return into Errors, keeping
// locations. Errors that carry no location keep their text.
func toErrors(err error) Errors {
	var out Errors
	var add func(error)
	add = func(err error) {
		var astErrs ast.Errors
		var astErr *ast.Error
		var loadErrs loader.Errors
		var multi interface{ Unwrap() []error }
		switch {
		case errors.As(err, &loadErrs):
			for _, e := range loadErrs {
				add(e)
			}
		case errors.As(err, &astErrs):
			for _, e := range astErrs {
				add(e)
			}
		case errors.As(err, &astErr):
			e := &Error{Code: astErr.Code, Message: astErr.Message}
			if loc := astErr.Location; loc != nil {
				e.File, e.Row, e.Col = loc.File, loc.Row, loc.Col
			}
			out = append(out, e)
		case errors.As(err, &multi):
			for _, e := range multi.Unwrap() {
				add(e)
			}
		default:
			out = append(out, &Error{Message: err.Error()})
		}
	}
	add(err)
	return out
}
