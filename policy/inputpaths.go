package policy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// InputPaths lists the parts of the input a gate's policies can read, as
// JSON pointers ("/input/step/document"), sorted: every reference to input
// in the rules of the gate's package and in the rules and functions they
// depend on, cut at its first part that is not a constant. A reference to
// input whole, or to input[x], is "/input". It is a static reading, so it
// errs towards reading more: a rule that iterates over input.call is taken to
// read all of it. Replaying a recorded decision uses it to tell whether a
// part erased from the record (a mask, the size bound) can change the
// outcome.
func (e *Engine) InputPaths(g Gate) ([]string, error) {
	if _, ok := e.prepared[g]; !ok {
		return nil, fmt.Errorf("%w %q (known: %v)", ErrUnknownGate, g, Gates())
	}
	c, err := e.compilerFor(g)
	if err != nil {
		return nil, err
	}
	comp := c.compiler
	seen := map[*ast.Rule]bool{}
	queue := comp.GetRulesWithPrefix(ast.MustParseRef("data." + g.Package()))
	paths := map[string]bool{}
	for len(queue) > 0 {
		r := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if seen[r] {
			continue
		}
		seen[r] = true
		ast.WalkRefs(r, func(ref ast.Ref) bool {
			if ref.HasPrefix(ast.InputRootRef) {
				paths[inputPointer(ref)] = true
			}
			return false
		})
		for dep := range comp.Graph.Dependencies(r) {
			if d, ok := dep.(*ast.Rule); ok && !seen[d] {
				queue = append(queue, d)
			}
		}
	}
	out := make([]string, 0, len(paths))
	for p := range paths {
		out = append(out, p)
	}
	slices.Sort(out)
	return out, nil
}

// pointerEscaper escapes a key as the decision log's masks do (URL
// escaping): a "/" in a key is %2F.
var pointerEscaper = strings.NewReplacer("%", "%25", "/", "%2F")

// inputPointer is the JSON pointer of ref's constant prefix: input.a.b[x].c
// is /input/a/b.
func inputPointer(ref ast.Ref) string {
	var b strings.Builder
	b.WriteString("/input")
	for _, t := range ref[1:] {
		var seg string
		switch v := t.Value.(type) {
		case ast.String:
			seg = string(v)
		case ast.Number:
			seg = v.String()
		case ast.Boolean:
			seg = strconv.FormatBool(bool(v))
		default:
			return b.String()
		}
		b.WriteByte('/')
		b.WriteString(pointerEscaper.Replace(seg))
	}
	return b.String()
}
